"""The bubblewrap command line for a `Layout`, and whether bwrap can start here at all.

Owns `bwrap_argv` and `probe`. The sandbox: `/` read-only; a private `/tmp`; fresh `/dev` and
`/proc`; the writable roots bound read-write; pinned folders and protected paths bound on top
(protected ones read-only, missing ones over an empty placeholder so nothing can be created
there); Read-deny paths covered by an empty mode-000 file or folder; no network (a loopback
bridge to the filtering proxy, over an inherited descriptor, when domains are allowed); new
PID and IPC namespaces; every capability dropped (a root shell with CAP_SYS_ADMIN could
otherwise unmount the protections); the Unix-socket seccomp filter (`seccomp.py`); killed
with its parent.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from codeloop.sandbox.layout import Kind, Layout

BWRAP_ENV = "CODELOOP_BWRAP"        # path to bwrap; tests point it somewhere else
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"


@dataclass(frozen=True)
class Probe:
    """Whether bwrap was found and can start a sandbox here."""
    path: str | None
    error: str | None                 # None: bwrap starts a sandbox here


_probes: dict[str, Probe] = {}


def bwrap_path() -> str | None:
    env = os.environ.get(BWRAP_ENV)
    if env is not None:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    from codeloop.shellpath import find_program

    return find_program("bwrap")   # never a bwrap planted in the project (an empty PATH entry)


def probe() -> Probe:
    """Start one empty sandbox (cached per bwrap path) to learn whether bwrap works here."""
    path = bwrap_path()
    key = path or ""
    if key in _probes:
        return _probes[key]
    if path is None:
        result = Probe(None, f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
    else:
        try:
            done = subprocess.run([path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                   "--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--die-with-parent",
                                   "--", "/bin/true"], capture_output=True, text=True, timeout=10)
            err = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit status "
                                                                                       f"{done.returncode}"])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:
            err = str(exc)
        result = Probe(path, None if err is None else
                       f"bubblewrap cannot start a sandbox here ({err}); enable unprivileged user namespaces "
                       f"(sysctl kernel.unprivileged_userns_clone=1) or run where bwrap works")
    _probes[key] = result
    return result


def bwrap_argv(bwrap: str, layout: Layout, *, cwd: str, blank_file: str, blank_dir: str, empty_dir: str,
               keep_writable: list[str], seccomp_fd: int | None = None, empty_file: str = "/dev/null",
               block_fd: int | None = None) -> list[str]:
    """Everything before `--` (the caller appends the command); `seccomp_fd` holds the filter
    bwrap loads just before it execs the command, `block_fd` a pipe bwrap waits on, once the
    sandbox is set up, before it runs the command (the caller passes both descriptors on)."""
    a = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-net",
         "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    # host daemons listen on Unix sockets under /run (a path-based socket needs no network device)
    for run in ("/run", "/var/run"):
        if os.path.isdir(run) and not os.path.islink(run):
            a += ["--tmpfs", run]
    for root in layout.roots:
        a += ["--bind", root, root]
    for pin in sorted(layout.pins, key=lambda x: x.count("/")):    # parents first
        a += ["--bind", pin, pin]
    for p in layout.protected:
        if p.exists:
            a += ["--ro-bind", p.path, p.path]
        else:
            # an empty readable file, not /dev/null: a device node under a nodev mount is unreadable,
            # and git stops at an unreadable ~/.gitconfig where a missing or empty one is fine
            a += ["--ro-bind", empty_dir if p.kind is Kind.DIR else empty_file, p.path]
    for path, kind in layout.masked:
        a += ["--ro-bind", blank_dir if kind is Kind.DIR else blank_file, path]
    for path in keep_writable:
        a += ["--bind", path, path]
    if seccomp_fd is not None:
        a += ["--seccomp", str(seccomp_fd)]
    if block_fd is not None:
        a += ["--block-fd", str(block_fd)]
    a += ["--setenv", "TMPDIR", "/tmp", "--chdir", cwd]
    return a
