"""Streaming a window of text lines out of an open file, in bounded memory.

Owns how Read turns bytes into lines: it reads line by line, keeps only the lines it will show
(each cut to a bounded number of bytes), stops at the line limit or the output-byte budget, and
counts the lines after the window only while that stays cheap — a 1 GiB file costs what its
window costs. Bytes that are not UTF-8 are shown as `\\xNN` escapes and the window says so.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import threading
from dataclasses import dataclass, field

from codeloop.tools.builtin.fileio import Stopped

MAX_LINE_CHARS = 2000
# a line is kept up to this many bytes: enough for MAX_LINE_CHARS characters of 4 bytes + one,
# so a cut line always decodes to more than MAX_LINE_CHARS characters and is shown as truncated
LINE_CAP_BYTES = MAX_LINE_CHARS * 4 + 4
MAX_OUTPUT_BYTES = 256 * 1024      # what one Read returns at most; the rest needs an offset
COUNT_REST_BYTES = 8 * 1024 * 1024  # past the window, lines are counted only this far
BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 16


@dataclass
class Window:
    """The lines read from a file and what is known of the rest."""
    lines: list[str] = field(default_factory=list)
    total: int | None = None          # None: the file goes on and was not read to its end
    whole: bool = False               # every byte was read (the digest covers the file)
    digest: str | None = None
    capped_by_bytes: bool = False     # the window stopped at MAX_OUTPUT_BYTES, not the limit
    undecodable: int = 0              # shown lines that held bytes which are not UTF-8


def _decode(raw: bytes, cut: bool) -> tuple[str, bool]:
    """(text, clean?) for one line; a cut line may end inside a character, which is no error."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(raw, final=not cut), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="backslashreplace"), False


def read_window(fd: int, size: int, start: int, limit: int, stop: threading.Event) -> Window:
    """Lines `start`..`start+limit-1` (1-based) of the file open at `fd`, read from its start."""
    f = io.BufferedReader(io.FileIO(fd, closefd=False), _CHUNK)
    hasher = hashlib.sha256()
    w = Window()
    lineno, out_bytes, at_eof = 0, 0, False
    while True:
        if stop.is_set():
            raise Stopped
        raw = f.readline(LINE_CAP_BYTES)
        if not raw:
            at_eof = True
            break
        hasher.update(raw)
        cut = not raw.endswith(b"\n") and len(raw) == LINE_CAP_BYTES
        while cut:  # drop the rest of an over-long line without holding it
            if stop.is_set():
                raise Stopped
            more = f.readline(_CHUNK)
            hasher.update(more)
            if not more or more.endswith(b"\n"):
                break
        lineno += 1
        if lineno < start:
            continue
        if len(w.lines) >= limit or out_bytes >= MAX_OUTPUT_BYTES:
            w.capped_by_bytes = len(w.lines) < limit
            lineno -= 1  # this line is past the window; it is counted below with the rest
            break
        if lineno == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        text, clean = _decode(raw.rstrip(b"\n") if not cut else raw, cut)
        if text.endswith("\r") and not cut:
            text = text[:-1]
        w.undecodable += not clean
        w.lines.append(text)
        out_bytes += min(len(text), MAX_LINE_CHARS) + 8
    if at_eof:
        w.total, w.whole, w.digest = lineno, True, hasher.hexdigest()
        return w
    # Past the window: count the remaining lines only if that is cheap.
    if size - f.tell() > COUNT_REST_BYTES:
        return w
    rest, last = 1, b"\n"  # the line that did not fit, read whole already
    while chunk := f.read(_CHUNK):
        if stop.is_set():
            raise Stopped
        rest += chunk.count(b"\n")
        last = chunk[-1:]
    w.total = lineno + rest + (last != b"\n")
    return w


def continuation_note(w: Window, start: int, size: int) -> str:
    """The line after the window telling the model how to read on (empty when nothing is left)."""
    end = start - 1 + len(w.lines)
    why = f"Output is capped at {MAX_OUTPUT_BYTES // 1024} KB per call. " if w.capped_by_bytes else ""
    if w.total is not None:
        if end >= w.total:
            return ""
        return (f"\n\n({why}Showing lines {start}-{end} of {w.total}. {w.total - end} more lines remain; "
                f"call Read with offset={end + 1} to continue.)")
    return (f"\n\n({why}Showing lines {start}-{end}; the file goes on ({_size(size)} in all) and was not "
            f"read further. Call Read with offset={end + 1} to continue.)")


def undecodable_note(w: Window) -> str:
    if not w.undecodable:
        return ""
    lines = "1 line holds" if w.undecodable == 1 else f"{w.undecodable} lines hold"
    return (f"\n\n(Not UTF-8: {lines} bytes that are not valid UTF-8, shown as \\xNN escapes; "
            "the file's bytes were not changed.)")


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def os_read_capped(fd: int, cap: int) -> bytes:
    """Up to `cap` bytes from the start of `fd` (images), in chunks."""
    os.lseek(fd, 0, os.SEEK_SET)
    parts, got = [], 0
    while got < cap and (chunk := os.read(fd, min(_CHUNK * 16, cap - got))):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
