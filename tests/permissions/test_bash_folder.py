"""Bash is judged from the folder it runs in: the shell keeps the folder an earlier call `cd`-ed
into, so after `cd /elsewhere` a `touch made.txt` that a rule allows inside the project writes
outside it and must ask (found while red-teaming issue 25: relative paths were resolved from the
project, so the second call looked like a write of a project file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_print_mode import codeloop  # noqa: E402  (the CLI-as-subprocess helper)


def run(tmp_path: Path, commands: list[str], *flags: str,
        env: dict[str, str] | None = None) -> tuple[ScriptedAPI, dict]:
    api = ScriptedAPI(*[sse(tool_use("Bash", {"command": c}, id=f"c{i}")) for i, c in enumerate(commands)],
                      sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "go", "--output-format", "json", *flags], cwd=tmp_path, base_url=url, env=env)
    assert r.returncode == 0, r.stderr
    return api, json.loads(r.stdout)


def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()
    config = tmp_path / ".git" / "config"
    config.write_text("[core]\n\tbare = false\n")
    return config


def test_a_protected_git_config_is_refused_after_cd(tmp_path):
    config = project(tmp_path)
    _, res = run(tmp_path, ["cd src", "echo '[core]' > ../.git/config; echo 'fsmonitor = evil' >> ../.git/config"],
                 "--dangerously-skip-permissions")
    assert config.read_text() == "[core]\n\tbare = false\n"
    assert [d["tool_use_id"] for d in res["permission_denials"]] == ["c1"]


def test_a_relative_write_after_cd_that_the_rule_covers_still_runs(tmp_path):
    project(tmp_path)
    _, res = run(tmp_path, ["cd src", "touch made.txt"], "--allowedTools", "Bash(cd:*),Bash(touch:*)")
    assert (tmp_path / "src" / "made.txt").exists() and not res["permission_denials"]


def test_a_write_after_cd_outside_the_project_asks(tmp_path):
    project(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    _, res = run(tmp_path, [f"cd {outside}", "touch made.txt"], "--allowedTools", "Bash(cd:*),Bash(touch:*)")
    assert not (outside / "made.txt").exists()
    assert "c1" in [d["tool_use_id"] for d in res["permission_denials"]]
