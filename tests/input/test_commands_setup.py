"""Issue 27's set-up, memory, export and prompt commands through the real dispatcher: the `#`
memory shortcut, /memory, /add-dir (policy and sandbox), /sandbox, /output-style, /vim, /export,
/review, /security-review and /statusline."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from inputhelpers import make_dispatcher

from codeloop.input.dispatch import SubmitPath
from codeloop.permissions.policy import PermissionMode


def bwrap_works() -> bool:
    from codeloop.sandbox.bwrap import probe
    from codeloop.sandbox.seccomp import probe as seccomp_probe

    p = probe()
    return p.error is None and p.path is not None and seccomp_probe(p.path) is None


# -- memory ---------------------------------------------------------------------------------------------

async def test_hash_line_asks_where_and_appends_to_that_memory_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    api = ScriptedAPI()
    d, front = make_dispatcher(api, tmp_path, choices=["project", "user", None, "prompt"])
    assert await d.on_submit("# always use uv, never pip") is SubmitPath.IMMEDIATE
    assert "Save to memory: 'always use uv, never pip' — where?" in front.text()
    assert (tmp_path / "CLAUDE.md").read_text() == "- always use uv, never pip\n"
    await d.on_submit("#tabs are banned")
    assert (tmp_path / "home" / ".claude" / "CLAUDE.md").read_text() == "- tabs are banned\n"
    await d.on_submit("# not this one")
    assert "Not saved to memory." in front.text() and "not this one" not in (tmp_path / "CLAUDE.md").read_text()
    assert api.requests == []   # memory notes never reach the model as prompts
    api.responses.append(sse(text("Issue 12 it is.")))
    assert await d.on_submit("#12 is the issue to fix") is SubmitPath.EXECUTED   # …unless the user says so
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "#12 is the issue to fix"
    api.requests.clear()
    # the next prompt carries the new memory (CLAUDE.md is re-read before each query)
    from codeloop.context.prompt import context_loader
    front.conv.config.load_context = context_loader(tmp_path, tmp_path / ".cfg")
    api.responses.append(sse(text("ok")))
    await d.on_submit("hello")
    assert "always use uv, never pip" in json.dumps(api.requests[0].body)


async def test_memory_lists_files_and_opens_the_chosen_one_in_the_editor(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "CLAUDE.md").write_text("# Project\n")
    editor = tmp_path / "ed.sh"
    editor.write_text('#!/bin/sh\necho "edited by $(basename $0)" >> "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    d, front = make_dispatcher(ScriptedAPI(), tmp_path, choices=[str(tmp_path / "CLAUDE.md")])
    await d.on_submit("/memory")
    out = front.text()
    assert f"Memory files in use:\n  {tmp_path / 'CLAUDE.md'}" in out and "Open which memory file" in out
    assert (tmp_path / "CLAUDE.md").read_text() == "# Project\nedited by ed.sh\n"
    assert f"Edited {tmp_path / 'CLAUDE.md'}" in out
    await d.on_submit("/memory user")
    assert (tmp_path / "home" / ".claude" / "CLAUDE.md").read_text() == "edited by ed.sh\n"
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    await d.on_submit("/memory local")
    assert "Could not start the editor" in front.text()


# -- /add-dir and /sandbox --------------------------------------------------------------------------------

async def test_add_dir_reaches_the_policy_and_a_missing_path_is_one_line(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    d, front = make_dispatcher(ScriptedAPI(), work, mode=PermissionMode.ACCEPT_EDITS)
    policy = front.conv.config.policy
    assert not policy.inside_workdirs(str(other / "x.py"))
    await d.on_submit("/add-dir ../nowhere")
    assert front.shown[-1][0] == f"/add-dir: {tmp_path / 'nowhere'} does not exist"
    await d.on_submit("/add-dir ../other")
    assert f"Added {other} as a working directory for this session." in front.text()
    assert policy.additional_directories == [str(other)] and policy.inside_workdirs(str(other / "x.py"))
    await d.on_submit("/add-dir ../other")
    assert "already a working directory" in front.shown[-1][0]
    # acceptEdits now lets a Write there run without asking, as --add-dir at start-up would
    from codeloop.tools.base import PermissionBehavior
    from codeloop.tools.registry import parse_tool_input
    write = next(t for t in front.conv.config.tools if t.name == "Write")
    raw = {"file_path": str(other / "x.py"), "content": "x"}
    inp = parse_tool_input(write, raw)
    decision = policy.decide(write, inp, await write.check_permissions(inp, front.conv.tool_context), raw)
    assert decision.behavior is PermissionBehavior.ALLOW


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot start a sandbox here")
async def test_sandbox_switch_and_add_dir_make_the_new_folder_writable_inside_it(tmp_path):
    other, work = tmp_path / "other", tmp_path / "work"
    other.mkdir()
    work.mkdir()
    touch = f"touch {other}/made"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": touch})), sse(text("first")),
                      sse(tool_use("Bash", {"command": touch})), sse(text("second")))
    d, front = make_dispatcher(api, work)
    conv = front.conv
    await d.on_submit("/sandbox")
    assert "Sandbox: off" in front.text() and "/sandbox on | off" in front.text()
    await d.on_submit("/sandbox on")
    assert "Sandbox on" in front.shown[-1][0]
    assert conv.config.policy.sandbox is conv.tool_context.sandbox and conv.tool_context.sandbox.enabled
    await d.on_submit("make it")
    assert not (other / "made").exists()       # outside the sandbox's writable roots
    await d.on_submit("/add-dir ../other")
    assert "writable inside the sandbox too" in front.shown[-1][0]
    await d.on_submit("make it again")
    assert (other / "made").exists()
    await d.on_submit("/sandbox")
    assert f"writable: {work}, {other}" in front.text()
    await d.on_submit("/sandbox toggle")
    assert "Sandbox off" in front.shown[-1][0] and not conv.tool_context.sandbox.enabled


async def test_sandbox_refuses_what_managed_settings_decide(tmp_path, monkeypatch):
    from codeloop.config.settings import load_settings

    managed = tmp_path / "managed.json"
    managed.write_text(json.dumps({"sandbox": {"enabled": False}}))
    monkeypatch.setenv("CODELOOP_MANAGED_SETTINGS", str(managed))
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    front.conv.settings = load_settings(tmp_path, trusted=True)
    await d.on_submit("/sandbox on")
    assert "set by managed settings" in front.shown[-1][0] and front.conv.config.policy.sandbox is None
    await d.on_submit("/sandbox sideways")
    assert front.shown[-1][0] == "Usage: /sandbox [on|off|toggle]"


# -- /output-style, /vim ----------------------------------------------------------------------------------

async def test_output_style_selects_saves_and_shapes_the_next_prompt(tmp_path):
    from codeloop.context.prompt import context_loader

    (tmp_path / ".claude" / "output-styles").mkdir(parents=True)
    (tmp_path / ".claude" / "output-styles" / "pirate.md").write_text(
        "---\ndescription: Talks like a pirate\n---\nAnswer like a pirate.\n")
    api = ScriptedAPI(sse(text("arr")))
    d, front = make_dispatcher(api, tmp_path, choices=["pirate"])
    front.conv.config.load_context = context_loader(tmp_path, tmp_path / ".cfg")
    await d.on_submit("/output-style")
    out = front.text()
    assert "Output style: default" in out and "Choose an output style" in out
    from codeloop.input.commands_setup import available_styles
    styles = available_styles(front.conv)
    assert list(styles)[:3] == ["default", "Explanatory", "Learning"]
    assert styles["pirate"] == "Talks like a pirate (project)"
    assert "Output style set to pirate" in out and front.conv.output_style == "pirate"
    saved = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert saved == {"outputStyle": "pirate"}
    await d.on_submit("tell me")
    assert "Answer like a pirate." in json.dumps(api.requests[0].body["system"])
    await d.on_submit("/output-style klingon")
    assert "output style 'klingon' not found" in front.shown[-1][0]
    await d.on_submit("/output-style explanatory")
    assert front.conv.output_style == "Explanatory"


async def test_vim_calls_the_front_ends_toggle(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    await d.on_submit("/vim")
    assert "not available in this front end" in front.shown[-1][0]
    state = [False]

    def toggle_vim():
        state[0] = not state[0]
        return state[0]
    front.toggle_vim = toggle_vim
    await d.on_submit("/vim")
    assert state == [True] and "Editor mode set to vim." in front.shown[-1][0]
    await d.on_submit("/vim")
    assert state == [False] and "Editor mode set to normal." in front.shown[-1][0]


# -- /export ----------------------------------------------------------------------------------------------

async def test_export_writes_markdown_to_a_file_the_clipboard_or_a_default_name(tmp_path, monkeypatch):
    import codeloop.input.export as export

    api = ScriptedAPI(sse(text("Let me look."), tool_use("Bash", {"command": "echo hi"})), sse(text("It said hi.")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("/export")
    assert "Nothing to export yet" in front.shown[-1][0]
    await d.on_submit("Run echo hi please")
    await d.on_submit("/export out/chat.md")
    md = (tmp_path / "out" / "chat.md").read_text()
    assert md.startswith(f"# Conversation {front.conv.session_id}")
    assert "## User\n\nRun echo hi please" in md and "## Assistant\n\nLet me look." in md
    assert '**Tool: Bash**\n```\n{\n  "command": "echo hi"\n}\n```' in md and "**Result:**\n```\nhi\n```" in md
    assert "It said hi." in md
    clip = tmp_path / "clip.txt"
    monkeypatch.setattr(export, "clipboard_command", lambda: ["sh", "-c", f"cat > {clip}"])
    await d.on_submit("/export")
    assert "copied to the clipboard (sh," in front.shown[-1][0] and clip.read_text() == md
    monkeypatch.setattr(export, "clipboard_command", lambda: None)
    await d.on_submit("/export")
    line = front.shown[-1][0]
    assert line.startswith(f"Conversation exported to {tmp_path}/") and line.endswith("-run-echo-hi-please.md")
    assert (tmp_path / line.rsplit("/", 1)[1]).read_text() == md


def test_clipboard_command_needs_a_display(monkeypatch, tmp_path):
    from codeloop.input.export import clipboard_command

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "xclip").write_text("#!/bin/sh\n")
    (fake / "xclip").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    assert clipboard_command() is None
    monkeypatch.setenv("DISPLAY", ":0")
    assert clipboard_command() == [str(fake / "xclip"), "-selection", "clipboard"]   # by its absolute path
    # an empty or relative PATH entry is the project: a clipboard tool planted there is never used
    monkeypatch.chdir(fake)
    monkeypatch.setenv("PATH", ":.:bin")
    assert clipboard_command() is None


# -- prompt commands ---------------------------------------------------------------------------------------

def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "app.py").write_text("def f():\n    return 1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "first")
    git(tmp_path, "checkout", "-qb", "feature")
    (tmp_path / "app.py").write_text("import os\ndef f(x):\n    return os.system(x)\n")
    git(tmp_path, "commit", "-qam", "run commands")
    (tmp_path / "new.py").write_text("SECRET = 'hunter2'\n")
    return tmp_path


async def test_review_and_security_review_send_the_changes_to_the_model(repo):
    api = ScriptedAPI(sse(text("Looks risky.")), sse(text("One finding.")), sse(text("PR looks fine.")))
    d, front = make_dispatcher(api, repo, mode=PermissionMode.DEFAULT)
    await d.on_submit("/review")
    prompt = api.requests[0].messages[-1]["content"][-1]["text"]
    assert "expert code reviewer" in prompt and "run commands" in prompt and "app.py" in prompt
    assert "?? new.py" in prompt and "## feature" in prompt
    assert "Bash(git diff:*)" not in front.conv.config.policy.allow   # the extra rules held for that query only
    await d.on_submit("/security-review")
    prompt = api.requests[1].messages[-1]["content"][-1]["text"]
    assert "security review" in prompt and "+    return os.system(x)" in prompt and "against the merge base" in prompt
    await d.on_submit("/review 123")
    prompt = api.requests[2].messages[-1]["content"][-1]["text"]
    assert "gh pr view 123" in prompt and "gh pr diff 123" in prompt


async def test_review_may_run_gh_without_asking_during_its_own_query_only(repo):
    call = sse(tool_use("Bash", {"command": "gh pr view 7"}))
    api = ScriptedAPI(call, sse(text("done")), call, sse(text("done")))
    d, front = make_dispatcher(api, repo, mode=PermissionMode.DEFAULT)   # no one to ask: asking denies

    def result(request):
        return [b for m in request.messages if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_result"][-1]
    await d.on_submit("/review 7")
    assert "requested permissions" not in json.dumps(result(api.requests[1]))   # it ran (gh may well be missing here)
    assert front.conv.config.policy.allow == []
    await d.on_submit("now view the PR yourself")
    assert "requested permissions to use Bash" in json.dumps(result(api.requests[3]))


async def test_statusline_asks_the_model_to_configure_the_setting(tmp_path):
    api = ScriptedAPI(sse(text("Configured.")), sse(text("ok")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("/statusline")
    prompt = api.requests[0].messages[-1]["content"][-1]["text"]
    assert '"statusLine": {"type": "command"' in prompt and "PS1" in prompt and "settings.json" in prompt
    await d.on_submit("/statusline show the git branch and cost")
    assert "Request: show the git branch and cost" in api.requests[1].messages[-1]["content"][-1]["text"]


def test_new_commands_are_registered_and_import_lazily(tmp_path):
    code = ("import sys; from pathlib import Path; from codeloop.input.commands import CommandRegistry; "
            "r = CommandRegistry.load(Path('.'), Path('cfg'), home=Path('home')); "
            "names = {c.name for c in r.all()}; "
            "assert {'context','mcp','memory','agents','hooks','add-dir','export','doctor','review',"
            "'security-review','sandbox','output-style','statusline','vim'} <= names, names; "
            "assert not [m for m in sys.modules if m.startswith('codeloop.input.commands_') and m != "
            "'codeloop.input.commands_more'], sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)


def test_a_custom_review_command_wins_over_the_built_in_prompt_quietly(tmp_path):
    from codeloop.input.commands import CommandRegistry
    from codeloop.input.custom_commands import CommandSource

    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "review.md").write_text("Review $ARGUMENTS our way")
    (tmp_path / ".claude" / "commands" / "context.md").write_text("not the built-in")
    reg = CommandRegistry.load(tmp_path, tmp_path / "cfg", home=tmp_path / "home")
    assert reg.find("review").source is CommandSource.PROJECT
    assert reg.find("context").source is CommandSource.BUILTIN          # local built-ins still win, as before
    assert reg.warnings == ["/context from project is shadowed by an earlier definition"]
    assert reg.find("security-review").source is CommandSource.BUILTIN
