"""Issue 17 item 10: flag mistakes get one line and the closest valid name (the CLI as a subprocess)."""

import json

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop


def test_unknown_flag_is_one_line_with_the_closest_flag(tmp_path):
    r = codeloop(["-p", "x", "--verbos"], cwd=tmp_path, input="")
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) <= 2 and "usage:" not in r.stderr
    assert "'--verbos'" in lines[0] and "did you mean --verbose?" in lines[0]
    r = codeloop(["-p", "x", "--alowedTools", "Read"], cwd=tmp_path, input="")
    assert r.returncode == 1 and "did you mean --allowedTools?" in r.stderr


def test_extra_words_say_to_quote_the_prompt(tmp_path):
    r = codeloop(["-p", "fix", "the", "bug"], cwd=tmp_path, input="")
    assert r.returncode == 1 and "usage:" not in r.stderr
    assert "quote a prompt" in r.stderr


def test_unknown_tool_name_warns_with_the_closest_and_the_run_goes_on(tmp_path):
    api = ScriptedAPI(sse(text("done")))
    with api.serve() as url:
        r = codeloop(["-p", "say done", "--allowedTools", "Reed,Bash(git:*)", "mcp__srv__tool"], cwd=tmp_path,
                     base_url=url, input="")
    assert r.returncode == 0, r.stderr
    assert "unknown tool 'Reed' (did you mean Read?)" in r.stderr
    assert "Bash" not in r.stderr and "mcp__srv__tool" not in r.stderr
    assert r.stdout.strip() == "done"


def test_variadic_tool_flag_gives_the_prompt_back(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "--output-format", "json", "--allowedTools", "Read", "Edit", "fix the failing test"],
                     cwd=tmp_path, base_url=url, input="")
    assert r.returncode == 0, r.stderr
    assert "fix the failing test" in json.dumps(api.requests[0].messages)
    assert "unknown tool" not in r.stderr  # Read and Edit stayed tools


def test_variadic_flag_then_lower_case_word_is_the_prompt(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "--disallowedTools", "Bash", "hello"], cwd=tmp_path, base_url=url, input="")
    assert r.returncode == 0, r.stderr
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "hello"


def test_misspelt_model_warns(tmp_path):
    api = ScriptedAPI(sse(text("ok")))
    with api.serve() as url:
        r = codeloop(["-p", "hi", "--model", "sonet"], cwd=tmp_path, base_url=url, input="")
    assert "unknown model 'sonet' (did you mean sonnet?)" in r.stderr
    r = codeloop(["-p", "hi", "--model", "gpt-4o"], cwd=tmp_path, input="",
                 env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert "--model openai:gpt-4o" in r.stderr


def test_no_key_says_where_to_get_one_and_offers_other_providers(tmp_path):
    from nolocal import env_without_local_model   # with the embedded model installed it would serve instead

    r = codeloop(["-p", "hi"], cwd=tmp_path, input="",
                 env={"ANTHROPIC_API_KEY": "", **env_without_local_model(tmp_path)})
    assert r.returncode == 1
    assert "ANTHROPIC_API_KEY is not set" in r.stderr
    for hint in ("console.anthropic.com", "--model openai:", "--model ollama:",
                 "pip install 'codeloop[local,local-model]'"):
        assert hint in r.stderr, hint


def test_readme_first_example_works_in_an_empty_folder(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith('codeloop -p "create hello.py'))
    prompt = re.search(r'-p "([^"]+)"', line).group(1)
    tools = line.split("--allowedTools ", 1)[1].split("  ")[0].replace('"', "")
    hello = tmp_path / "hello.py"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(hello), "content": "print('hello there')\n"})),
                      sse(tool_use("Bash", {"command": "python3 hello.py"})),
                      sse(text("Created and ran hello.py.")))
    with api.serve() as url:
        r = codeloop(["-p", prompt, "--allowedTools", tools, "--output-format", "json"], cwd=tmp_path,
                     base_url=url, input="")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["permission_denials"] == []
    assert hello.read_text() == "print('hello there')\n"
    assert "hello there" in json.dumps(api.requests[2].messages)
