"""Untrusted repositories through the real CLI (issue 25, items 6 and 5): a project's CLAUDE.md or
nested CLAUDE.md linking to a secret never reaches the API and is warned about once; a subfolder's
own settings need the subfolder's own trust, while a trusted folder's own settings still act."""

from __future__ import annotations

import json
import os
import stat

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl

SECRET = "sk-ant-api03-SECRETSECRETSECRET"


def sent(api) -> str:
    return "\n".join(json.dumps(r.body) for r in api.requests)


def make_home(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    return home


def stream_lines(*prompts: str) -> str:
    return "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p},
                               "parent_tool_use_id": None, "session_id": ""}) + "\n" for p in prompts)


def test_a_claude_md_linking_to_a_secret_never_reaches_the_api(tmp_path):
    home = make_home(tmp_path)
    proj = tmp_path / "clone"
    (proj / ".git").mkdir(parents=True)
    (proj / "CLAUDE.md").symlink_to(home / ".ssh" / "id_rsa")
    (proj / "CLAUDE.local.md").symlink_to("/proc/self/environ")
    (proj / "docs").mkdir()
    (proj / "docs" / "rules.md").write_text("Project rule: use tabs.")
    (proj / ".claude").mkdir()
    (proj / ".claude" / "CLAUDE.md").symlink_to("../docs/rules.md")        # inside the project: read
    (tmp_path / "dotfiles.md").write_text("User rule: be brief.")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").symlink_to(tmp_path / "dotfiles.md")  # the user's own link: read
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    env = {"HOME": str(home), "CANARY_VALUE": "env-canary-42"}
    with api.serve() as url:
        r = codeloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
                     cwd=proj, base_url=url, env=env, input=stream_lines("a", "b"))
    assert r.returncode == 0, r.stderr
    body = sent(api)
    assert len(api.requests) == 2
    assert SECRET not in body and "env-canary-42" not in body and "ANTHROPIC_API_KEY" not in body
    assert "Project rule: use tabs." in body and "User rule: be brief." in body
    # two queries re-read the instructions; each skipped file is said once, in one line
    said = r.stderr + r.stdout
    assert said.count(f"{proj / 'CLAUDE.md'}: it resolves to") == 1
    assert said.count(f"{proj / 'CLAUDE.local.md'}: it resolves to") == 1
    warning = next(line for line in r.stderr.splitlines() if str(proj / "CLAUDE.md") in line)
    assert warning.startswith("codeloop: warning: skipped instructions") and "outside the project" in warning


def test_a_nested_claude_md_linking_to_a_secret_is_not_attached_and_is_reported(tmp_path):
    home = make_home(tmp_path)
    proj = tmp_path / "clone"
    (proj / ".git").mkdir(parents=True)
    (proj / "api").mkdir()
    (proj / "api" / "handler.py").write_text("def handle(): ...\n")
    (proj / "api" / "CLAUDE.md").symlink_to(home / ".ssh" / "id_rsa")
    (proj / "web").mkdir()
    (proj / "web" / "app.ts").write_text("export {}\n")
    (proj / "web" / "CLAUDE.md").write_text("Web rule: no semicolons.")     # a plain nested file: attached
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(proj / "api" / "handler.py")}, id="r1"),
                          tool_use("Read", {"file_path": str(proj / "web" / "app.ts")}, id="r2")),
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "look", "--output-format", "stream-json", "--verbose"], cwd=proj, base_url=url,
                     env={"HOME": str(home)})
    assert r.returncode == 0, r.stderr
    body = sent(api)
    assert SECRET not in body and "Web rule: no semicolons." in body
    warnings = [line for line in jsonl(r.stdout) if line.get("subtype") == "context_warning"]
    assert len(warnings) == 1 and str(proj / "api" / "CLAUDE.md") in warnings[0]["message"]
    assert "outside the project" in warnings[0]["message"]


def test_print_text_mode_reports_a_skipped_nested_file_on_stderr(tmp_path):
    home = make_home(tmp_path)
    proj = tmp_path / "clone"
    (proj / "api").mkdir(parents=True)
    (proj / "api" / "handler.py").write_text("x = 1\n")
    (proj / "api" / "CLAUDE.local.md").symlink_to(home / ".ssh" / "id_rsa")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(proj / "api" / "handler.py")})), sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "look"], cwd=proj, base_url=url, env={"HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert SECRET not in sent(api) and r.stdout == "ok\n"
    assert r.stderr.count(str(proj / "api" / "CLAUDE.local.md")) == 1


# -- a subfolder's own configuration (item 5) -----------------------------------------------------

def _hooked_settings(folder, marker):
    script = folder / "hook.sh"
    folder.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (folder / ".claude").mkdir(exist_ok=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(script)}]}]}}))


def _trust_file(cfg, *folders):
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "trusted-folders.json").write_text(json.dumps(
        {"folders": {os.path.realpath(f): {"trusted_at": "2025-01-01T00:00:00+00:00"} for f in folders}}))


def test_a_planted_subfolder_settings_file_does_not_run_under_a_trusted_parent(tmp_path):
    home, cfg = tmp_path / "home", tmp_path / "cfg"
    home.mkdir()
    parent = tmp_path / "work"
    sub = parent / "pkg"
    parent_mark, sub_mark = tmp_path / "parent-hook-ran", tmp_path / "sub-hook-ran"
    _hooked_settings(parent, parent_mark)
    _hooked_settings(sub, sub_mark)                    # planted: hooks in the subfolder's own settings
    (sub / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"command": "sh", "args": [
        "-c", f"touch {tmp_path / 'mcp-ran'}"]}}}))
    _trust_file(cfg, parent)
    env = {"HOME": str(home), "CODELOOP_CONFIG_DIR": str(cfg)}
    api = ScriptedAPI(sse(text("ok")), sse(text("ok")), sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=parent, base_url=url, env=env)          # the trusted folder itself
        assert r.returncode == 0, r.stderr
        assert parent_mark.read_text() == "ran\n"                               # its own settings act
        r = codeloop(["-p", "hi"], cwd=sub, base_url=url, env=env)             # the subfolder: not covered
        assert r.returncode == 0, r.stderr
        assert not sub_mark.exists() and not (tmp_path / "mcp-ran").exists()
        assert f"the trust given to {os.path.realpath(parent)} does not extend" in r.stderr
        assert "ignored hooks from" in r.stderr and "ignored MCP servers from" in r.stderr
        _trust_file(cfg, parent, sub)                  # the user trusts the subfolder itself
        r = codeloop(["-p", "hi"], cwd=sub, base_url=url, env=env)
    assert r.returncode == 0, r.stderr
    assert sub_mark.read_text() == "ran\n" and "does not extend" not in r.stderr


def test_a_plain_subfolder_of_a_trusted_folder_starts_without_a_word(tmp_path):
    home, cfg = tmp_path / "home", tmp_path / "cfg"
    home.mkdir()
    sub = tmp_path / "work" / "docs"
    sub.mkdir(parents=True)
    (sub / "CLAUDE.md").write_text("Docs rule: short sentences.")   # instructions are not configuration
    _trust_file(cfg, tmp_path / "work")
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi"], cwd=sub, base_url=url, env={"HOME": str(home), "CODELOOP_CONFIG_DIR": str(cfg)})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "Docs rule: short sentences." in sent(api)
