"""`Sandbox`: the one object the permission policy and the Bash tool share.

Owns the per-command choice (`use_for`: sandboxed, unsandboxed, or refused because the sandbox
is enabled but cannot start) and `prepare`, which builds the bwrap command line for one call and
undoes its side effects afterwards (placeholder mount points for protected paths that did not
exist, `leftovers.py`; configuration planted in subfolders, `planted.py`, reported in
`Prepared.notes`). The policy and the tool ask the same object, so a command auto-allowed *because* it is
sandboxed is the command that then runs sandboxed.

Unix sockets: unless `sandbox.network.allowAllUnixSockets` is true, every call carries the
seccomp filter of `seccomp.py`; where it cannot load, the sandbox counts as unavailable (refused,
or unsandboxed with prompts when `failIfUnavailable` is false), like a bwrap that cannot start.

No fast path: with the sandbox on, every command runs inside it, read-only ones too (`env`,
`cat ~/.ssh/id_rsa` and `tail -f x &` are read-only, and only the sandbox hides secrets and ends
what a command leaves behind). Cost per call: `bench/bench_sandbox.py`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from codeloop.config.sandbox import SandboxSettings

if TYPE_CHECKING:
    from codeloop.sandbox.layout import Kind

# Host sockets that hand out more power than the sandbox has (a path-based Unix socket is
# reachable without a network device): hidden when present.
_DAEMON_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                   "/run/podman/podman.sock", "/run/user/0/podman/podman.sock")


# Where credentials live, under the user's home: hidden from every sandboxed command (as a Read
# deny rule would hide them) unless `sandbox.filesystem.allowRead` names them. codeloop's and
# Claude Code's own folders (other projects' transcripts, the trust store, the install id) are
# the `protected_dirs`, hidden the same way.
CREDENTIAL_PATHS = (".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker/config.json", ".netrc", ".npmrc",
                    ".pypirc", ".gnupg", ".git-credentials", ".claude.json", ".claude")


class Use(str, Enum):
    SANDBOXED = "sandboxed"
    UNSANDBOXED = "unsandboxed"
    REFUSED = "refused"


@dataclass
class Prepared:
    """The argv prefix and environment that run a command in the sandbox."""
    argv: list[str]                      # prefix: the caller appends its command
    env: dict[str, str] = field(default_factory=dict)
    pass_fds: tuple[int, ...] = ()       # descriptors the argv names (seccomp program, proxy channel)
    # filled when the call ends: what the sandbox undid (planted configuration), for the model
    notes: list[str] = field(default_factory=list)
    # gated calls only: call once the process started (raises LayoutError: kill it, refuse the call)
    release: Callable[[], None] | None = None


# Placeholder mount points in use, by path (several calls may run at once): the last user
# removes what a call created, never while another sandbox still relies on it.
_placeholders: dict[str, int] = {}
_created: set[str] = set()
_blanks: dict[str, str] = {}


def _blank_paths() -> dict[str, str]:
    """An empty mode-000 file and folder (masks), an empty 0555 folder and 0444 file (placeholders)."""
    if not _blanks:
        base = tempfile.mkdtemp(prefix="codeloop-sandbox-")
        f = os.path.join(base, "masked")
        with open(f, "w"):
            pass
        os.chmod(f, 0)
        d, e = os.path.join(base, "masked-dir"), os.path.join(base, "empty")
        os.mkdir(d, 0)
        os.chmod(d, 0)
        os.mkdir(e, 0o555)
        ef = os.path.join(base, "empty-file")
        with open(ef, "w"):
            pass
        os.chmod(ef, 0o444)
        _blanks.update(file=f, dir=d, empty=e, empty_file=ef)
    return _blanks


@dataclass
class Sandbox:
    """The sandbox for shell commands: its settings, roots and protected paths."""
    settings: SandboxSettings
    roots: list[str]                                   # project dir + additional directories
    home: str = field(default_factory=lambda: os.path.expanduser("~"))
    protected_dirs: list[str] = field(default_factory=list)   # config dirs, trust store
    # (specifier, origin) of every Read deny rule, read when a call is prepared
    read_deny: Callable[[], list[tuple[str, str]]] = list
    _proxy: object | None = None

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def _excluded(self, command: str) -> bool:
        from codeloop.permissions.bash import split_command, unwrap
        from codeloop.permissions.rules import bash_pattern_matches

        pats = self.settings.excluded_commands
        if not pats:
            return False
        for part in split_command(command).parts:
            text = " ".join(unwrap(part.argv).argv)
            if text and any(bash_pattern_matches(p, text) for p in pats):
                return True
        return False

    def use_for(self, command: str, *, disable: bool = False) -> tuple[Use, str]:
        """How this command runs, and a one-line reason when it is not sandboxed. `disable`: the
        call asked to run outside the sandbox (`dangerouslyDisableSandbox`)."""
        if not self.settings.enabled:
            return Use.UNSANDBOXED, "the sandbox is off"
        if disable:
            if not self.settings.allow_unsandboxed:
                return Use.REFUSED, ("Bash refused: dangerouslyDisableSandbox is not allowed here "
                                     "(sandbox.allowUnsandboxedCommands is false); run the command in the sandbox")
            return Use.UNSANDBOXED, "it runs outside the sandbox (dangerouslyDisableSandbox)"
        if self._excluded(command):
            return Use.UNSANDBOXED, "excluded from the sandbox by sandbox.excludedCommands"
        # No fast path around it for "read-only" commands: `env`, `cat ~/.ssh/id_rsa` or `tail -f x &`
        # are read-only too, and only the sandbox hides secrets and ends what a command leaves behind.
        from codeloop.sandbox.bwrap import probe

        p = probe()
        error = p.error if p.error is not None or p.path is None else self._filter_error(p.path)
        if error is None:
            return Use.SANDBOXED, ""
        if self.settings.fail_if_unavailable:
            return Use.REFUSED, (f"Bash refused: the sandbox is enabled but {error}; or set "
                                 f"sandbox.failIfUnavailable to false to run commands unsandboxed with prompts")
        return Use.UNSANDBOXED, f"the sandbox is unavailable ({error}); running unsandboxed"

    def _filter_error(self, bwrap: str) -> str | None:
        """Why the Unix-socket filter cannot load here (None: it loads, or it is switched off)."""
        if self.settings.allow_all_unix_sockets:
            return None
        from codeloop.sandbox.seccomp import probe as seccomp_probe
        return seccomp_probe(bwrap)

    # -- one call ---------------------------------------------------------------------------
    def _masks(self, roots: list[str]) -> list[tuple[str, Kind]]:
        from codeloop.permissions.paths import anchor_spec, deny_matcher
        from codeloop.sandbox.layout import Kind, find_masks

        cwd = self.roots[0] if self.roots else os.getcwd()
        pairs = [*self.read_deny(), *((s, "cli") for s in self.settings.deny_read)]
        masks = find_masks([(*anchor_spec(s, o, cwd), deny_matcher(s, o, cwd)) for s, o in pairs], roots)
        for sock in _DAEMON_SOCKETS:
            try:
                if stat.S_ISSOCK(os.stat(sock).st_mode):
                    masks.append((sock, Kind.FILE))
            except OSError:
                pass
        return masks + self._credential_masks(roots)

    def _credential_masks(self, roots: list[str]) -> list[tuple[str, Kind]]:
        """The credential locations and codeloop's own folders that exist, but for those the user
        allows and those holding a writable root (the project itself stays usable)."""
        from codeloop.sandbox.layout import Kind

        allowed = {os.path.realpath(p) for p in self._extra_paths(self.settings.allow_read)}
        out: list[tuple[str, Kind]] = []
        for path in [*(os.path.join(self.home, p) for p in CREDENTIAL_PATHS), *self.protected_dirs]:
            if not os.path.lexists(path):
                continue     # nothing there, through links or not: nothing to mask (and no realpath to pay)
            for p in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
                if allowed and (p in allowed or os.path.realpath(p) in allowed):
                    continue
                if any(r == p or r.startswith(p.rstrip(os.sep) + os.sep) for r in roots):
                    continue
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                out.append((p, Kind.DIR if stat.S_ISDIR(st.st_mode) else Kind.FILE))
        return out

    def _extra_paths(self, items: tuple[str, ...]) -> list[str]:
        cwd = self.roots[0] if self.roots else os.getcwd()
        out = []
        for p in items:
            p = p[1:] if p.startswith("//") else p
            out.append(os.path.normpath(os.path.join(cwd, os.path.expanduser(p))))
        return out

    @contextmanager
    def prepare(self, cwd: str, keep_writable: list[str], *, gated: bool = False) -> Iterator[Prepared]:
        """The bwrap prefix for one call; raises LayoutError (a clear message) when unsafe.

        `gated`: the command waits inside its finished sandbox (`--block-fd`) until the caller,
        having started the process, calls `Prepared.release()`; the snapshot for planted
        configuration is taken then, while bubblewrap sets the sandbox up, rather than before the
        start (nothing of the command runs before the snapshot either way). Not gated: the
        snapshot is taken here, before anything starts."""
        from codeloop.sandbox import seccomp
        from codeloop.sandbox.bwrap import bwrap_argv, probe
        from codeloop.sandbox.layout import LayoutError, plan_layout

        p = probe()
        if p.error is not None or p.path is None:
            raise LayoutError(f"the sandbox is enabled but {p.error}")
        if (error := self._filter_error(p.path)) is not None:
            raise LayoutError(f"the sandbox is enabled but {error}")
        use_filter = not self.settings.allow_all_unix_sockets
        roots = [*self.roots, *self._extra_paths(self.settings.allow_write)]
        layout = plan_layout(roots, home=self.home, global_protected=self.protected_dirs,
                             deny_write=self._extra_paths(self.settings.deny_write),
                             masks=self._masks([os.path.realpath(r) for r in roots]))
        blanks = _blank_paths()
        net = self._network()
        # bwrap loads the filter before anything in the sandbox starts (its own init included)
        fd = seccomp.program_fd() if use_filter else None
        gate = os.pipe() if gated else None
        argv = bwrap_argv(p.path, layout, cwd=os.path.realpath(cwd), blank_file=blanks["file"],
                          blank_dir=blanks["dir"], empty_dir=blanks["empty"], empty_file=blanks["empty_file"],
                          keep_writable=[os.path.realpath(k) for k in keep_writable], seccomp_fd=fd,
                          block_fd=gate[0] if gate else None)
        env: dict[str, str] = {}
        fds = [] if fd is None else [fd]
        if gate is not None:
            fds.append(gate[0])
        channel = None
        if net is not None:
            import sys

            from codeloop.sandbox.proxy import BRIDGE_CODE, BRIDGE_PORT, proxy_env
            channel = net.channel()
            fds.append(channel[1].fileno())
            # the sandbox's /tmp is private: an interpreter living there is not visible inside
            python = sys.executable if not sys.executable.startswith("/tmp/") else "python3"
            argv += ["--", python, "-I", "-c", BRIDGE_CODE, str(channel[1].fileno()), str(BRIDGE_PORT)]
            env = proxy_env()
        else:
            argv += ["--"]
        # also paths another call's placeholder occupies right now: removing it while this
        # sandbox relies on it would detach this sandbox's mount too
        placeholders = [x.path for x in layout.protected if not x.exists or x.path in _created]
        from codeloop.sandbox import leftovers
        from codeloop.sandbox.planted import TooBig, Watch

        leftovers.sweep()
        fresh = [path for path in placeholders if not os.path.lexists(path)]
        leftovers.add([p for p in fresh if p not in _created])
        for path in placeholders:
            _placeholders[path] = _placeholders.get(path, 0) + 1
        _created.update(fresh)
        watches: list[Watch] = []

        def begin() -> None:
            try:
                # mounted read-only: skipped; placeholders watched too, in case another process
                # removed one mid-call (which detaches the mount on it)
                watches.append(Watch(layout.roots, frozenset(x.path for x in layout.protected) - set(placeholders),
                                     frozenset(placeholders)))
            except TooBig as e:
                raise LayoutError(f"too many files under {e} to watch for configuration a command could plant "
                                  f"(git hooks, .claude/, .mcp.json in subfolders); disable the sandbox here") from None

        def release() -> None:
            assert gate is not None
            if watches:
                return
            begin()        # refused: the write end stays shut until the caller has killed the process
            try:
                os.write(gate[1], b"\0")   # now the command may run
            except OSError:
                pass                       # bwrap ended before running anything: its status says why
            finally:
                os.close(gate[1])

        prepared = Prepared(argv, env, tuple(fds), release=release if gated else None)
        try:
            if not gated:
                begin()
            yield prepared
        finally:
            if fd is not None:
                os.close(fd)
            if gate is not None:
                os.close(gate[0])
                if not watches:
                    os.close(gate[1])     # never released: nothing was started, or it was killed
            if channel is not None:   # the forwarder's requests end with the call
                import socket

                channel[1].close()
                try:
                    channel[0].shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            try:
                if watches:
                    prepared.notes += watches[0].finish()
            finally:
                for path in layout.absent:
                    _remove_planted(path)
                removed = []
                for path in placeholders:
                    _placeholders[path] -= 1
                    if _placeholders[path] == 0:
                        del _placeholders[path]
                        if path in _created:
                            _created.discard(path)
                            leftovers.remove_placeholder(path)
                            removed.append(path)
                leftovers.discard(removed)

    def _network(self):
        if not self.settings.allowed_domains:
            return None
        if self._proxy is None:
            from codeloop.sandbox.proxy import DomainProxy
            self._proxy = DomainProxy(self.settings.allowed_domains)
        return self._proxy


def _remove_planted(path: str) -> None:
    """Remove what a call created at a path that must stay absent (`.git/commondir`)."""
    import shutil

    try:
        st = os.lstat(path)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def session_sandbox(merged_settings: dict, *, force_enable: bool, roots: list[str], protected_dirs: list[str],
                    read_deny: Callable[[], list[tuple[str, str]]]) -> tuple[Sandbox | None, list[str]]:
    """The session's Sandbox from the merged settings (None when it is off), and settings warnings."""
    from codeloop.config.sandbox import sandbox_settings

    settings = sandbox_settings(merged_settings, force_enable=force_enable)
    warnings = [f"settings: {e}" for e in settings.errors]
    if not settings.enabled:
        return None, warnings
    return Sandbox(settings, list(roots), protected_dirs=list(protected_dirs), read_deny=read_deny), warnings
