"""Issue 17 item 12: `@image.png` attaches the image as an image block, in -p as in the REPL."""

import struct
import zlib

from fakeapi import ScriptedAPI, sse, text
from test_print_mode import codeloop


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\x00\xff\x00\x00"  # one red pixel, filter byte 0
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image_blocks(messages):
    return [b for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "image"]


def test_print_mode_expands_an_image_mention_into_an_image_block(tmp_path):
    (tmp_path / "shot.png").write_bytes(tiny_png())
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    api = ScriptedAPI(sse(text("a red pixel")))
    with api.serve() as url:
        r = codeloop(["-p", "what is in @shot.png and @notes.txt?"], cwd=tmp_path, base_url=url, input="")
    assert r.returncode == 0, r.stderr
    msgs = api.requests[0].messages
    blocks = image_blocks(msgs)
    assert len(blocks) == 1 and blocks[0]["source"]["media_type"] == "image/png"
    assert blocks[0]["source"]["data"]
    assert "remember the milk" in str(msgs)
    assert msgs[-1]["content"][-1]["text"] == "what is in @shot.png and @notes.txt?"


def test_print_mode_mention_of_a_denied_file_is_not_attached(tmp_path):
    (tmp_path / "secret.txt").write_text("TOPSECRET\n")
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "read @secret.txt", "--disallowedTools", "Read(./secret.txt)"], cwd=tmp_path,
                     base_url=url, input="")
    assert r.returncode == 0, r.stderr
    assert "TOPSECRET" not in str(api.requests[0].messages)
    assert "@secret.txt: not attached" in r.stderr
