from __future__ import annotations

import base64
import hashlib
import os

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.read import ReadTool

read = ReadTool()


async def test_numbered_lines_cat_n_style(ctx, run, tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("alpha\nbeta\n\tgamma\n")
    r = await run(read, ctx, file_path=str(f))
    assert r.content == "     1\talpha\n     2\tbeta\n     3\t\tgamma"
    assert not r.is_error
    assert r.data == {"filePath": str(f), "numLines": 3, "startLine": 1, "totalLines": 3}


async def test_last_line_without_newline_and_crlf(ctx, run, tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes(b"one\r\ntwo")
    r = await run(read, ctx, file_path=str(f))
    assert r.content == "     1\tone\n     2\ttwo"


async def test_offset_and_limit(ctx, run, tmp_path):
    f = tmp_path / "ten.txt"
    f.write_text("".join(f"line{i}\n" for i in range(1, 11)))
    r = await run(read, ctx, file_path=str(f), offset=3, limit=2)
    assert r.content.startswith("     3\tline3\n     4\tline4")
    assert "offset=5" in r.content
    assert r.data == {"filePath": str(f), "numLines": 2, "startLine": 3, "totalLines": 10}
    rec = ctx.read_files[str(f)]
    assert rec.partial is True and rec.sha256 is None


async def test_default_limit_is_2000_lines_with_continuation_note(ctx, run, tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("".join(f"{i}\n" for i in range(1, 2501)))
    r = await run(read, ctx, file_path=str(f))
    body, note = r.content.split("\n\n", 1)
    assert len(body.splitlines()) == 2000
    assert body.splitlines()[-1] == "  2000\t2000"
    assert "500 more lines" in note and "offset=2001" in note
    assert r.data["numLines"] == 2000 and r.data["totalLines"] == 2500


async def test_offset_past_end_warns(ctx, run, tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("x\n")
    r = await run(read, ctx, file_path=str(f), offset=50)
    assert "shorter than the provided offset" in r.content and "1 lines" in r.content


async def test_long_lines_truncated(ctx, run, tmp_path):
    f = tmp_path / "long.txt"
    f.write_text("x" * 5000 + "\nshort\n")
    r = await run(read, ctx, file_path=str(f))
    first, second = r.content.split("\n")
    assert first.startswith("     1\t" + "x" * 2000)
    assert "x" * 2001 not in first and "truncated" in first
    assert second == "     2\tshort"


async def test_directory_refused(ctx, run, tmp_path):
    with pytest.raises(ToolError, match="is a directory, not a file; use Bash ls or Glob"):
        await run(read, ctx, file_path=str(tmp_path))


async def test_binary_with_nul_refused(ctx, run, tmp_path):
    f = tmp_path / "blob.bin"
    f.write_bytes(b"abc\x00def")
    with pytest.raises(ToolError, match="binary"):
        await run(read, ctx, file_path=str(f))


async def test_undecodable_bytes_shown_as_marked_escapes(ctx, run, tmp_path):
    # issue 13 item 6: bytes that are not UTF-8 are carried, clearly marked, instead of refused
    f = tmp_path / "latin.txt"
    f.write_bytes(b"caf\xe9 \xff\xfe\nplain\n")
    r = await run(read, ctx, file_path=str(f))
    body, note = r.content.split("\n\n", 1)
    assert body == "     1\tcaf\\xe9 \\xff\\xfe\n     2\tplain"
    assert "not valid UTF-8" in note and "\\xNN" in note and "1 line" in note
    r.content.encode("utf-8")  # nothing the request encoder could choke on


async def test_image_returned_as_base64_block(ctx, run, tmp_path):
    f = tmp_path / "pic.PNG"
    payload = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    f.write_bytes(payload)
    r = await run(read, ctx, file_path=str(f))
    assert isinstance(r.content, list) and len(r.content) == 1
    block = r.content[0]
    assert block["type"] == "image"
    assert block["source"]["type"] == "base64"
    assert block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == payload
    assert ctx.read_files[str(f)].sha256 == hashlib.sha256(payload).hexdigest()


async def test_image_over_5mb_refused(ctx, run, tmp_path):
    f = tmp_path / "huge.jpg"
    with open(f, "wb") as fh:
        fh.truncate(5 * 1024 * 1024 + 1)
    with pytest.raises(ToolError, match="5 MB"):
        await run(read, ctx, file_path=str(f))


async def test_empty_file_note(ctx, run, tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("")
    r = await run(read, ctx, file_path=str(f))
    assert "is empty" in r.content and not r.is_error
    assert r.data["totalLines"] == 0


async def test_missing_file_names_path_and_cwd(ctx, run, tmp_path):
    missing = tmp_path / "nope" / "x.py"
    with pytest.raises(ToolError) as ei:
        await run(read, ctx, file_path=str(missing))
    assert str(missing) in str(ei.value) and str(ctx.cwd) in str(ei.value)


async def test_relative_path_resolved_from_cwd_and_record_kept(ctx, run, tmp_path):
    (tmp_path / "sub").mkdir()
    f = tmp_path / "sub" / "r.txt"
    f.write_bytes(b"hello\n")
    r = await run(read, ctx, file_path="sub/../sub/r.txt")
    assert r.content == "     1\thello"
    rec = ctx.read_files[str(f)]
    st = os.stat(f)
    assert rec.mtime_ns == st.st_mtime_ns and rec.size == 6
    assert rec.sha256 == hashlib.sha256(b"hello\n").hexdigest() and rec.partial is False


def test_read_is_read_only_and_concurrency_safe():
    inp = ReadTool.input_model(file_path="/x")
    assert read.is_read_only(inp) and read.is_concurrency_safe(inp)


async def test_fifo_refused_without_blocking(ctx, run, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ToolError, match="not a regular file"):
        await run(read, ctx, file_path=str(fifo))
