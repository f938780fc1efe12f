"""`--file FILE_ID:PATH`: Files API downloads into the working folder at start-up, refused in one line
when anything about them is wrong.

Owns three things. The specs: every one is checked before anything is fetched — a file id of
letters, digits, `_` and `-`; a relative path that names a file inside the working folder (no
`..`, not absolute, not the folder itself, not an existing folder, not through a symlink that
leads out). The download: redirects are followed here, not by httpx (which would carry every
header along), so the API key goes only to the API's own origin; once a redirect leaves it the
rest of the chain is fetched without the key (and never from https down to plain http). The
write: the folder is opened by walking its checked real path without following a symlink at any
step (`permissions.paths.open_dir_no_symlinks`, as the Write tool does), and the file is replaced
atomically inside that descriptor, so a folder swapped for a symlink during the download makes
the write fail instead of landing outside the working folder.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

_FILE_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,254}"   # compiled on first use (start-up time)
MAX_REDIRECTS = 10
TIMEOUT_S = 60.0
FILES_BETA = "files-api-2025-04-14"


class FileFlagError(Exception):
    """One line for the user (`Error: …`), exit 1."""


@dataclass(frozen=True)
class FileSpec:
    """One checked `--file`: the id, the path as given, and where it lands (real, absolute)."""
    file_id: str
    rel: str
    target: str


def parse_spec(spec: str, root: str) -> FileSpec:
    """Check one `FILE_ID:PATH` against the working folder `root` (a real path); FileFlagError says why not."""
    file_id, sep, rel = spec.partition(":")
    if not sep:
        raise FileFlagError(f"--file: expected FILE_ID:PATH, got {spec!r}")
    if not file_id:
        raise FileFlagError(f"--file {spec!r}: the file id is empty")
    if not re.fullmatch(_FILE_ID, file_id):
        raise FileFlagError(f"--file {spec!r}: {file_id!r} is not a file id (letters, digits, '_' and '-')")
    if not rel:
        raise FileFlagError(f"--file {spec!r}: the path is empty")
    if "\0" in rel:
        raise FileFlagError(f"--file {spec!r}: the path contains a NUL byte")
    if os.path.isabs(rel):
        raise FileFlagError(f"--file {spec!r}: the path is absolute; give a path inside the working directory")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise FileFlagError(f"--file {spec!r}: '..' would leave the working directory; give a path inside it")
    if not parts or rel.endswith("/"):
        raise FileFlagError(f"--file {spec!r}: the path names a directory, not a file")
    target = os.path.realpath(os.path.join(root, *parts))
    if target == root:
        raise FileFlagError(f"--file {spec!r}: {rel!r} is the working directory, not a file")
    if not target.startswith(root.rstrip(os.sep) + os.sep):
        raise FileFlagError(f"--file {spec!r}: {rel!r} leads outside the working directory (through a symlink)")
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return FileSpec(file_id, rel, target)
    except NotADirectoryError:
        raise FileFlagError(f"--file {spec!r}: a part of {rel!r} is a file, not a directory") from None
    except OSError as exc:
        raise FileFlagError(f"--file {spec!r}: cannot use {rel!r}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise FileFlagError(f"--file {spec!r}: {rel!r} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise FileFlagError(f"--file {spec!r}: {rel!r} exists and is not a regular file")
    return FileSpec(file_id, rel, target)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def fetch_content(client: httpx.Client, base: str, file_id: str, key_headers: dict[str, str]) -> bytes:
    """GET the file's content, following redirects by hand: `key_headers` (the API key and the
    Anthropic headers) go only to the base URL's origin, and once a redirect leaves that origin
    never again in this chain."""
    import httpx

    try:
        url = httpx.URL(f"{base}/v1/files/{file_id}/content")
    except httpx.InvalidURL as exc:
        raise FileFlagError(f"--file: ANTHROPIC_BASE_URL {base!r} is not a URL ({exc})") from None
    home, keyed = _origin(url), True
    for _ in range(MAX_REDIRECTS + 1):
        keyed = keyed and _origin(url) == home
        try:
            resp = client.get(url, headers=key_headers if keyed else {})
        except httpx.HTTPError as exc:
            raise FileFlagError(f"--file {file_id}: download failed: {exc or type(exc).__name__}") from None
        if not resp.is_redirect:
            if resp.status_code != 200:
                raise FileFlagError(f"--file {file_id}: the API answered {resp.status_code}: "
                                    f"{' '.join(resp.text[:200].split())}")
            return resp.content
        try:
            target = url.join(resp.headers.get("location", ""))
        except httpx.InvalidURL as exc:
            raise FileFlagError(f"--file {file_id}: the API redirected to an invalid URL ({exc})") from None
        if target.scheme not in ("http", "https") or not target.host:
            raise FileFlagError(f"--file {file_id}: the API redirected to {str(target)[:200]!r}, not an http(s) URL")
        if url.scheme == "https" and target.scheme == "http":
            raise FileFlagError(f"--file {file_id}: the API redirected from https to plain http ({target.host}); "
                                "not followed")
        url = target
    raise FileFlagError(f"--file {file_id}: too many redirects (more than {MAX_REDIRECTS})")


def write_file(spec: FileSpec, data: bytes) -> None:
    """Put `data` at the checked target, through its folder opened without following any symlink."""
    from codeloop.fsutil import atomic_write_at
    from codeloop.permissions.paths import open_dir_no_symlinks

    parent, name = os.path.split(spec.target)
    try:
        dir_fd = open_dir_no_symlinks(parent, create=True)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileFlagError(f"--file {spec.file_id}: a folder on the way to {spec.rel!r} was replaced by a "
                                "symlink or a file during the download; nothing written") from None
        raise FileFlagError(f"--file {spec.file_id}: cannot write {spec.rel!r}: {exc.strerror}") from None
    try:
        mode = 0o666 & ~_umask()
        atomic_write_at(dir_fd, name, data, mode=mode)
    except IsADirectoryError:
        raise FileFlagError(f"--file {spec.file_id}: {spec.rel!r} became a directory during the download; "
                            "nothing written") from None
    except OSError as exc:
        raise FileFlagError(f"--file {spec.file_id}: cannot write {spec.rel!r}: {exc.strerror}") from None
    finally:
        os.close(dir_fd)


def _umask() -> int:
    mask = os.umask(0o022)   # os.umask can only be read by setting it
    os.umask(mask)
    return mask


def download_files(specs: list[str], cwd: str) -> None:
    """`--file file_id:relative/path`: fetch each file from the Files API into the working directory.
    Every spec is checked before the first download."""
    import httpx

    root = os.path.realpath(cwd)
    checked = [parse_spec(s, root) for s in specs]
    base = (os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")
    key_headers = {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01",
                   "anthropic-beta": FILES_BETA}
    try:
        client = httpx.Client(follow_redirects=False, timeout=TIMEOUT_S)
    except (httpx.HTTPError, ValueError) as exc:   # a malformed proxy variable, say
        raise FileFlagError(f"--file: cannot set up the download: {exc}") from None
    with client:
        for spec in checked:
            write_file(spec, fetch_content(client, base, spec.file_id, key_headers))
