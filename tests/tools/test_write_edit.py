from __future__ import annotations

import hashlib
import os
import stat

import pytest

from codeloop.tools.base import ToolError
from codeloop.tools.builtin.edit import EditTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.builtin.write import MODIFIED_MESSAGE, NOT_READ_MESSAGE, WriteTool

read, write, edit = ReadTool(), WriteTool(), EditTool()


def bump_mtime(path, content: bytes | None = None) -> None:
    """Simulate an external change: new content (optional) and a clearly different mtime."""
    if content is not None:
        path.write_bytes(content)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


# --- Write -------------------------------------------------------------------------------

async def test_write_creates_new_file_and_parents(ctx, run, tmp_path):
    f = tmp_path / "a" / "b" / "new.txt"
    r = await run(write, ctx, file_path=str(f), content="hi\nthere\n")
    assert f.read_text() == "hi\nthere\n"
    assert "created" in r.content and not r.is_error
    assert r.data["type"] == "create" and r.data["filePath"] == str(f)
    assert r.data["content"] == "hi\nthere\n"
    assert "+hi" in r.data["structuredPatch"]
    rec = ctx.read_files[str(f)]
    assert rec.sha256 == hashlib.sha256(b"hi\nthere\n").hexdigest() and not rec.partial


async def test_write_existing_without_read_refused(ctx, run, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("original")
    with pytest.raises(ToolError) as ei:
        await run(write, ctx, file_path=str(f), content="new")
    assert str(ei.value) == NOT_READ_MESSAGE
    assert f.read_text() == "original"


async def test_write_after_read_updates_and_keeps_mode(ctx, run, tmp_path):
    f = tmp_path / "script.sh"
    f.write_text("echo old\n")
    f.chmod(0o751)
    await run(read, ctx, file_path=str(f))
    r = await run(write, ctx, file_path=str(f), content="echo new\n")
    assert f.read_text() == "echo new\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert r.data["type"] == "update"
    assert "-echo old" in r.data["structuredPatch"] and "+echo new" in r.data["structuredPatch"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # The write refreshed the record, so a second write needs no new Read.
    await run(write, ctx, file_path=str(f), content="echo third\n")
    assert f.read_text() == "echo third\n"


async def test_write_after_external_change_refused(ctx, run, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("v1\n")
    await run(read, ctx, file_path=str(f))
    bump_mtime(f, b"v2 by the user\n")
    with pytest.raises(ToolError) as ei:
        await run(write, ctx, file_path=str(f), content="mine\n")
    assert str(ei.value) == MODIFIED_MESSAGE
    assert f.read_text() == "v2 by the user\n"


async def test_touched_but_identical_file_still_writable(ctx, run, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("same\n")
    await run(read, ctx, file_path=str(f))
    bump_mtime(f)
    await run(write, ctx, file_path=str(f), content="changed\n")
    assert f.read_text() == "changed\n"


async def test_partial_read_then_touch_refused(ctx, run, tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a\nb\nc\n")
    await run(read, ctx, file_path=str(f), limit=1)
    bump_mtime(f)
    with pytest.raises(ToolError, match="modified since read"):
        await run(write, ctx, file_path=str(f), content="z\n")


async def test_write_through_symlink_keeps_link(ctx, run, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("real\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    await run(read, ctx, file_path=str(link))
    await run(write, ctx, file_path=str(link), content="via link\n")
    assert link.is_symlink() and target.read_text() == "via link\n"


async def test_write_to_directory_refused(ctx, run, tmp_path):
    with pytest.raises(ToolError, match="directory"):
        await run(write, ctx, file_path=str(tmp_path), content="x")


# --- Edit --------------------------------------------------------------------------------

async def read_first(ctx, run, f):
    await run(read, ctx, file_path=str(f))


async def test_edit_unique_match(ctx, run, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    return 1\n\nprint(f())\n")
    await read_first(ctx, run, f)
    r = await run(edit, ctx, file_path=str(f), old_string="return 1", new_string="return 2")
    assert f.read_text() == "def f():\n    return 2\n\nprint(f())\n"
    assert "     2\t    return 2" in r.content  # cat -n snippet of the edited region
    assert "-    return 1" in r.data["structuredPatch"]
    assert "+    return 2" in r.data["structuredPatch"]
    assert r.data["replacements"] == 1
    assert ctx.read_files[str(f)].sha256 == hashlib.sha256(f.read_bytes()).hexdigest()


async def refused_edit(ctx, run, f, text: str, old: str, new: str) -> str:
    """The error of an Edit of `f` (holding `text`, read first) from `old` to `new`."""
    f.write_text(text)
    await read_first(ctx, run, f)
    with pytest.raises(ToolError) as ei:
        await run(edit, ctx, file_path=str(f), old_string=old, new_string=new)
    return str(ei.value)


async def test_edit_non_unique_needs_context_or_replace_all(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    msg = await refused_edit(ctx, run, f, "x = 1\nx = 1\nx = 1\n", "x = 1", "x = 2")
    assert "Found 3 matches" in msg and "replace_all" in msg and "context" in msg
    assert f.read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_non_unique_lists_the_lines_of_each_match(ctx, run, tmp_path):
    f = tmp_path / "maths.py"
    msg = await refused_edit(ctx, run, f, "def dbl(n):\n    return n * 2\n\n\nprint(dbl(4))\nprint(dbl(dbl(1)))\n",
                             "dbl", "double")
    assert "Found 4 matches" in msg
    # each line once, numbered as Read numbers it, even with two matches on line 6
    assert msg.endswith("lines:\n     1\tdef dbl(n):\n     5\tprint(dbl(4))\n     6\tprint(dbl(dbl(1)))")
    assert "dbl" in f.read_text()


async def test_edit_non_unique_listing_is_bounded(ctx, run, tmp_path):
    msg = await refused_edit(ctx, run, tmp_path / "m.txt", "x\n" * 25, "x", "y")
    assert "    10\tx" in msg and "    11\tx" not in msg and "(and 15 more lines)" in msg


async def test_edit_replace_all(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("foo bar foo\nfoo\n")
    await read_first(ctx, run, f)
    r = await run(edit, ctx, file_path=str(f), old_string="foo", new_string="baz", replace_all=True)
    assert f.read_text() == "baz bar baz\nbaz\n"
    assert r.data["replacements"] == 3 and r.data["replaceAll"] is True


async def test_edit_not_found(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("hello\n")
    await read_first(ctx, run, f)
    with pytest.raises(ToolError, match="not found"):
        await run(edit, ctx, file_path=str(f), old_string="goodbye", new_string="x")


async def test_edit_same_strings_refused(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("hello\n")
    await read_first(ctx, run, f)
    with pytest.raises(ToolError, match="exactly the same"):
        await run(edit, ctx, file_path=str(f), old_string="hello", new_string="hello")


async def test_edit_crlf_file_keeps_crlf(ctx, run, tmp_path):
    f = tmp_path / "win.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await read_first(ctx, run, f)
    await run(edit, ctx, file_path=str(f), old_string="one\ntwo", new_string="uno\ndos\nextra")
    assert f.read_bytes() == b"uno\r\ndos\r\nextra\r\nthree\r\n"


async def test_edit_keeps_utf8_bom(ctx, run, tmp_path):
    f = tmp_path / "bom.txt"
    f.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9\n")
    await read_first(ctx, run, f)
    await run(edit, ctx, file_path=str(f), old_string="café", new_string="thé")
    assert f.read_bytes() == b"\xef\xbb\xbfth\xc3\xa9\n"


async def test_edit_requires_read(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("hello\n")
    with pytest.raises(ToolError) as ei:
        await run(edit, ctx, file_path=str(f), old_string="hello", new_string="bye")
    assert str(ei.value) == NOT_READ_MESSAGE


async def test_edit_changed_on_disk_refused(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("hello\n")
    await read_first(ctx, run, f)
    bump_mtime(f, b"hello world\n")
    with pytest.raises(ToolError) as ei:
        await run(edit, ctx, file_path=str(f), old_string="hello", new_string="bye")
    assert str(ei.value) == MODIFIED_MESSAGE
    assert f.read_text() == "hello world\n"


async def test_edit_empty_old_string_creates_missing_file(ctx, run, tmp_path):
    f = tmp_path / "new" / "file.txt"
    r = await run(edit, ctx, file_path=str(f), old_string="", new_string="fresh\n")
    assert f.read_text() == "fresh\n" and "created" in r.content
    assert str(f) in ctx.read_files


async def test_edit_empty_old_string_on_existing_file_refused(ctx, run, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("content\n")
    await read_first(ctx, run, f)
    with pytest.raises(ToolError, match="already exists"):
        await run(edit, ctx, file_path=str(f), old_string="", new_string="x")


async def test_edit_missing_file_with_old_string(ctx, run, tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        await run(edit, ctx, file_path=str(tmp_path / "nope.txt"), old_string="a", new_string="b")


async def test_edit_preserves_mode(ctx, run, tmp_path):
    f = tmp_path / "run.sh"
    f.write_text("echo a\n")
    f.chmod(0o700)
    await read_first(ctx, run, f)
    await run(edit, ctx, file_path=str(f), old_string="a", new_string="b")
    assert stat.S_IMODE(f.stat().st_mode) == 0o700 and f.read_text() == "echo b\n"


async def test_edit_not_found_offers_the_closest_text_to_copy(ctx, run, tmp_path):
    import json

    f = tmp_path / "settings.json"
    f.write_text('{\n  "name": "demo",\n  "debug": false,\n  "retries": 3\n}\n')
    await run(read, ctx, file_path=str(f))
    with pytest.raises(ToolError) as ei:   # the quotes dropped, as small models do
        await run(edit, ctx, file_path=str(f), old_string="debug: false", new_string="debug: true")
    message = str(ei.value)
    assert message.startswith("String to replace not found in file.\nString: debug: false\n")
    hint = message.split("as a JSON string to copy into old_string: ", 1)[1]
    assert "(line 3)" in message and json.loads(hint) == '"debug": false,'
    # the offered text is copyable as it is: the edit then goes through
    await run(edit, ctx, file_path=str(f), old_string=json.loads(hint), new_string='"debug": true,')
    assert json.loads(f.read_text()) == {"name": "demo", "debug": True, "retries": 3}
    with pytest.raises(ToolError) as ei:   # nothing alike: no hint
        await run(edit, ctx, file_path=str(f), old_string="zzz qqq www", new_string="x")
    assert "closest" not in str(ei.value)


async def test_edit_that_breaks_a_json_file_is_refused(ctx, run, tmp_path):
    import json

    f = tmp_path / "settings.json"
    original = '{\n  "name": "demo",\n  "debug": false,\n  "retries": 3\n}\n'
    f.write_text(original)
    await run(read, ctx, file_path=str(f))
    with pytest.raises(ToolError) as ei:   # the comma dropped
        await run(edit, ctx, file_path=str(f), old_string='"debug": false,', new_string='"debug": true')
    assert "would no longer be valid JSON" in str(ei.value) and "line 4" in str(ei.value)
    assert f.read_text() == original
    await run(edit, ctx, file_path=str(f), old_string='"debug": false,', new_string='"debug": true,')
    assert json.loads(f.read_text())["debug"] is True
    # a .json file that was not JSON before (comments) is edited as text
    g = tmp_path / "tsconfig.json"
    g.write_text('{\n  // strict\n  "strict": false\n}\n')
    await run(read, ctx, file_path=str(g))
    await run(edit, ctx, file_path=str(g), old_string='"strict": false', new_string='"strict": true,')
    assert '"strict": true,' in g.read_text()


async def test_edit_that_parts_a_block_from_its_body_is_refused(ctx, run, tmp_path):
    import json

    f = tmp_path / "powers.py"
    original = "def square(n):\n    return n * n\n\n\ndef double(n):\n    return 2 * n\n"
    f.write_text(original)
    await run(read, ctx, file_path=str(f))
    # anchored on the def line, a new function put after it: square's body would become cube's
    for new in ("def square(n):\n    return n * n\n\ndef cube(n):",
                "def square(n):\n\ndef cube(n):\n    return n ** 3"):
        with pytest.raises(ToolError) as ei:
            await run(edit, ctx, file_path=str(f), old_string="def square(n):", new_string=new)
        message = str(ei.value)
        assert "line 1, `def square(n):`, opens a block (line 2 is indented under it)" in message
        assert "would belong to `def cube(n):`" in message
        assert f.read_text() == original
    # the whole block the error offers, as JSON, goes through with the new text after it
    whole = json.loads(message.split("as a JSON string: ", 1)[1].split(", and new_string", 1)[0])
    assert whole == "def square(n):\n    return n * n"
    await run(edit, ctx, file_path=str(f), old_string=whole,
              new_string=whole + "\n\n\ndef cube(n):\n    return n ** 3")
    assert f.read_text().startswith("def square(n):\n    return n * n\n\n\ndef cube(n):\n    return n ** 3\n")


async def test_edits_at_a_block_opening_line_that_keep_the_block_go_through(ctx, run, tmp_path):
    f = tmp_path / "powers.py"
    f.write_text("def square(n):\n    return n * n\n")
    await run(read, ctx, file_path=str(f))
    await run(edit, ctx, file_path=str(f), old_string="def square(n):", new_string="def sq(n):")   # renamed
    await run(edit, ctx, file_path=str(f), old_string="def sq(n):",                           # a body line added
              new_string='def sq(n):\n    """n times n."""')
    await run(edit, ctx, file_path=str(f), old_string="def sq(n):",                           # a function before it
              new_string="def cube(n):\n    return n ** 3\n\n\ndef sq(n):")
    assert f.read_text() == 'def cube(n):\n    return n ** 3\n\n\ndef sq(n):\n    """n times n."""\n    return n * n\n'
    # a YAML key's nested lines are a block too
    y = tmp_path / "app.yaml"
    y.write_text("server:\n  port: 80\nname: demo\n")
    await run(read, ctx, file_path=str(y))
    with pytest.raises(ToolError, match="would belong to `db:`"):
        await run(edit, ctx, file_path=str(y), old_string="server:", new_string="server:\ndb:")
    await run(edit, ctx, file_path=str(y), old_string="server:", new_string="server:\n  host: x")
    assert y.read_text() == "server:\n  host: x\n  port: 80\nname: demo\n"
    # prose is not code: a sentence between a heading line and its indented list is an ordinary edit
    md = tmp_path / "notes.md"
    md.write_text("Steps:\n  - build\n  - ship\n")
    await run(read, ctx, file_path=str(md))
    await run(edit, ctx, file_path=str(md), old_string="Steps:", new_string="Steps:\nIn this order.")
    assert md.read_text() == "Steps:\nIn this order.\n  - build\n  - ship\n"



async def test_edit_that_leaves_a_python_block_with_no_body_is_refused(ctx, run, tmp_path):
    f = tmp_path / "powers.py"
    original = "def square(n):\n    return n * n\n"
    f.write_text(original)
    await run(read, ctx, file_path=str(f))
    with pytest.raises(ToolError) as ei:   # the new def line alone
        await run(edit, ctx, file_path=str(f), old_string="def square(n):\n    return n * n",
                  new_string="def square(n):\n    return n * n\n\ndef cube(n):")
    assert "in powers.py, line 4: expected an indented block after function definition on line 4" in str(ei.value)
    assert f.read_text() == original
    # other syntax errors may be a step of a larger change: not refused
    await run(edit, ctx, file_path=str(f), old_string="    return n * n", new_string="    return n * (n")
    assert f.read_text() == "def square(n):\n    return n * (n\n"
    # a file that did not compile before is edited as text
    g = tmp_path / "draft.py"
    g.write_text("def f(:\n    pass\n")
    await run(read, ctx, file_path=str(g))
    await run(edit, ctx, file_path=str(g), old_string="    pass", new_string="    pass\n\ndef g():")
    assert g.read_text() == "def f(:\n    pass\n\ndef g():\n"
