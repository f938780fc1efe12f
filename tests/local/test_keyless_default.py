"""With no key and the embedded model installed, it serves by default (issue 34) — through the real CLI.

The embedded model is a loopback fake speaking Chat Completions SSE (`CODELOOP_LOCAL_BASE_URL`, which
also counts as "installed"); the model's absence is a subprocess whose sys.path lacks the runtime and
the chunk packages (`tests/nolocal.py`). Each front end — print mode, stream-json output, the SDKs'
stream-json input, the REPL — starts with the same one stderr line, reports `apiKeySource: none` and
the model's name, and runs the README's first example; with a key, nothing changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakeapi import ScriptedAPI, sse, text
from nolocal import env_without_local_model
from test_local_cli import reply

NOTICE = ("codeloop: no API key: using the embedded local model qwen2.5-coder-1.5b (a small model on this "
          "machine: slower and much weaker than Claude); set ANTHROPIC_API_KEY to use Claude")
MODEL = "local/qwen2.5-coder-1.5b"
README_PROMPT = "create hello.py that prints a greeting, then run it"
INSTALL = "pip install 'codeloop[local,local-model]'"


def run(args, *, cwd, env=None, input=None, timeout=120):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CODELOOP_", "OPENAI_", "OPENROUTER_", "OLLAMA_"))}
    full.update({"CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd)})
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout, input=input)


def first_example_replies() -> ScriptedAPI:
    """The embedded model doing the README's first example: Write, then Bash, then the answer."""
    write = {"file_path": "hello.py", "content": "print('hello there')\n"}
    return ScriptedAPI(
        reply(json.dumps({"name": "Write", "arguments": write})),
        reply(json.dumps({"name": "Bash", "arguments": {"command": "python3 hello.py"}})),
        reply(json.dumps({"answer": "Created hello.py; it printed hello there."})))


FRONT_ENDS = {
    "text": (["-p", README_PROMPT], None),
    "stream-json": (["-p", README_PROMPT, "--output-format", "stream-json", "--verbose"], None),
    "sdk": (["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
            json.dumps({"type": "user", "message": {"role": "user", "content": README_PROMPT}}) + "\n"),
}


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_no_key_runs_the_readme_example_on_the_embedded_model(front_end, tmp_path):
    args, stdin = FRONT_ENDS[front_end]
    api = first_example_replies()
    with api.serve() as url:
        r = run([*args, "--allowedTools", "Write,Bash(python3 hello.py)"], cwd=tmp_path, input=stdin,
                env={"CODELOOP_LOCAL_BASE_URL": url + "/v1"})
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == NOTICE and r.stderr.count("no API key") == 1
    assert (tmp_path / "hello.py").read_text() == "print('hello there')\n"
    assert len(api.requests) == 3 and all(q.path == "/v1/chat/completions" for q in api.requests)
    assert "hello there" in json.dumps(api.requests[2].body["messages"])   # Bash ran for real
    if front_end == "text":
        assert r.stdout.strip() == "Created hello.py; it printed hello there."
        return
    events = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    init = next(e for e in events if e.get("subtype") == "init")
    assert init["apiKeySource"] == "none" and init["model"] == MODEL
    assert set(init["tools"]) == {"Read", "Edit", "Write", "Bash", "Glob", "Grep"}   # the local profile
    assert events[-1]["subtype"] == "success" and events[-1]["permission_denials"] == []


def test_with_a_key_nothing_changes(tmp_path):
    api = ScriptedAPI(sse(text("Claude here.")))
    with api.serve() as url:   # the embedded model counts as installed: the key still wins
        r = run(["-p", "hi", "--output-format", "stream-json", "--verbose"], cwd=tmp_path,
                env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_LOCAL_BASE_URL": url + "/v9"})
    assert r.returncode == 0, r.stderr
    assert "no API key" not in r.stderr and api.requests[0].path == "/v1/messages"
    init = json.loads(r.stdout.splitlines()[0])
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY" and not init["model"].startswith("local")


@pytest.mark.parametrize("chosen", [["--model", "sonnet"], []])
def test_a_chosen_claude_model_without_a_key_is_the_one_line_error(chosen, tmp_path):
    """Naming Claude (flag or ANTHROPIC_MODEL) is no request for the embedded model: the error
    says it is installed and how to use it."""
    env = {"CODELOOP_LOCAL_BASE_URL": "http://127.0.0.1:9/v1"}
    if not chosen:
        env["ANTHROPIC_MODEL"] = "opus"
    r = run(["-p", "hi", *chosen], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "no API key:" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("Error: ANTHROPIC_API_KEY is not set.")
    assert "--model local (the embedded model, installed)" in r.stderr and INSTALL not in r.stderr


@pytest.mark.parametrize("output", ["text", "json"])
def test_not_installed_is_one_line_naming_the_install_command(output, tmp_path):
    r = run(["-p", "hi", "--output-format", output], cwd=tmp_path, env=env_without_local_model(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "no API key:" not in r.stderr
    message = r.stderr if output == "text" else json.loads(r.stdout)["errors"][0]
    assert len(message.strip().splitlines()) == 1 and "ANTHROPIC_API_KEY is not set." in message
    assert message.count("pip install") == 1 and f"{INSTALL} (about 1.1 GB)" in message
    assert "console.anthropic.com" in message and "--model openai:" in message


# -- the door: one resolution for every front end ---------------------------------------------------

@pytest.fixture
def keyless_env(tmp_path, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
                "CODELOOP_PROVIDER", "ANTHROPIC_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CODELOOP_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("interactive", [False, True])
def test_the_door_chooses_the_embedded_model_for_every_front_end(keyless_env, interactive):
    from codeloop.cli.startup.options import options_from_argv

    options = options_from_argv(["-p", "hi"] if not interactive else [], interactive=interactive)
    assert options.model.keyless and options.model.provider == "local" and options.local_profile
    assert options.model.model == "qwen2.5-coder-1.5b" and options.tools == ("Read", "Edit", "Write", "Bash",
                                                                             "Glob", "Grep")


@pytest.mark.parametrize("why", ["settings env key", "openai key", "settings model", "provider variable",
                                 "model flag", "not installed"])
def test_the_door_keeps_the_choice_when_anything_names_one(keyless_env, monkeypatch, why):
    from codeloop.cli.startup.options import options_from_argv

    settings = keyless_env / ".cfg-settings.json"
    argv = ["-p", "hi"]
    if why == "settings env key":
        settings.write_text(json.dumps({"env": {"ANTHROPIC_API_KEY": "k"}}))
        argv += ["--settings", str(settings)]
    elif why == "openai key":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    elif why == "settings model":
        settings.write_text(json.dumps({"model": "opus"}))
        argv += ["--settings", str(settings)]
    elif why == "provider variable":
        monkeypatch.setenv("CODELOOP_PROVIDER", "anthropic")
    elif why == "model flag":
        argv += ["--model", "haiku"]
    else:
        monkeypatch.delenv("CODELOOP_LOCAL_BASE_URL")
        monkeypatch.setattr("codeloop.providers.local_model.chunk_files", lambda model: None)
    options = options_from_argv(argv)
    assert not options.model.keyless and options.model.provider == "anthropic" and not options.local_profile
