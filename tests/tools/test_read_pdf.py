"""Read of PDFs (issue 16) on real PDF files (tests/fixtures/pdf): page text with pypdf, page images
with pypdfium2, the `pages` parameter, and clear limits for documents too large to read at once."""

from __future__ import annotations

import base64
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin import read_pdf
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.builtin.read_pdf import parse_pages
from fakeapi import ScriptedAPI, sse, text, tool_use

pytest.importorskip("pypdf")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pdf"
REPORT, HANDBOOK = FIXTURES / "quarterly-report.pdf", FIXTURES / "handbook-12p.pdf"


def png_size(block) -> tuple[int, int]:
    data = base64.b64decode(block["source"]["data"])
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_page_specs():
    assert parse_pages("3", 10) == [2]
    assert parse_pages("1-3, 5", 10) == [0, 1, 2, 4]
    assert parse_pages("8-20", 10) == [7, 8, 9]            # a range running past the end stops there
    for bad, why in (("0", "count from 1"), ("5-2", "upwards"), ("x", "Invalid pages"), ("11", "has 10 pages")):
        with pytest.raises(ToolError, match=why):
            parse_pages(bad, 10)
    with pytest.raises(ToolError, match="at most 20 pages"):
        parse_pages("1-21", 30)


async def test_small_pdf_text_and_images_of_sparse_pages(ctx, run):
    pytest.importorskip("pypdfium2")
    res = await run(ReadTool(), ctx, file_path=str(REPORT))
    first, *images = res.content
    body = first["text"]
    assert body.startswith("PDF quarterly-report.pdf: 3 pages, showing all 3 pages.")
    assert "revenue grew 12 percent" in body and '<page number="3">' in body and "methodology" in body
    assert len(images) == 2 and "Images of pages 2, 3 follow the text." in body   # the figure page, the short one
    w, h = png_size(images[0])
    assert max(w, h) == read_pdf.IMAGE_LONG_SIDE_PX and w < h                       # portrait A4
    png = base64.b64decode(images[0]["source"]["data"])
    (idat_len,) = struct.unpack(">I", png[33:37])
    assert png[37:41] == b"IDAT"
    raw = zlib.decompress(png[41:41 + idat_len])
    assert len(raw) == h * (1 + 3 * w)                                              # 8-bit RGB rows
    assert res.data["file"] == {"filePath": str(REPORT), "totalPages": 3, "pages": [1, 2, 3], "images": 2}


async def test_pages_parameter_reads_a_range_with_images(ctx, run):
    pytest.importorskip("pypdfium2")
    res = await run(ReadTool(), ctx, file_path=str(HANDBOOK), pages="11-12")
    body = res.content[0]["text"]
    assert "showing pages 11-12" in body and "Handbook chapter 11" in body and "chapter 12" in body
    assert "chapter 10" not in body and [b["type"] for b in res.content[1:]] == ["image", "image"]


async def test_large_documents_need_a_range(ctx, run):
    with pytest.raises(ToolError, match=r'This PDF has 12 pages, too many to read at once.*pages: "1-20"'):
        await run(ReadTool(), ctx, file_path=str(HANDBOOK))
    with pytest.raises(ToolError, match="Page 13 does not exist"):
        await run(ReadTool(), ctx, file_path=str(HANDBOOK), pages="13")


async def test_byte_limit_and_broken_files(ctx, run, tmp_path, monkeypatch):
    monkeypatch.setattr(read_pdf, "MAX_PDF_BYTES", 1024)
    with pytest.raises(ToolError, match="PDF too large"):
        await run(ReadTool(), ctx, file_path=str(REPORT))
    monkeypatch.undo()
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n this is not really a pdf")
    with pytest.raises(ToolError, match="not a readable PDF"):
        await run(ReadTool(), ctx, file_path=str(broken))


async def test_text_only_when_images_are_off(ctx, run):
    ctx.images_supported = False
    res = await run(ReadTool(), ctx, file_path=str(REPORT))
    assert isinstance(res.content, str) and "revenue grew" in res.content


def test_cli_read_pdf_pages(tmp_path):
    pdf = Path(shutil.copy(HANDBOOK, tmp_path / "handbook.pdf"))
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(pdf)}, id="all")),
                      sse(tool_use("Read", {"file_path": str(pdf), "pages": "2"}, id="two")),
                      sse(text("Chapter 2 is about topic 2.")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    with api.serve() as url:
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(tmp_path / ".c"),
                    "HOME": str(tmp_path)})
        r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "chapter 2?"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    refused = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert refused["is_error"] is True and "12 pages, too many" in str(refused["content"])
    page = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
    blocks = page["content"] if isinstance(page["content"], list) else [{"type": "text", "text": page["content"]}]
    assert "Handbook chapter 2:" in blocks[0]["text"] and "chapter 3" not in blocks[0]["text"]
    assert r.stdout.strip() == "Chapter 2 is about topic 2."
