"""Issue 25, item 4: no Unix sockets out of the sandbox (the seccomp filter), under real bubblewrap.

Servers are Unix sockets bound by this test process in the project (tmp_path), in a /var/tmp folder
and in a home folder outside the project (an agent socket), plus an abstract one. Each check is
made on the host afterwards: a listening socket with no pending connection, a datagram socket
with nothing queued. Sandboxed commands are scripts written into the project and run by the
real Bash tool.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

from codeloop.config.sandbox import sandbox_settings
from codeloop.sandbox import bwrap, seccomp
from codeloop.sandbox.runtime import Sandbox, Use
from codeloop.tools.base import ToolError

pytestmark = needs_bwrap

ATTACK = r'''
import socket, sys
path = sys.argv[1]
def attempt(name, f):
    try:
        f(); print(name, "CONNECTED")
    except OSError as e:
        print(name, "refused", e.errno)
def stream():
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path)
def dgram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", path)
def pair_connect():                      # a socketpair end is already connected: EISCONN
    a, b = socket.socketpair(); a.connect(path)
def pair_dgram():                        # a datagram pair could still sendto() a path
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b"x", path)
for name, f in [("stream", stream), ("dgram", dgram), ("pair_connect", pair_connect), ("pair_dgram", pair_dgram)]:
    attempt(name, f)
'''


def text(r) -> str:
    return r.content if not isinstance(r, Exception) else str(r)


class Listener:
    """A stream and a datagram Unix socket at `base`.sock / `base`.dgram, checked without waiting."""

    def __init__(self, base: str):
        self.paths = (base + ".sock", base + ".dgram")
        self.stream = socket.socket(socket.AF_UNIX)
        self.stream.bind(self.paths[0])
        self.stream.listen(8)
        self.stream.setblocking(False)
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(self.paths[1])
        self.dgram.setblocking(False)

    def reached(self) -> bool:
        try:
            self.stream.accept()[0].close()
            return True
        except BlockingIOError:
            pass
        try:
            self.dgram.recv(10)
            return True
        except BlockingIOError:
            return False

    def close(self) -> None:
        for s in (self.stream, self.dgram):
            s.close()
        for p in self.paths:
            if os.path.exists(p):
                os.unlink(p)


@pytest.fixture
def attack(tmp_path):
    (tmp_path / "attack.py").write_text(ATTACK)
    return tmp_path / "attack.py"


@pytest.fixture
def places(tmp_path, outside):
    """Listeners in the project, in /var/tmp and in an agent-socket folder of a home outside it."""
    home = outside / "home"
    (home / ".agent").mkdir(parents=True)
    made = [Listener(str(tmp_path / "proj")), Listener(str(outside / "vt")), Listener(str(home / ".agent" / "a"))]
    yield made
    for x in made:
        x.close()


def _clients(attack: Path, listener: Listener) -> list[str]:
    out = [f"python3 {attack} {p}" for p in listener.paths]
    if shutil.which("nc"):
        out.append(f"echo hi | nc -U -w 2 {listener.paths[0]}")
    if shutil.which("socat"):
        out.append(f"echo hi | socat - UNIX-CONNECT:{listener.paths[0]}")
    return out


@pytest.mark.parametrize("block", [{}, {"network": {"allowedDomains": ["localhost"]}}], ids=["no-net", "proxy"])
def test_host_unix_sockets_are_unreachable(tmp_path, outside, attack, places, block):
    sandbox = Sandbox(sandbox_settings({"sandbox": {"enabled": True, **block}}), [str(tmp_path)],
                      home=str(outside / "home"), protected_dirs=[str(tmp_path / ".cfg")])
    for listener in places:
        results = run_bash(sandbox, tmp_path, *_clients(attack, listener))
        for r in results[:2]:
            # EPERM from the filter; a socketpair end is already connected (the kernel's errno)
            for attempt in ("stream refused 1\n", "dgram refused 1\n", "pair_connect refused ",
                            "pair_dgram refused 1\n"):
                assert attempt in text(r) + "\n", text(r)
        for r in results[2:]:
            assert r.is_error, text(r)
        assert not listener.reached(), listener.paths
    # the same script on the host reaches them: the refusals above are the sandbox's doing
    r = run_bash(None, tmp_path, f"python3 {attack} {places[0].paths[0]}")[0]
    assert "stream CONNECTED" in text(r) and places[0].reached()


def test_socketpair_and_pipes_still_work(tmp_path):
    code = ("import socket; a, b = socket.socketpair(); a.sendall(b'PAIR-OK'); print(b.recv(9).decode()); "
            "c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); c.send(b'SEQ-OK'); "
            "print(d.recv(9).decode()); import subprocess; "
            "print(subprocess.run(['echo', 'CHILD-OK'], capture_output=True, text=True).stdout.strip())")
    cmds = [f'python3 -c "{code}"', "echo PIPE-OK | cat"]
    if shutil.which("node"):
        cmds.append("node -e \"require('child_process').exec('echo NODE-OK', (e, o) => process.stdout.write(o))\"")
    results = run_bash(make_sandbox(tmp_path), tmp_path, *cmds)
    assert all(not r.is_error for r in results), [text(r) for r in results]
    assert "PAIR-OK" in text(results[0]) and "SEQ-OK" in text(results[0]) and "CHILD-OK" in text(results[0])
    assert "PIPE-OK" in text(results[1])
    if len(results) > 2:
        assert "NODE-OK" in text(results[2])


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "15")
        self.end_headers()
        self.wfile.write(b"HELLO-FROM-HOST")

    def log_message(self, *args):
        pass


def test_the_proxy_works_while_the_command_is_filtered(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        code = (f"import urllib.request as u, socket; print(u.urlopen('http://localhost:{srv.server_address[1]}/', "
                "timeout=10).read().decode()); socket.socket(socket.AF_UNIX)")
        [r] = run_bash(make_sandbox(tmp_path, network={"allowedDomains": ["localhost"]}), tmp_path,
                       f'python3 -c "{code}"')
        assert "HELLO-FROM-HOST" in text(r) and "Operation not permitted" in text(r) and r.is_error
    finally:
        srv.shutdown()


STATUS = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
    except OSError:
        continue
    attach = "attach-refused" if libc.ptrace(16, pid, 0, 0) != 0 else "ATTACHED"   # PTRACE_ATTACH
    print(pid, fields["Name"].strip(), "seccomp", fields["Seccomp"].strip(), attach)
'''


def test_nothing_in_the_sandbox_runs_unfiltered_the_proxy_forwarder_included(tmp_path):
    # bwrap's init (pid 1), the forwarder and the command: no unfiltered process to take over
    # (by /proc/<pid>/mem or ptrace) and have it open a Unix socket on the command's behalf
    (tmp_path / "status.py").write_text(STATUS)
    [r] = run_bash(make_sandbox(tmp_path, network={"allowedDomains": ["localhost"]}), tmp_path,
                   "python3 status.py")
    lines = text(r).splitlines()
    assert len(lines) >= 4 and lines[0].startswith("1 bwrap"), lines      # init, shell, forwarder, python
    assert all(" seccomp 2 " in line for line in lines), lines
    assert all(line.endswith("attach-refused") for line in lines), lines


def test_io_uring_and_x32_are_closed(tmp_path):
    code = ("import ctypes; l = ctypes.CDLL(None, use_errno=True); "
            "print('uring', l.syscall(425, 8, None), ctypes.get_errno(), flush=True); "
            "print('negative', l.syscall(-1), ctypes.get_errno(), flush=True); "
            "l.syscall(0x40000000 + 39); print('X32-' + 'SURVIVED')")
    [r] = run_bash(make_sandbox(tmp_path), tmp_path, f'python3 -c "{code}"')
    assert "uring -1 38" in text(r)                          # ENOSYS: programs fall back
    assert "negative -1 38" in text(r)                       # syscall(-1) is no x32 call: ENOSYS
    if platform.machine() == "x86_64":
        assert "X32-SURVIVED" not in text(r) and "Exit code 159" in text(r)   # killed by SIGSYS


I386 = r'''
import ctypes, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
# one page below 4 GiB (MAP_32BIT): code, then socketcall's argument block
page = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)
def int80(eax, ebx, ecx, edx):
    # push rbx; mov eax, ebx, ecx, edx; int 0x80; pop rbx; ret  (returns eax sign-extended)
    code = (b"\x53" + b"\xb8" + struct.pack("<i", eax) + b"\xbb" + struct.pack("<I", ebx)
            + b"\xb9" + struct.pack("<I", ecx) + b"\xba" + struct.pack("<I", edx)
            + b"\xcd\x80" + b"\x48\x63\xc0" + b"\x5b\xc3")
    ctypes.memmove(page, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_long)(page)()
args = page + 2048
for name, family in (("inet", 2), ("unix", 1)):
    print(name, "socket", int80(359, family, 1, 0))
    ctypes.memmove(args, struct.pack("<III", family, 1, 0), 12)
    print(name, "socketcall", int80(102, 1, args, 0))
'''


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the i386 entry point exists on x86_64 only")
def test_the_i386_entry_point_is_filtered_too(tmp_path):
    (tmp_path / "i386.py").write_text(I386)
    host = run_bash(None, tmp_path, "python3 i386.py")[0]
    if "inet socket" not in text(host) or "inet socket -" in text(host):
        pytest.skip(f"no i386 emulation here: {text(host)[:200]}")
    [r] = run_bash(make_sandbox(tmp_path), tmp_path, "python3 i386.py")
    out = text(r)
    assert "inet socket -" not in out, out                   # the i386 entry point itself works
    # -EPERM: socket(AF_UNIX), and socketcall's socket() whatever the family (its arguments are
    # in memory the filter cannot read; glibc calls socket directly since Linux 4.3)
    assert "unix socket -1\n" in out + "\n" and "unix socketcall -1\n" in out + "\n", out
    assert "inet socketcall -1\n" in out + "\n", out


def test_allow_all_unix_sockets_restores_access_and_abstract_sockets_stay_per_namespace(tmp_path, attack):
    listener = Listener(str(tmp_path / "ok"))
    name = f"codeloop-abs-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + name)
    abstract.listen(1)
    abstract.setblocking(False)
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\\\0{name}')"
    try:
        sandbox = make_sandbox(tmp_path, network={"allowAllUnixSockets": True})
        r, a = run_bash(sandbox, tmp_path, f"python3 {attack} {listener.paths[0]}", f'python3 -c "{code}"')
        assert "stream CONNECTED" in text(r) and listener.reached()
        # --unshare-net alone keeps the host's abstract sockets out of reach (no filter here)
        assert "Connection refused" in text(a) and a.is_error
        with pytest.raises(BlockingIOError):
            abstract.accept()
    finally:
        listener.close()
        abstract.close()


def test_allow_unix_sockets_paths_are_reported_and_not_applied(tmp_path, attack):
    listener = Listener(str(tmp_path / "agent"))
    try:
        block = {"network": {"allowUnixSockets": [listener.paths[0]]}}
        settings = sandbox_settings({"sandbox": {"enabled": True, **block}})
        assert settings.allow_unix_sockets == (listener.paths[0],) and not settings.allow_all_unix_sockets
        assert any("allowUnixSockets" in e and "allowAllUnixSockets" in e for e in settings.errors)
        [r] = run_bash(make_sandbox(tmp_path, **block), tmp_path, f"python3 {attack} {listener.paths[0]}")
        assert "CONNECTED" not in text(r) and not listener.reached()
    finally:
        listener.close()


@pytest.mark.parametrize("bad, safe", [("yes", False), (1, False)])
def test_a_malformed_allow_all_falls_back_to_the_filter(bad, safe):
    s = sandbox_settings({"sandbox": {"network": {"allowAllUnixSockets": bad}}})
    assert s.allow_all_unix_sockets is safe and any("allowAllUnixSockets" in e for e in s.errors)


@pytest.fixture
def fresh_probes(monkeypatch):
    monkeypatch.setattr(bwrap, "_probes", {})
    monkeypatch.setattr(seccomp, "_probes", {})


def test_a_filter_that_cannot_load_refuses_with_one_line_or_falls_back(tmp_path, monkeypatch, fresh_probes):
    # a bwrap that works but for --seccomp (a kernel without seccomp filters, say)
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --seccomp ] && "
                    f"{{ echo 'bwrap: prctl(PR_SET_SECCOMP): Invalid argument' >&2; exit 1; }}; done\n"
                    f"exec {shutil.which('bwrap')} \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CODELOOP_BWRAP", str(fake))
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "touch f")
    assert isinstance(res, ToolError) and "\n" not in str(res) and not (tmp_path / "f").exists()
    assert "seccomp filter cannot load" in str(res) and "failIfUnavailable" in str(res)
    fallback = make_sandbox(tmp_path, failIfUnavailable=False)
    use, why = fallback.use_for("touch f")
    assert use is Use.UNSANDBOXED and "seccomp" in why
    # allowAllUnixSockets needs no filter: the same bwrap sandboxes
    assert make_sandbox(tmp_path, network={"allowAllUnixSockets": True}).use_for("touch f")[0] is Use.SANDBOXED


def test_an_unsupported_architecture_refuses(tmp_path, monkeypatch, fresh_probes):
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    use, why = make_sandbox(tmp_path).use_for("touch f")
    assert use is Use.REFUSED and "riscv64" in why and "\n" not in why


@pytest.mark.parametrize("block", [{}, {"network": {"allowedDomains": ["localhost"]}}], ids=["no-net", "proxy"])
def test_a_program_the_kernel_rejects_fails_closed(tmp_path, monkeypatch, block):
    sandbox = make_sandbox(tmp_path, **block)
    assert sandbox.use_for("touch f")[0] is Use.SANDBOXED        # probed with the good program
    monkeypatch.setattr(seccomp, "_program", b"\x00" * 8)         # a program the kernel rejects
    [r] = run_bash(sandbox, tmp_path, "touch f")
    assert r.is_error and not (tmp_path / "f").exists(), text(r)


def test_an_untrusted_project_cannot_switch_the_filter_off():
    from codeloop.config.settings import untrusted_view

    ignored: list[str] = []
    view = untrusted_view({"sandbox": {"enabled": True, "network": {"allowAllUnixSockets": True,
                                                                    "allowUnixSockets": ["/x.sock"]}}},
                          "project settings", ignored)
    assert not sandbox_settings(view).allow_all_unix_sockets and sandbox_settings(view).enabled
    assert any("sandbox.network" in i for i in ignored)


def test_each_calls_proxy_channel_ends_with_the_call(tmp_path, monkeypatch):
    from codeloop.sandbox.proxy import DomainProxy

    seen: list[tuple[threading.Thread, socket.socket]] = []
    original = DomainProxy._hand_out

    def recording(self, ctl):
        seen.append((threading.current_thread(), ctl))
        original(self, ctl)
    monkeypatch.setattr(DomainProxy, "_hand_out", recording)
    sandbox = make_sandbox(tmp_path, network={"allowedDomains": ["localhost"]})
    results = run_bash(sandbox, tmp_path, "true", "true", "true")
    assert all(not r.is_error for r in results) and len(seen) == 3
    for thread, ctl in seen:
        thread.join(timeout=30)
        assert not thread.is_alive() and ctl.fileno() == -1      # ended, and closed its end
