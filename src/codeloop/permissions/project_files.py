"""Reading the prompt files a project brings, without leaving the project.

Owns how codeloop reads the files a checkout supplies as prompt text — CLAUDE.md, CLAUDE.local.md,
.claude/CLAUDE.md (the working folder's, its ancestors' and nested ones), output styles, skills,
agent definitions and custom commands. A cloned repository must not choose what else codeloop
reads for it: a `CLAUDE.md` that is a symbolic link to `~/.ssh/id_rsa` or `/proc/self/environ`
would otherwise go to the model. So `ProjectFiles.read_text`:

- resolves the path and skips it unless the realpath lies inside the project (a link that stays
  inside is fine) and outside /proc, /dev and /sys;
- opens *that* realpath with no symlink followed at any component (`open_no_symlinks`, as the
  file tools do): a link swapped in after the check makes the open fail instead of reaching it;
- reads only what the descriptor's fstat says is a regular file with one link (a hard link may
  be a file from anywhere on the device), opened non-blocking and read up to a bound, so a FIFO,
  a device or a huge file can neither hang the session nor fill its memory.

The project is the git work tree holding the working folder (never the home folder or `/`, so a
dotfiles repository in `~` does not make all of `~` one project), else the working folder. A file
of an ancestor above it (`../CLAUDE.md`) may point only within that ancestor's own folder.

User-level files (`~/.claude/CLAUDE.md`, `~/.codeloop/…`) are the user's own: `read_user_text`
follows their links, but is bounded and regular-only too. `read_unlinked` re-reads a file the
model already read (compaction) only if no link leads there now. Every skipped file gives one warning
line, said once per session: the owner takes them with `drain()` and shows them as it shows other
start-up and context warnings.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import threading
from pathlib import Path

from codeloop.permissions.paths import open_no_symlinks

MAX_FILE_BYTES = 1 << 20   # a prompt file is read up to 1 MiB; the rest is cut, with a warning
SYSTEM_TREES = ("/proc", "/dev", "/sys")
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))
# errno values an open gives when a component turned into a symlink (FreeBSD says EMLINK)
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


class Skip(Exception):
    """A file that is not read, and why (one line)."""


def within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def project_root(cwd: Path | str) -> str:
    """The project a working folder belongs to: its git work tree below `~`, else the folder itself."""
    start = os.path.realpath(os.fspath(cwd))
    stops = {os.path.realpath(os.path.expanduser("~")), os.sep}
    folder = start
    while folder not in stops:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return start


def _decode(data: bytes, errors: str, cut: bool) -> str:
    if not cut:
        return data.decode("utf-8", errors)
    # cut at the bound: an incomplete last character is dropped, not an error
    return codecs.getincrementaldecoder("utf-8")(errors).decode(data, final=False)


def _read_fd(fd: int, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes of the open file, and whether there was more."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
        except BlockingIOError:
            break   # not a regular file after all (fstat said it was): what is there is all there is
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:limit], len(data) > limit


def _check_regular(fd: int, *, single_link: bool) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Skip("it is not a regular file (a directory, device, FIFO or socket)")
    if single_link and st.st_nlink > 1:
        raise Skip(f"it has {st.st_nlink} hard links, so it may be a file from outside the project")


def open_inside(path: str, boundary: str) -> int:
    """A read descriptor for `path` if it resolves inside `boundary` (a realpath); Skip otherwise.

    FileNotFoundError when the file is not there (no warning: nothing was refused)."""
    real = os.path.realpath(path)
    if any(within(real, tree) for tree in SYSTEM_TREES):
        raise Skip(f"it resolves to {real}, a system path")
    if not within(real, boundary):
        raise Skip(f"it resolves to {real}, outside the project ({boundary})")
    try:
        fd = open_no_symlinks(real, _READ_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno in _LINK_ERRNOS:
            raise Skip("it changed while being opened (a folder on its path is now a symbolic link)") from None
        if e.errno == errno.ENXIO:
            raise Skip("it is not a regular file (a device, FIFO or socket)") from None
        raise Skip(f"cannot open it ({e.strerror or e})") from None
    try:
        _check_regular(fd, single_link=True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a regular file, links followed; None for anything else (a FIFO, a
    device, a folder, a missing file). Opened non-blocking, so it never waits on a writer."""
    try:
        fd = os.open(os.fspath(path), _READ_FLAGS)
    except (OSError, ValueError):   # ValueError: a NUL in a path taken from a file's text
        return None
    try:
        _check_regular(fd, single_link=False)
        return _read_fd(fd, limit)[0]
    except (Skip, OSError):
        return None
    finally:
        os.close(fd)


