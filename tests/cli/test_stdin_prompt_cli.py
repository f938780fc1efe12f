"""Piped input with a prompt, and prompts too big for the model (issue 13)."""

import json
import os
import subprocess
import sys

from fakeapi import ScriptedAPI, sse, text


def run(cwd, args, url, *, input=None, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    full.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                 "HOME": str(cwd)}, **(env or {}))
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full, input=input,
                          capture_output=True, text=True, timeout=120)


def test_piped_input_and_the_prompt_are_both_sent_stdin_first(tmp_path):
    api = ScriptedAPI(sse(text("It sets x.")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "explain this"], url, input="x = 1\nprint(x)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "It sets x.\n"
    assert api.requests[0].messages[0]["content"][-1]["text"] == "x = 1\nprint(x)\n\nexplain this"


def test_prompt_alone_when_stdin_is_empty(tmp_path):
    api = ScriptedAPI(sse(text("hi")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "just this"], url, input="")
    assert r.returncode == 0, r.stderr
    assert api.requests[0].messages[0]["content"][-1]["text"] == "just this"


def test_a_10mb_prompt_is_refused_whole_not_cut(tmp_path):
    line = "The quick brown fox jumps over the lazy dog; 0123456789 and some more words.\n"
    big = line * (10_500_000 // len(line))
    api = ScriptedAPI(sse(text("should not be asked")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "--output-format", "json"], url, input=big)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["is_error"] and "Prompt is too long" in res["result"] and "nothing was cut" in res["result"]
    assert api.requests == []                     # nothing half-sent
    # the prompt is kept whole in the transcript: nothing was lost either
    files = list((tmp_path / ".cfg" / "projects").rglob("*.jsonl"))
    entries = [json.loads(x) for f in files for x in f.read_text().splitlines()]
    prompts = [e for e in entries if e.get("type") == "user" and not e.get("isMeta")]
    assert any(json.dumps(e["message"]["content"]).count("quick brown fox") == big.count("quick brown fox")
               for e in prompts)


def test_a_large_prompt_under_the_window_reaches_the_model_whole(tmp_path):
    big = "".join(f"line {i}: some text to read\n" for i in range(20_000))   # ~560k chars, > the 120k snip size
    api = ScriptedAPI(sse(text("read it all")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "count the lines"], url, input=big)
    assert r.returncode == 0, r.stderr
    sent = api.requests[0].messages[0]["content"][-1]["text"]
    assert sent == big.rstrip("\n") + "\n\ncount the lines"
