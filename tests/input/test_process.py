"""process_user_input: !bash mode, @file mentions (and their permission checks), pasted text."""

from fakeapi import ScriptedAPI, sse, text
from codeloop.input.process import expand_pasted_text, find_mentions, paste_placeholder, process_user_input
from codeloop.loop.queue import QueuedCommand, QueueMode
from codeloop.permissions.policy import PermissionMode
from inputhelpers import FakeFront, make_conv, make_dispatcher
from codeloop.input.commands import CommandRegistry


def _setup(tmp_path, **kw):
    conv = make_conv(ScriptedAPI(), tmp_path, **kw)
    return FakeFront(conv), CommandRegistry.load(tmp_path, tmp_path / "cfg", home=tmp_path / "home")


async def test_bash_mode_runs_in_cwd_and_adds_context_without_a_query(tmp_path):
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("pwd; echo oops >&2", mode=QueueMode.BASH))
    assert not r.should_query
    assert r.messages[0].text == "<bash-input>pwd; echo oops >&2</bash-input>"
    assert f"<bash-stdout>{tmp_path}</bash-stdout><bash-stderr>oops</bash-stderr>" == r.messages[1].text


async def test_bash_mode_output_reaches_the_next_request(tmp_path):
    api = ScriptedAPI(sse(text("I see it")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("echo marker-123", mode=QueueMode.BASH)
    assert api.requests == [] and any("marker-123" in m.text for m in front.conv.messages)
    await d.on_submit("what did it print?")
    sent = str(api.requests[0].messages)
    assert "<bash-stdout>marker-123</bash-stdout>" in sent and "what did it print?" in sent
    lines = front.conv.transcript_path.read_text()
    assert "marker-123" in lines


def test_find_mentions():
    assert find_mentions('look at @src/a.py and @"my file.txt", mail me@example.com') == ["src/a.py", "my file.txt"]


async def test_file_mention_is_attached_as_meta(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("summarise @notes.txt and @nobody"))
    assert r.should_query and len(r.messages) == 2
    att, prompt = r.messages
    assert att.is_meta and "alpha" in att.text and "notes.txt" in att.text
    assert prompt.text == "summarise @notes.txt and @nobody" and not prompt.is_meta
    assert r.notices == []


async def test_file_mention_respects_deny_rules_and_outside_paths(tmp_path):
    (tmp_path / "secret.env").write_text("TOKEN=1")
    outside = tmp_path.parent / "outside-file.txt"
    outside.write_text("x")
    front, reg = _setup(tmp_path, mode=PermissionMode.DEFAULT, deny=["Read(./secret.env)"])
    r = await process_user_input(front, reg, QueuedCommand(f"see @secret.env and @{outside}"))
    assert len(r.messages) == 1 and "TOKEN" not in str(r.messages[0].content)
    assert any("secret.env" in n and "deny" in n for n in r.notices)
    assert any("outside-file.txt" in n for n in r.notices)


async def test_later_commands_skip_attachments(tmp_path):
    (tmp_path / "a.txt").write_text("content-a")
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("again @a.txt"), skip_attachments=True)
    assert len(r.messages) == 1


async def test_directory_mention_lists_entries(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("what is in @pkg"))
    assert "mod.py" in r.messages[0].text


async def test_pasted_text_placeholders_expand(tmp_path):
    big = "line\n" * 30
    ph = paste_placeholder(1, big)
    assert ph == "[Pasted text #1 +30 lines]"
    pasted = {1: {"type": "text", "content": big}}
    assert expand_pasted_text(f"fix this: {ph}", pasted) == f"fix this: {big}"
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand(f"fix this: {ph}", pasted_contents=pasted))
    assert r.messages[-1].text == f"fix this: {big}"
    img = {2: {"type": "image", "content": "aGk=", "media_type": "image/png"}}
    r = await process_user_input(front, reg, QueuedCommand("what is this", pasted_contents=img))
    assert [b["type"] for b in r.messages[-1].content] == ["text", "image"]


async def test_slash_commands_can_be_skipped(tmp_path):
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("/help", skip_slash_commands=True))
    assert r.should_query and r.messages[-1].text == "/help"
    r = await process_user_input(front, reg, QueuedCommand("/help"))
    assert not r.should_query and "Commands:" in r.output


def test_named_files_are_existing_files_inside_the_folder(tmp_path):
    from codeloop.input.process import named_files

    (tmp_path / "config.ini").write_text("PORT=1")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "air.txt").write_text("zeppelin")
    (tmp_path.parent / "beside.txt").write_text("outside")
    for i in range(4):
        (tmp_path / f"f{i}.py").write_text("")
    text = ('What is PORT in config.ini? See "notes/air.txt", ../beside.txt, missing.txt, notes, '
            'e.g. version 1.5 and config.ini again.')
    assert named_files(text, tmp_path) == ["config.ini", "notes/air.txt"]
    assert named_files("f0.py f1.py f2.py f3.py", tmp_path) == ["f0.py", "f1.py", "f2.py"]   # at most three


async def test_named_files_attach_only_when_the_session_asks(tmp_path):
    from codeloop.config.flags import ATTACH_NAMED_FILES

    (tmp_path / "config.ini").write_text("PORT=8431\n")
    (tmp_path / "secret.env").write_text("TOKEN=1")
    front, reg = _setup(tmp_path)
    r = await process_user_input(front, reg, QueuedCommand("what is PORT in config.ini?"))
    assert len(r.messages) == 1   # an ordinary session attaches @-mentions only
    front, reg = _setup(tmp_path, mode=PermissionMode.DEFAULT, deny=["Read(./secret.env)"])
    front.conv.config.feature_flags[ATTACH_NAMED_FILES] = True
    r = await process_user_input(front, reg, QueuedCommand("what is PORT in config.ini? also secret.env"))
    att, prompt = r.messages
    assert att.is_meta and "PORT=8431" in att.text and prompt.text.startswith("what is PORT")
    assert "TOKEN" not in str(r.messages) and any("secret.env" in n for n in r.notices)
