"""Read of a PDF: the text of the chosen pages (pypdf) and, where pypdfium2 is installed, page images.

`pages` is Claude Code's page range ("3", "1-5", "2,4-6"); at most 20 pages per request, and a
document of more than 10 pages must be read in ranges — a clear message says so instead of
flooding the context. Images are rendered for every page of an explicit range, and for pages
with next to no text (scans, diagrams) otherwise; the PNG encoding is done here with zlib so no
imaging library is needed. Both libraries are the optional `pdf` extra
(`pip install 'codeloop[pdf]'`), imported only when a PDF is read.
"""

from __future__ import annotations

import base64
import struct
import zlib
import io
from pathlib import Path
from typing import Any

from codeloop.tools.base import ToolError, ToolResult

MAX_PAGES_PER_READ = 20
MAX_PAGES_WITHOUT_RANGE = 10
MAX_PDF_BYTES = 100 * 1024 * 1024
MAX_TEXT_CHARS = 100_000
SPARSE_TEXT_CHARS = 200          # a page with less text than this is shown as an image too
IMAGE_LONG_SIDE_PX = 1200


def parse_pages(spec: str, total: int) -> list[int]:
    """0-based page indexes for a 1-based spec such as "3", "1-5" or "2,4-6"; errors are one line."""
    pages: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        try:
            lo, hi = int(first), int(last) if dash else int(first)
        except ValueError:
            raise ToolError(f'Invalid pages value "{spec}": use a page or range such as "3", "1-5" or "2,4-6".') \
                from None
        if lo < 1 or hi < lo:
            raise ToolError(f'Invalid pages value "{spec}": pages count from 1 and ranges go upwards.')
        if lo > total:
            raise ToolError(f"Page {lo} does not exist: the PDF has {total} pages.")
        pages += [p for p in range(lo - 1, min(hi, total)) if p not in pages]
    if not pages:
        raise ToolError(f'Invalid pages value "{spec}".')
    if len(pages) > MAX_PAGES_PER_READ:
        raise ToolError(f"{len(pages)} pages requested; at most {MAX_PAGES_PER_READ} pages can be read per request. "
                        "Read the document in smaller ranges.")
    return pages


def _png(width: int, height: int, rgb: bytes) -> bytes:
    """A minimal PNG (8-bit RGB, no filter) — enough for page renders, no Pillow needed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    stride = width * 3
    raw = b"".join(b"\x00" + rgb[y * stride:(y + 1) * stride] for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def render_pages(data: bytes, pages: list[int]) -> list[dict[str, Any]] | None:
    """Image blocks of `pages`, or None when pypdfium2 is not installed."""
    try:
        import pypdfium2 as pdfium
    except ImportError:
        return None
    blocks: list[dict[str, Any]] = []
    doc = pdfium.PdfDocument(data)
    try:
        for index in pages:
            page = doc[index]
            w, h = page.get_size()
            scale = IMAGE_LONG_SIDE_PX / max(w, h, 1)
            bitmap = page.render(scale=scale, rev_byteorder=True)  # RGB(A) byte order
            try:
                width, height, stride = bitmap.width, bitmap.height, bitmap.stride
                channels = bitmap.n_channels
                buf = bytes(bitmap.buffer)
                rows = [buf[y * stride:y * stride + width * channels] for y in range(height)]
                packed = b"".join(rows)
                if channels == 3:
                    rgb = packed
                else:  # drop the alpha channel with strided slices (fast, no per-byte loop)
                    out = bytearray(width * height * 3)
                    for c in range(3):
                        out[c::3] = packed[c::channels]
                    rgb = bytes(out)
            finally:
                bitmap.close()
                page.close()
            png = base64.b64encode(_png(width, height, rgb)).decode()
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
    finally:
        doc.close()
    return blocks


def read_pdf(path: Path, data: bytes, pages_spec: str | None, *, images: bool = True) -> ToolResult:
    """`data` is the file's bytes, read from the descriptor that was checked (never reopened by name)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise ToolError("Reading PDFs needs the pypdf package: pip install 'codeloop[pdf]'") from None
    size = len(data)
    if size > MAX_PDF_BYTES:
        raise ToolError(f"PDF too large to read ({size // (1024 * 1024)} MB; the limit is "
                        f"{MAX_PDF_BYTES // (1024 * 1024)} MB).")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError(f"{path} is encrypted; it cannot be read without its password.")
        total = len(reader.pages)
    except (PdfReadError, ValueError, OSError) as exc:
        raise ToolError(f"{path} is not a readable PDF: {exc}") from None
    if pages_spec is None and total > MAX_PAGES_WITHOUT_RANGE:
        raise ToolError(f"This PDF has {total} pages, too many to read at once. Use the pages parameter to read it "
                        f'in ranges of at most {MAX_PAGES_PER_READ} pages (e.g. pages: "1-{MAX_PAGES_PER_READ}").')
    wanted = parse_pages(pages_spec, total) if pages_spec is not None else list(range(total))
    texts: list[str] = []
    for index in wanted:
        try:
            texts.append((reader.pages[index].extract_text() or "").strip())
        except Exception as exc:  # noqa: BLE001 — pypdf raises many kinds on damaged pages
            texts.append(f"[page text could not be extracted: {exc}]")
    body = "\n\n".join(f"<page number=\"{i + 1}\">\n{t}\n</page>" for i, t in zip(wanted, texts))
    if len(body) > MAX_TEXT_CHARS:
        body = body[:MAX_TEXT_CHARS] + "\n... [text truncated: read fewer pages at a time]"
    shown = f"pages {pages_spec}" if pages_spec else f"all {total} pages"
    header = f"PDF {path.name}: {total} pages, showing {shown}."
    blocks: list[dict[str, Any]] = []
    if images:
        to_render = wanted if pages_spec is not None else [i for i, t in zip(wanted, texts)
                                                             if len(t) < SPARSE_TEXT_CHARS]
        rendered = render_pages(data, to_render) if to_render else []
        if rendered is None:
            header += " (Page images need pypdfium2: pip install 'codeloop[pdf]'.)"
        else:
            blocks = rendered
            if rendered:
                header += f" Images of pages {', '.join(str(i + 1) for i in to_render)} follow the text."
    text = header + "\n\n" + body
    content: str | list[dict[str, Any]] = [{"type": "text", "text": text}, *blocks] if blocks else text
    return ToolResult(content, data={"type": "pdf", "file": {"filePath": str(path), "totalPages": total,
                                                             "pages": [i + 1 for i in wanted],
                                                             "images": len(blocks)}})
