"""Issue 17 item 12 in a real pty: a pasted image file path and `@shot.png` reach the model as image blocks."""

import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))
from test_images_cli import image_blocks, tiny_png  # noqa: E402


def test_pasting_an_image_path_attaches_the_image(tmp_path, screen):
    shot = tmp_path / "my shot.png"
    shot.write_bytes(tiny_png())
    api = ScriptedAPI(sse(text("I see one red pixel.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("what is this ")
        s.term.send(f"\x1b[200~'{shot}'\x1b[201~")   # a drag-and-drop / pasted path, quoted
        s.wait_text("[Image #1: my shot.png]")
        s.term.send("\r")
        s.wait_text("I see one red pixel.")
    blocks = image_blocks(api.requests[0].messages)
    assert len(blocks) == 1 and blocks[0]["source"]["media_type"] == "image/png"
    assert str(shot) not in str(api.requests[0].messages)  # the placeholder, not the path, went out


def test_at_mention_of_an_image_attaches_an_image_block(tmp_path, screen):
    (tmp_path / "shot.png").write_bytes(tiny_png())
    api = ScriptedAPI(sse(text("A red pixel.")))
    with api.serve() as url:
        s = screen(url)
        s.term.send("describe @shot.png ")   # the space closes the @ menu (Enter would take its entry)
        s.term.send("\r")
        s.wait_text("A red pixel.")
    blocks = image_blocks(api.requests[0].messages)
    assert len(blocks) == 1 and blocks[0]["source"]["data"]


def test_ctrl_v_without_a_clipboard_tool_says_so(tmp_path, screen):
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("\x16")
        s.wait_text("No image on the clipboard")
