"""The seccomp filter that keeps sandboxed commands away from Unix sockets.

Owns `program` (the classic-BPF filter, as the raw bytes bubblewrap's `--seccomp FD` reads;
bwrap loads it before anything in the sandbox starts) and `probe` (whether it loads here at all).

`--unshare-net` hides the host's network and its abstract Unix sockets (they live in the network
namespace), but not path sockets: anything bound in the project, `/var/tmp` or `~` (an agent
socket) is reachable by `connect()`. seccomp cannot read the address `connect()` is given, so,
like Claude Code's sandbox-runtime, the filter refuses *creating* Unix sockets: `socket(AF_UNIX)`
fails with EPERM. `socketpair(AF_UNIX)` stays allowed for stream and seqpacket pairs (libuv and
most tools use them for child stdio); a datagram pair is refused because `sendto()`/`connect()`
on it can still name a path. Also refused: io_uring (it creates sockets without the `socket`
syscall; ENOSYS so programs fall back), attaching to another process with ptrace or reaching its
memory or descriptors (nothing in the sandbox runs unfiltered today; this keeps it that way should
one ever be added), and the ABIs a filter
for one architecture would miss: x32 and unknown architectures kill the process; i386 and arm
(compat) are filtered with their own syscall numbers, `socketcall`'s socket and socketpair calls
refused outright (their arguments live in memory the filter cannot read).
"""

from __future__ import annotations

import os
import struct
import subprocess
from dataclasses import dataclass

# classic BPF opcodes
_LD = 0x20           # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15          # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35          # BPF_JMP | BPF_JGE | BPF_K
_AND = 0x54          # BPF_ALU | BPF_AND | BPF_K
_RET = 0x06          # BPF_RET | BPF_K
# seccomp_data offsets (little-endian: an argument's low 32 bits come first)
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
_ALLOW = 0x7FFF0000
_KILL = 0x80000000   # SECCOMP_RET_KILL_PROCESS
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_AF_UNIX = 1
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF
_PTRACE_ATTACH, _PTRACE_SEIZE = 16, 0x4206
_SYS_SOCKET, _SYS_SOCKETPAIR = 1, 8       # socketcall() sub-calls


@dataclass(frozen=True)
class _Abi:
    """One architecture's audit id and the syscall numbers the filter looks at."""
    arch: int
    socket: int
    socketpair: int
    socketcall: int | None
    ptrace: int
    denied: tuple[int, ...]       # process_vm_readv, process_vm_writev, pidfd_getfd
    io_uring_setup: int = 425
    x32: bool = False             # x86_64: syscall numbers from 0x40000000 are the x32 ABI


_ABIS = (
    _Abi(0xC000003E, 41, 53, None, 101, (310, 311, 438), x32=True),      # x86_64
    _Abi(0x40000003, 359, 360, 102, 26, (347, 348, 438)),                 # i386
    _Abi(0xC00000B7, 198, 199, None, 117, (270, 271, 438)),               # aarch64
    _Abi(0x40000028, 281, 288, 102, 26, (376, 377, 438)),                 # arm (compat)
)
SUPPORTED_MACHINES = ("x86_64", "amd64", "aarch64", "arm64")


