"""The REPL end to end in a real pseudo-terminal, against the scripted fake API over loopback."""

import json
import time


from fakeapi import ScriptedAPI, sse, text, tool_use


def transcript_entries(cwd):
    files = sorted((cwd / ".cfg" / "projects").rglob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def test_prompt_streams_the_answer_and_exit(tmp_path, run):
    api = ScriptedAPI(sse(text("Hello from the **fake** model.\n\nA second paragraph here.", chunks=5)))
    with api.serve() as url:
        t = run(url)
        t.line("say hello")
        t.expect("Hello from the")
        t.expect("A second paragraph here")
        t.ready()
        t.line("/exit")
        assert t.wait_exit() == 0
    assert api.requests[0].messages[-1]["content"][-1]["text"] == "say hello"
    assert any(e.get("type") == "assistant" for e in transcript_entries(tmp_path))


def test_exit_alias_and_ctrl_d(tmp_path, run):
    with ScriptedAPI().serve() as url:
        t = run(url)
        t.line(":q")
        assert t.wait_exit() == 0
        t = run(url)
        t.send("\x04")
        assert t.wait_exit() == 0


def test_input_typed_while_busy_is_queued_and_reaches_the_model(tmp_path, run):
    slow = sse(text("Working on the first thing.", delay=0.0))
    slow.chunks.insert(2, (2.5, b": still thinking\n\n"))
    api = ScriptedAPI(slow, sse(text("Handled the follow-up.")))
    with api.serve() as url:
        t = run(url)
        t.line("first thing")
        time.sleep(0.8)
        t.line("and a follow-up")
        t.expect("Working on the first thing")
        t.expect("Handled the follow-up", timeout=30)
        t.line("/exit")
        assert t.wait_exit() == 0
    assert len(api.requests) == 2
    assert "and a follow-up" in json.dumps(api.requests[1].messages)


def test_escape_interrupts_and_the_transcript_stays_clean(tmp_path, run):
    # The model asks for a slow Bash command; Esc while it runs aborts the turn.
    api = ScriptedAPI(sse(text("Running it."), tool_use("Bash", {"command": "sleep 20"})), sse(text("Done over.")))
    with api.serve() as url:
        t = run(url, "--dangerously-skip-permissions")
        t.line("run the slow thing")
        t.expect(r"Bash\(sleep 20\)")
        time.sleep(1.0)
        t.send("\x1b")
        t.expect("Interrupted", timeout=20)
        t.ready()
        t.line("try again")
        t.expect("Done over")
        t.line("/exit")
        assert t.wait_exit() == 0
    entries = transcript_entries(tmp_path)
    uses = {b["id"] for e in entries if e.get("type") == "assistant"
            for b in e["message"]["content"] if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for e in entries
               if e.get("type") == "user" and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"}
    assert uses and uses <= results
    second = api.requests[1].messages
    assert any("interrupted" in json.dumps(m).lower() for m in second)


def test_permission_prompt_yes_runs_the_tool(tmp_path, run):
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo perm-ok > made.txt"})), sse(text("Created it.")))
    with api.serve() as url:
        t = run(url, "--no-sandbox")   # the question is the subject: without the default sandbox Bash asks
        t.line("make the file")
        t.expect(r"Allow Bash\(echo perm-ok")
        t.expect(r"1\) Yes")
        time.sleep(0.3)
        t.send("1")
        t.expect("Created it")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert (tmp_path / "made.txt").read_text().strip() == "perm-ok"


def test_compact_command(tmp_path, run):
    api = ScriptedAPI(sse(text("First answer.")), sse(text("<summary>We talked about the first thing.</summary>")))
    with api.serve() as url:
        t = run(url)
        t.line("first")
        t.expect("First answer")
        t.ready()
        t.line("/compact")
        t.expect("Conversation compacted")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert any(e.get("subtype") == "compact_boundary" for e in transcript_entries(tmp_path))


def test_bash_mode_and_status_while_busy(tmp_path, run):
    slow = sse(text("Slow answer."))
    slow.chunks.insert(2, (2.0, b": wait\n\n"))
    api = ScriptedAPI(slow)
    with api.serve() as url:
        t = run(url)
        t.line("!echo bash-mode-output")
        t.expect("bash-mode-output")
        t.line("question")
        time.sleep(0.6)
        t.line("/status")  # immediate: answered while the query is still running
        t.expect("Permission mode")
        t.expect("Slow answer")
        t.line("/exit")
        assert t.wait_exit() == 0
    assert "bash-mode-output" in json.dumps(api.requests[0].messages)
