"""The compiled code of the modules codeloop's CLI loads, kept in one file between runs.

Each `import` of a source module walks `sys.path` (a stat of every folder before the one that
holds it), builds a spec, finds and opens the `.pyc`, checks its header against the source and
reads it: some 200 modules on the way to the first request, 5% of start-up's instructions
(454.7 -> 429.8 M with this cache; the unmarshalling and running of the code remain). `install`
puts a finder just before Python's own path finder that serves the modules an earlier run
loaded from one file: an index (read whole) and each module's code (read when imported). It
changes nothing else: a module is served only when

- its source file has the size and modification time it had when its code was stored (the
  `.pyc` check, at nanoseconds instead of seconds);
- for a top-level module, no folder before its own on `sys.path` now holds anything of that
  name (the folders' listings are re-read when their modification time changes, as Python's
  finder does); a submodule, only when its package's path is the one it was found on;
- the interpreter, its optimisation level and `sys.path` (the working folder aside) are the
  ones the file was written for (each such set has its own file);

otherwise the import goes the usual way. Modules found in the working folder (or through a
relative `sys.path` entry) are never stored: they belong to one project. The folder is
`config.paths.import_cache_root()`. The modules come out as the usual way makes them
(`SourceFileLoader`, `__file__`, `__cached__`, `__path__`), so sources, resources and tracebacks
are found as before. `save` adds, when the run ends, the modules loaded the usual way whose
`.pyc` matches their source (the code Python itself just used); nothing is compiled for it.
The file is code codeloop runs: it is read only when it is a regular file owned by this user
that no one else can write, and written the same way; a missing, foreign, stale or corrupt
file costs only the usual imports.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader, all_suffixes

TYPE_CHECKING = False
if TYPE_CHECKING:   # typing itself is one of the modules served
    from collections.abc import Iterable, Iterator
    from typing import Any

_CODE = type((lambda: None).__code__)   # types.CodeType, without importing types
_MAGIC = b"clImpC1\n"       # the file's first 8 bytes; then the index's length (8 bytes), index, code
MAX_BYTES = 48 << 20          # the stored code of every module the runs of one environment loaded
MAX_FILES = 8                 # files (environments) kept in the cache folder
FROM_PYC = -1                 # a new entry's offset while it is saved: its code is read from its .pyc
_state: dict[str, Any] = {"finder": None, "folder": None}


def _owned(st: os.stat_result) -> bool:
    import stat

    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def open_own_file(path: str) -> int | None:
    """A read-only descriptor of the file if it is a regular file owned by this user that no one
    else can write (code codeloop runs must not be plantable by another account); else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if _owned(os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_own_file(path: str) -> bytes | None:
    """The bytes of `path` when `open_own_file` accepts it; None otherwise."""
    fd = open_own_file(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read()
    except OSError:
        return None


def write_own_file(path: str, data: bytes | Iterable[bytes]) -> None:
    """Replace `path` atomically with data (bytes, or chunks written as they come), readable and
    writable by this user only, in a folder only this user may enter when it is made. A cache:
    not fsynced."""
    from pathlib import Path

    from codeloop.fsutil import atomic_write   # at the end of a run: not on start-up's way

    atomic_write(Path(path), data, mode=0o600, dir_mode=0o700, durable=False)


def read_table(path: str, version: Any) -> dict[Any, Any]:
    """The table a code cache stored at `path` with `version` (read as `read_own_file` allows);
    empty when the file is missing, foreign, corrupt or of another version."""
    try:
        raw = read_own_file(path)
        data = marshal.loads(raw) if raw is not None else None
    except (ValueError, EOFError, TypeError):
        return {}
    if isinstance(data, dict) and data.get("version") == version and isinstance(data.get("code"), dict):
        return data["code"]
    return {}


def write_table(path: str, version: Any, table: dict[Any, Any]) -> None:
    """Store a code cache's table for `read_table`; an unwritable cache only costs its work next time."""
    try:
        write_own_file(path, marshal.dumps({"version": version, "code": table}))
    except (OSError, ValueError):
        pass


def save_new(state: dict[str, Any], version: Any) -> None:
    """A code cache's save: `state["known"]` written to `state["path"]` if this run added entries
    (`state["new"]`), once."""
    path, new = state["path"], state["new"]
    if path is None or not new:
        return
    state["new"] = {}
    write_table(str(path), version, state["known"])


def _key() -> tuple[Any, ...]:
    cwd = os.getcwd()
    return (sys.version, sys.implementation.cache_tag, sys.flags.optimize,
            tuple("" if p in ("", cwd) else p for p in sys.path))


def _file_for(folder: str, key: tuple[Any, ...]) -> str:
    digest = 0xcbf29ce484222325   # FNV-1a: a stable name without loading hashlib's OpenSSL
    for byte in repr(key).encode():
        digest = ((digest ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(folder, f"import-code.{sys.implementation.cache_tag}.{digest:016x}")


class _Loader(SourceFileLoader):
    """The usual loader of a source module, whose code comes from the file while it is valid."""

    def __init__(self, fullname: str, path: str, finder: _Finder, entry: tuple[Any, ...]) -> None:
        super().__init__(fullname, path)
        self._finder, self._entry = finder, entry

    def get_code(self, fullname: str) -> Any:
        code = self._finder.code(self._entry)
        if code is None:   # stored code that does not read: the source's, and the entry replaced at save
            self._finder.stale.add(fullname)
            return super().get_code(fullname)
        return code


class _Finder:
    """The stored modules, found before `PathFinder` looks (a meta-path finder)."""

    def __init__(self, path: str, fd: int | None, index: dict[str, tuple[Any, ...]], blob_at: int) -> None:
        self.path, self.fd, self.index, self.blob_at = path, fd, index, blob_at
        self.sys_path = list(sys.path)   # what the stored places mean (part of the file's key)
        self.listings: dict[str, tuple[int, frozenset[str] | None]] = {}
        self.stale: set[str] = set()
        self.suffixes = tuple(all_suffixes())

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        entry = self.index.get(name)
        if entry is None or sys.path != self.sys_path:
            return None
        try:
            return self._spec(name, path, entry)
        except Exception:  # noqa: BLE001 — whatever is odd here, the usual import decides
            return None

    def _spec(self, name: str, path: Any, entry: tuple[Any, ...]) -> ModuleSpec | None:
        origin, cached, mtime_ns, size, is_pkg, where = entry[:6]
        if path is None:   # top level: the folder it was in, with nothing of its name before it
            if type(where) is not int or where >= len(sys.path) or self._shadowed(name, where):
                return None
        elif not (type(where) is str and type(path) is list and path == [where]):
            return None    # a submodule: only under the package path it was found on
        try:
            st = os.stat(origin)
        except OSError:
            st = None
        if st is None or st.st_mtime_ns != mtime_ns or st.st_size != size:
            self.stale.add(name)
            return None
        spec = ModuleSpec(name, _Loader(name, origin, self, entry), origin=origin, is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        spec.cached = cached
        spec.has_location = True
        return spec

    def _shadowed(self, name: str, where: int) -> bool:
        """Whether a folder before the module's own on sys.path holds anything of its name."""
        names = (name, *(name + s for s in self.suffixes))
        for folder in sys.path[:where]:
            listing = self._listing(folder or ".")
            if listing is None or not listing.isdisjoint(names):
                return True
        return False

    def _listing(self, folder: str) -> frozenset[str] | None:
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return frozenset()   # no such folder: Python's finder finds nothing there either
        seen = self.listings.get(folder)
        if seen is not None and seen[0] == mtime:
            return seen[1]
        try:
            listing: frozenset[str] | None = frozenset(os.listdir(folder))
        except OSError:
            listing = None       # not a folder (a zip file): cannot tell, the usual import decides
        self.listings[folder] = (mtime, listing)
        return listing

    def stored(self, entry: tuple[Any, ...]) -> bytes | None:
        if self.fd is None:
            return None
        try:
            offset, length = entry[6], entry[7]
            data = os.pread(self.fd, length, self.blob_at + offset)
        except (OSError, IndexError, TypeError, ValueError, OverflowError):   # (an entry that is no entry)
            return None
        return data if len(data) == length else None

    def code(self, entry: tuple[Any, ...]) -> Any:
        data = self.stored(entry)
        try:
            code = marshal.loads(data) if data is not None else None
        except (ValueError, EOFError, TypeError):
            return None
        if type(code) is not _CODE:   # nothing stored, or a damaged file's: the source is compiled
            return None
        _imp._fix_co_filename(code, entry[0])   # type: ignore[attr-defined]  # as the usual loader does
        return code


def install(folder: str) -> None:
    """Serve stored modules from now on in this process (once; never fails the run)."""
    if _state["finder"] is not None:
        return
    try:
        key = _key()
        path = _file_for(folder, key)
        index: dict[str, tuple[Any, ...]] = {}
        blob_at = 0
        fd = open_own_file(path)
        if fd is not None:
            try:
                head = os.pread(fd, 16, 0)
                if head[:8] == _MAGIC:
                    length = int.from_bytes(head[8:16], "little")
                    loaded = marshal.loads(os.pread(fd, length, 16))
                    if isinstance(loaded, dict) and loaded.get("key") == key:
                        index, blob_at = loaded["index"], 16 + length
            except (OSError, ValueError, EOFError, TypeError, KeyError):
                index = {}
        finder = _Finder(path, fd, index, blob_at)
        _state.update(finder=finder, folder=folder, key=key)
        at = next((i for i, f in enumerate(sys.meta_path) if f is PathFinder), None)
        if at is not None and index:
            sys.meta_path.insert(at, finder)
    except Exception:  # noqa: BLE001 — no cache: the usual imports
        _state["finder"] = None


def _pyc_matches(head: bytes, source: os.stat_result) -> bool:
    """Whether a `.pyc` header (timestamp kind) is the one Python accepts for this source."""
    from importlib.util import MAGIC_NUMBER

    return (len(head) >= 16 and head[:4] == MAGIC_NUMBER and head[4:8] == b"\0\0\0\0"
            and int.from_bytes(head[8:12], "little") == int(source.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == source.st_size & 0xFFFFFFFF)


def _read_pyc(origin: str, cached: str, n: int = -1) -> tuple[os.stat_result, bytes] | None:
    """The source's stat and the first n bytes (all: -1) of its `.pyc`, when that matches it."""
    try:
        st = os.stat(origin)
        with open(cached, "rb") as f:
            data = f.read(n)
    except OSError:
        return None
    return (st, data) if _pyc_matches(data[:16], st) else None


def _where(name: str, spec: Any, is_pkg: bool) -> int | str | None:
    """Where the module was found: its sys.path index (top level) or package folder (submodule)."""
    folder = os.path.dirname(spec.origin)
    if is_pkg:
        folder = os.path.dirname(folder)
    if "." in name:
        parent = sys.modules.get(name.rpartition(".")[0])
        return folder if getattr(parent, "__path__", None) == [folder] else None
    cwd = os.getcwd()
    for i, entry in enumerate(sys.path):
        if os.path.abspath(entry or cwd) == folder:
            # not the working folder's own modules (nor a relative entry's): they belong to one
            # project alone
            return i if os.path.isabs(entry) and entry != cwd else None
    return None


def save() -> None:
    """Store the modules this run loaded the usual way (when any can be added); once per process."""
    finder, folder = _state["finder"], _state["folder"]
    if finder is None or folder is None:
        return
    _state["finder"] = None
    try:
        _save(finder, folder)
    except Exception:  # noqa: BLE001 — a cache that cannot be written costs the next start only
        pass


def _save(finder: _Finder, folder: str) -> None:
    # entries: name -> (origin, cached, mtime_ns, size, is_pkg, where, offset, length), as in the
    # index; a new one's offset is FROM_PYC (its code is in its .pyc). The code is read only while
    # the file is written, one module at a time.
    new: dict[str, tuple[Any, ...]] = {}
    for name, module in list(sys.modules.items()):
        if name in finder.index and name not in finder.stale:
            continue
        spec = getattr(module, "__spec__", None)
        # loaded the usual way, or served by an entry found stale (its code did not read)
        if spec is None or type(spec.loader) not in (SourceFileLoader, _Loader) or not spec.cached \
                or not str(spec.origin).endswith(".py"):
            continue
        is_pkg = spec.submodule_search_locations is not None
        where = _where(name, spec, is_pkg)
        read = _read_pyc(spec.origin, spec.cached, 16) if where is not None else None
        if read is None:
            continue
        st = read[0]
        try:
            length = os.stat(spec.cached).st_size - 16
        except OSError:
            continue
        new[name] = (spec.origin, spec.cached, st.st_mtime_ns, st.st_size, is_pkg, where, FROM_PYC, length)
    if not new and not finder.stale:
        return
    index: dict[str, tuple[Any, ...]] = {}
    plan: list[tuple[Any, ...]] = []   # the entries whose code is written, in file order
    size = 0
    kept = {n: e for n, e in finder.index.items() if n not in finder.stale and n not in new}
    for name, entry in [*kept.items(), *new.items()]:
        length = entry[7]
        if size + length > MAX_BYTES:
            continue
        index[name] = (*entry[:6], size, length)
        plan.append(entry)
        size += length
    head = marshal.dumps({"key": _state["key"], "index": index})
    write_own_file(finder.path, _chunks(finder, head, plan))
    _prune(folder, keep=finder.path)


def _chunks(finder: _Finder, head: bytes, plan: list[tuple[Any, ...]]) -> Iterator[bytes]:
    """The file's bytes, module by module; any code that changed since it was planned stops the
    write (the old file stays)."""
    yield _MAGIC + len(head).to_bytes(8, "little") + head
    for entry in plan:
        if entry[6] == FROM_PYC:
            read = _read_pyc(entry[0], entry[1])
            if read is None or (read[0].st_mtime_ns, read[0].st_size) != (entry[2], entry[3]):
                raise OSError(f"{entry[0]} changed while its code was stored")
            data = read[1][16:]
        else:
            data = finder.stored(entry) or b""
        if len(data) != entry[7]:
            raise OSError(f"{entry[0]}: stored code of an unexpected length")
        yield data


def _prune(folder: str, keep: str) -> None:
    """At most MAX_FILES files of stored code in the folder: the least recently written go."""
    try:
        names = [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith("import-code.")]
        names.sort(key=lambda p: os.stat(p).st_mtime_ns, reverse=True)
    except OSError:
        return
    for stale in [p for p in names if p != keep][MAX_FILES - 1:]:
        try:
            os.unlink(stale)
        except OSError:
            pass