def read_unlinked(path: Path | str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a regular, single-link file reached without any symbolic link (the
    path as written is its realpath), opened so that a link swapped in meanwhile is refused; None
    for anything else. For re-reading a file the model already read through the permission checks."""
    try:
        plain = os.path.abspath(os.fspath(path))
        real = os.path.realpath(plain)
    except ValueError:   # a NUL in a path the model wrote
        return None
    if real != plain or any(within(real, tree) for tree in SYSTEM_TREES):
        return None
    try:
        fd = open_no_symlinks(real, _READ_FLAGS)
    except OSError:
        return None
    try:
        _check_regular(fd, single_link=True)
        return _read_fd(fd, limit)[0]
    except (Skip, OSError):
        return None
    finally:
        os.close(fd)


class ProjectFiles:
    """The session's reader of project prompt files, with the warnings it owes the user."""

    def __init__(self, cwd: Path | str, *, limit: int = MAX_FILE_BYTES) -> None:
        self.cwd = os.path.realpath(os.fspath(cwd))
        self.root = project_root(self.cwd)
        self.limit = limit
        self._said: set[str] = set()
        self._pending: list[str] = []
        self._lock = threading.Lock()   # nested memory reads on the loop, discovery may run in a thread

    # -- warnings ----------------------------------------------------------------------------------
    def warn(self, line: str) -> None:
        with self._lock:
            if line not in self._said:
                self._said.add(line)
                self._pending.append(line)

    def drain(self) -> list[str]:
        """The warnings not yet taken, each given once per session."""
        with self._lock:
            out, self._pending = self._pending, []
        return out

    # -- project files -----------------------------------------------------------------------------
    def boundary(self, directory: Path | str | None = None) -> str:
        """Where a project file of `directory` (default: the working folder) may resolve: the
        project, or for an ancestor above the project, that ancestor's own folder."""
        if directory is None:
            return self.root
        folder = os.path.realpath(os.fspath(directory))
        return folder if within(self.root, folder) else self.root

    def inside(self, path: Path | str, directory: Path | str | None = None) -> bool:
        """Whether `path` resolves inside the project (and outside the system trees)."""
        real = os.path.realpath(os.fspath(path))
        return within(real, self.boundary(directory)) and not any(within(real, t) for t in SYSTEM_TREES)

    def project_dir(self, folder: Path | str, what: str) -> bool:
        """Whether a project folder (`.claude/commands`, …) may be listed: it exists and does not
        lead out of the project (a warning says so when it does)."""
        if not os.path.isdir(folder):
            return False
        if self.inside(folder):
            return True
        self.warn(f"skipped {what} {folder}: it resolves to {os.path.realpath(folder)}, outside the project "
                  f"({self.root})")
        return False

    def read_text(self, path: Path | str, what: str, *, directory: Path | str | None = None,
                  errors: str = "replace", limit: int | None = None, warn_cut: bool = True) -> str | None:
        """The text of a project file, or None when it is absent or skipped (skips are warned).

        UnicodeDecodeError with `errors="strict"`, for callers that report bad encodings themselves."""
        path = os.path.abspath(os.fspath(path))
        try:
            fd = open_inside(path, self.boundary(directory))
        except FileNotFoundError:
            return None
        except Skip as why:
            self.warn(f"skipped {what} {path}: {why}")
            return None
        return self._finish(fd, path, what, errors, limit, warn_cut)

    # -- the user's own files ----------------------------------------------------------------------
    def read_user_text(self, path: Path | str, what: str, *, errors: str = "replace",
                       limit: int | None = None) -> str | None:
        """The text of one of the user's own files, links followed; bounded and regular-only."""
        path = os.fspath(path)
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.ENOTDIR, errno.ELOOP):
                return None
            self.warn(f"skipped {what} {path}: cannot open it ({e.strerror or e})")
            return None
        try:
            _check_regular(fd, single_link=False)
        except Skip as why:
            os.close(fd)
            self.warn(f"skipped {what} {path}: {why}")
            return None
        return self._finish(fd, path, what, errors, limit, True)

    def _finish(self, fd: int, path: str, what: str, errors: str, limit: int | None,
                warn_cut: bool) -> str | None:
        bound = self.limit if limit is None else limit
        try:
            data, cut = _read_fd(fd, bound)
        except OSError as e:
            self.warn(f"skipped {what} {path}: cannot read it ({e.strerror or e})")
            return None
        finally:
            os.close(fd)
        if cut and warn_cut:
            self.warn(f"read only the first {bound:,} bytes of {what} {path}: it is larger")
        return _decode(data, errors, cut)