def _abi_block(i: int, abi: _Abi) -> list[tuple]:
    p = f"a{i}"
    out: list[tuple] = [(f"{p}:",), (_LD, 0, 0, _NR)]
    if abi.x32:
        # a negative number (syscall(-1)) is no x32 call: the kernel answers ENOSYS, so does this
        out += [(_JGE, "enosys", 0, 0x80000000), (_JGE, "kill", 0, 0x40000000)]
    out += [(_JEQ, f"{p}sock", 0, abi.socket), (_JEQ, f"{p}pair", 0, abi.socketpair),
            (_JEQ, f"{p}trace", 0, abi.ptrace), (_JEQ, "enosys", 0, abi.io_uring_setup)]
    if abi.socketcall is not None:
        out.append((_JEQ, f"{p}call", 0, abi.socketcall))
    out += [(_JEQ, "eperm", 0, nr) for nr in abi.denied]
    out += [(_RET, 0, 0, _ALLOW),
            (f"{p}sock:",), (_LD, 0, 0, _ARG0), (_JEQ, "eperm", "allow", _AF_UNIX),
            (f"{p}pair:",), (_LD, 0, 0, _ARG0), (_JEQ, 0, "allow", _AF_UNIX),
            (_LD, 0, 0, _ARG1), (_AND, 0, 0, _SOCK_TYPE_MASK),
            (_JEQ, "allow", 0, _SOCK_STREAM), (_JEQ, "allow", "eperm", _SOCK_SEQPACKET),
            (f"{p}trace:",), (_LD, 0, 0, _ARG0), (_JEQ, "eperm", 0, _PTRACE_ATTACH),
            (_JEQ, "eperm", "allow", _PTRACE_SEIZE)]
    if abi.socketcall is not None:
        out += [(f"{p}call:",), (_LD, 0, 0, _ARG0), (_JEQ, "eperm", 0, _SYS_SOCKET),
                (_JEQ, "eperm", "allow", _SYS_SOCKETPAIR)]
    return out


def _assemble(items: list[tuple]) -> bytes:
    labels: dict[str, int] = {}
    code: list[tuple] = []
    for it in items:
        if len(it) == 1:
            labels[it[0][:-1]] = len(code)
        else:
            code.append(it)
    out = bytearray()
    for pc, (op, jt, jf, k) in enumerate(code):
        jt = labels[jt] - pc - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - pc - 1 if isinstance(jf, str) else jf
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("seccomp program too long for a classic-BPF jump")
        out += struct.pack("<HBBI", op, jt, jf, k)
    return bytes(out)


_program: bytes | None = None


def program() -> bytes:
    """The filter as an array of `struct sock_filter` (what `bwrap --seccomp FD` reads)."""
    global _program
    if _program is None:
        items: list[tuple] = [(_LD, 0, 0, _ARCH)]
        items += [(_JEQ, f"a{i}", 0, abi.arch) for i, abi in enumerate(_ABIS)]
        items.append((_RET, 0, 0, _KILL))
        for i, abi in enumerate(_ABIS):
            items += _abi_block(i, abi)
        items += [("allow:",), (_RET, 0, 0, _ALLOW), ("eperm:",), (_RET, 0, 0, _ERRNO | _EPERM),
                  ("enosys:",), (_RET, 0, 0, _ERRNO | _ENOSYS), ("kill:",), (_RET, 0, 0, _KILL)]
        _program = _assemble(items)
    return _program


def program_fd() -> int:
    """A pipe's read end holding the program, for `--seccomp FD` (bwrap reads it to the end)."""
    data = program()
    r, w = os.pipe()
    try:
        os.write(w, data)           # a few hundred bytes: far below a pipe's capacity
    finally:
        os.close(w)
    return r


_probes: dict[str, str | None] = {}


def probe(bwrap: str) -> str | None:
    """None when bwrap loads the filter here (cached per bwrap path), else a one-line reason."""
    if bwrap in _probes:
        return _probes[bwrap]
    import platform

    machine = platform.machine().lower()
    if machine not in SUPPORTED_MACHINES:
        err: str | None = f"the Unix-socket seccomp filter has no program for this architecture ({machine})"
    else:
        fd = program_fd()
        try:
            done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                   "--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--die-with-parent",
                                   "--seccomp", str(fd), "--", "/bin/true"],
                                  capture_output=True, text=True, timeout=10, pass_fds=(fd,))
            err = None if done.returncode == 0 else (done.stderr.strip().splitlines()
                                                     or [f"exit status {done.returncode}"])[-1]
        except (OSError, subprocess.TimeoutExpired) as exc:
            err = str(exc)
        finally:
            os.close(fd)
        if err is not None:
            err = f"the Unix-socket seccomp filter cannot load ({err})"
    _probes[bwrap] = err
    return err
