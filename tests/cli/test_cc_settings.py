"""Issue 15, settings: `setting_sources` gates CLAUDE.md discovery as in Claude Code, the
`outputStyle` setting shapes the system prompt (and system/init's `output_style`), and an
unusable `--settings` value stops the run with one line. Driven through the official
claude-agent-sdk (codeloop as its `cli_path`) and as a subprocess, against the fake API."""

import json

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
from claude_agent_sdk import ResultMessage, SystemMessage, query  # noqa: E402

from fakeapi import ScriptedAPI, sse, text  # noqa: E402
from test_print_mode import codeloop  # noqa: E402
from test_sdk_interop import _real_cli, options  # noqa: E402


def _memory_files(tmp_path):
    cfg = tmp_path / ".cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "CLAUDE.md").write_text("USER-MEMORY-MARKER\n")
    (tmp_path / "CLAUDE.md").write_text("PROJECT-MEMORY-MARKER\n")
    (tmp_path / "CLAUDE.local.md").write_text("LOCAL-MEMORY-MARKER\n")


@pytest.mark.parametrize("sources, expected", [
    (None, {"USER", "PROJECT", "LOCAL"}),
    ([], set()),
    (["project"], {"PROJECT"}),
    (["user", "local"], {"USER", "LOCAL"}),
])
async def test_setting_sources_gate_claude_md(tmp_path, sources, expected):
    cli = _real_cli(tmp_path)
    _memory_files(tmp_path)
    api = ScriptedAPI(sse(text("ok")))
    kw = {} if sources is None else {"setting_sources": sources}
    with api.serve() as url:
        messages = [m async for m in query(prompt="hi", options=options(cli, url, tmp_path, **kw))]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "ok"
    sent = json.dumps(api.requests[0].messages) + api.requests[0].system_text
    assert {k for k in ("USER", "PROJECT", "LOCAL") if f"{k}-MEMORY-MARKER" in sent} == expected


def test_setting_sources_gate_nested_claude_md(tmp_path):
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").write_text("NESTED-PROJECT-MARKER\n")
    (sub / "code.py").write_text("x = 1\n")
    from fakeapi import tool_use
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(sub / "code.py")}, id="r1")), sse(text("read it")),
                      sse(tool_use("Read", {"file_path": str(sub / "code.py")}, id="r2")), sse(text("read it")))
    with api.serve() as url:
        gated = codeloop(["-p", "read", "--setting-sources", "user", "--allowedTools", "Read"], cwd=tmp_path,
                         base_url=url)
        full = codeloop(["-p", "read", "--allowedTools", "Read"], cwd=tmp_path, base_url=url)
    assert gated.returncode == 0 and full.returncode == 0, gated.stderr + full.stderr
    assert "NESTED-PROJECT-MARKER" not in json.dumps(api.requests[1].messages)
    assert "NESTED-PROJECT-MARKER" in json.dumps(api.requests[3].messages)


async def test_builtin_output_style_changes_system_prompt_and_init(tmp_path):
    cli = _real_cli(tmp_path)
    api = ScriptedAPI(sse(text("plain")), sse(text("styled")))
    preset = {"type": "preset", "preset": "claude_code"}   # the SDK's default is an empty system prompt
    with api.serve() as url:
        plain = [m async for m in query(prompt="hi", options=options(cli, url, tmp_path, system_prompt=preset))]
        styled = [m async for m in query(prompt="hi", options=options(
            cli, url, tmp_path, system_prompt=preset, settings=json.dumps({"outputStyle": "Explanatory"})))]
    init_plain = next(m for m in plain if isinstance(m, SystemMessage) and m.subtype == "init")
    init_styled = next(m for m in styled if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init_plain.data["output_style"] == "default" and init_styled.data["output_style"] == "Explanatory"
    base, explained = api.requests[0].system_text, api.requests[1].system_text
    assert "Output style: Explanatory" in explained and "Insight" in explained
    assert "Output style" not in base
    # every non-default style drops the efficient-output instruction but keeps the coding ones
    assert "Be concise and direct" in base and "Be concise and direct" not in explained
    assert "Read files before changing them" in explained


def test_custom_output_style_from_project_folder(tmp_path):
    styles = tmp_path / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "pirate.md").write_text("---\nname: Pirate\ndescription: talks like a pirate\n---\n"
                                      "Always answer as a pirate would. PIRATE-STYLE-MARKER\n")
    (styles / "keeper.md").write_text("---\nkeep-coding-instructions: true\n---\nKEEPER-STYLE-MARKER\n")
    api = ScriptedAPI(sse(text("arr")), sse(text("kept")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--output-format", "stream-json", "--verbose",
                      "--settings", json.dumps({"outputStyle": "pirate"})], cwd=tmp_path, base_url=url)
        k = codeloop(["-p", "hi", "--settings", json.dumps({"outputStyle": "keeper"})], cwd=tmp_path, base_url=url)
    assert r.returncode == 0 and k.returncode == 0, r.stderr + k.stderr
    init = json.loads(r.stdout.splitlines()[0])
    assert init["subtype"] == "init" and init["output_style"] == "Pirate"
    pirate, keeper = api.requests[0].system_text, api.requests[1].system_text
    # a custom style replaces the coding instructions unless it keeps them; its text follows the
    # environment (only the per-turn hint of deferred tools comes after it)
    assert pirate.index("PIRATE-STYLE-MARKER") > pirate.index("<env>")
    assert "Read files before changing them" not in pirate
    assert "deferred tool" not in pirate[:pirate.index("PIRATE-STYLE-MARKER")]
    assert "KEEPER-STYLE-MARKER" in keeper and "Read files before changing them" in keeper


def test_unknown_output_style_warns_and_uses_default(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--settings", json.dumps({"outputStyle": "Nonexistent"})], cwd=tmp_path,
                     base_url=url)
    assert r.returncode == 0 and r.stdout.strip() == "ok"
    assert "output style 'Nonexistent' not found" in r.stderr
    assert "Be concise and direct" in api.requests[0].system_text


@pytest.mark.parametrize("value", ["{not json", "missing-settings.json", "[1, 2]"])
def test_invalid_settings_value_exits_1_with_one_line(tmp_path, value):
    api = ScriptedAPI(sse(text("never")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--settings", value], cwd=tmp_path, base_url=url)
    assert r.returncode == 1 and r.stdout == "" and not api.requests
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--settings" in r.stderr or value in r.stderr
    assert "Traceback" not in r.stderr
