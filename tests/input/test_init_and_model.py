"""Issue 17 items 10 and 14: /init sends the repository's real commands and layout; /model refuses
a name the Anthropic API does not serve."""

import json

from fakeapi import ScriptedAPI, sse, text
from inputhelpers import make_dispatcher


async def test_init_prompt_carries_the_commands_the_build_files_declare(tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "vitest run", "build": "tsc -b"}}))
    (tmp_path / "Makefile").write_text(".PHONY: check\ncheck:\n\tmake lint\nlint:\n\truff .\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n[tool.pytest.ini_options]\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "README.md").write_text("# x\n")
    api = ScriptedAPI(sse(text("wrote CLAUDE.md")))
    d, front = make_dispatcher(api, tmp_path)
    await d.on_submit("/init focus on the API")
    sent = api.requests[0].messages[-1]["content"][-1]["text"]
    assert "CLAUDE.md" in sent
    for fact in ("npm run test  (vitest run)", "npm run build  (tsc -b)", "make check", "make lint",
                 "python -m pytest", "src/", "README.md", "focus on the API"):
        assert fact in sent, fact


def test_init_survey_reads_no_build_file_leading_out_and_never_waits_on_a_fifo(tmp_path):
    import os
    import threading

    from codeloop.input.init_survey import commands_found

    outside = tmp_path / "secrets.json"
    outside.write_text(json.dumps({"scripts": {"test": "TOKEN=ghp_leaked123"}}))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "package.json").symlink_to(outside)
    os.mkfifo(repo / "Makefile")                        # nobody writes to it
    (repo / "pyproject.toml").write_text("[tool.mypy]\n")
    out: list[list[str]] = []
    worker = threading.Thread(target=lambda: out.append(commands_found(repo)), daemon=True)
    worker.start()
    worker.join(10)
    assert out, "/init's survey hung on a FIFO"
    assert out[0] == ["mypy .  — pyproject.toml (mypy)"] and "ghp_leaked123" not in str(out)


async def test_model_command_refuses_a_nonsense_name_and_accepts_an_alias(tmp_path):
    d, front = make_dispatcher(ScriptedAPI(), tmp_path)
    before = front.conv.config.model
    await d.on_submit("/model gpt-nonsense")
    assert "Model not changed" in front.text() and front.conv.config.model == before
    await d.on_submit("/model sonet")
    assert "did you mean sonnet?" in front.text() and front.conv.config.model == before
    await d.on_submit("/model haiku")
    assert front.conv.config.model == "claude-haiku-4-5"
