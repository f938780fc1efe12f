"""Placeholder mount points that outlive their process: recorded, and removed by the next one.

bubblewrap needs a mount point for a protected path that does not exist (`.mcp.json`,
`.claude/`, `.codeloop/`): an empty file or folder it creates in the project, which
`runtime.py` removes when the call ends. A process killed mid-call (SIGKILL, a crash, an event
loop closed under a background task) never gets there, and empty placeholders stayed in the
checkout. So each process keeps a journal of the placeholders it created, in a private folder
under the temporary directory; `sweep` (at a process's first sandboxed call) removes those of
dead processes, and an exit handler removes the process's own. Only a still-empty file or
folder is ever removed.
"""

from __future__ import annotations

import os
import stat
import tempfile

_mine: set[str] = set()
_state = {"swept": False, "atexit": False}
_checked: list[str] = []


def _folder() -> str | None:
    """The journal folder: created 0700, used only when it is ours and a real folder."""
    if _checked:
        return _checked[0]
    path = os.path.join(tempfile.gettempdir(), f"codeloop-placeholders-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    _checked.append(path)
    return path


def _write() -> None:
    folder = _folder()
    if folder is None:
        return
    mine = os.path.join(folder, f"{os.getpid()}.txt")
    try:
        if not _mine:
            os.unlink(mine)
            return
        tmp = mine + ".tmp"
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write("".join(p + "\n" for p in sorted(_mine)))
        os.replace(tmp, mine)
    except OSError:
        pass


def remove_placeholder(path: str) -> None:
    """Remove the empty file or folder bwrap made as a mount point (only if still empty)."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(path)
        elif stat.S_ISREG(st.st_mode) and st.st_size == 0:
            os.unlink(path)
    except OSError:
        pass


def add(paths: list[str]) -> None:
    """Record placeholders this process is about to have bwrap create."""
    if not paths:
        return
    if not _state["atexit"]:
        import atexit
        atexit.register(_at_exit)
        _state["atexit"] = True
    _mine.update(paths)
    _write()


def discard(paths: list[str]) -> None:
    """Forget placeholders this process removed."""
    if _mine & set(paths):
        _mine.difference_update(paths)
        _write()


def _at_exit() -> None:
    for path in list(_mine):
        remove_placeholder(path)
    _mine.clear()
    _write()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep() -> None:
    """Remove the placeholders of processes that died mid-call (once per process)."""
    if _state["swept"]:
        return
    _state["swept"] = True
    folder = _folder()
    if folder is None:
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name.removesuffix(".txt")
        if not name.endswith(".txt") or not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        journal = os.path.join(folder, name)
        try:
            with open(journal, encoding="utf-8", errors="surrogateescape") as fh:
                paths = [line.rstrip("\n") for line in fh if line.strip()]
            for path in paths:
                if os.path.isabs(path):
                    remove_placeholder(path)
            os.unlink(journal)
        except OSError:
            continue
