"""Issue 33: two terminals, one session. Real `codeloop` processes resume one session at once:
one holds it, every other forks it (a new session id, said in one line on stderr) or — with
--no-fork-busy — is refused with the holder's pid; a writer killed with SIGKILL never blocks the
next resume; every transcript keeps each prompt with its own answer, and so does the history the
next `--resume` sends (judged at the fake server)."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from fakeapi import ScriptedAPI, sse, stalled, text, tool_use
from test_print_mode import codeloop, jsonl

FORK_LINE = "is in use by another codeloop"


def _env(cwd, url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd)})
    return env


def _start(args, cwd, url):
    return subprocess.Popen([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=_env(cwd, url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _said(content):
    """What a message says: its text, or its last text block (context blocks come first)."""
    return content if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"][-1]


def _prompt_text(req):
    return _said(req.messages[-1]["content"])


class Model:
    """Answers "answer to <prompt>"; prompts starting with "parallel" wait until `n` of them are in
    (every process is running at once); a prompt starting with "slow" is held open until `release`,
    and so is the turn after a tool call; "run <command>" asks for that Bash command."""

    def __init__(self, n=0):
        self.barrier = threading.Barrier(n, timeout=120) if n > 1 else None
        self.slow_arrived, self.release = threading.Event(), threading.Event()
        self.api = ScriptedAPI(*[self.answer] * 200)

    def answer(self, req):
        last = req.messages[-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            prompt = "slow: after the tool"   # the tool's turn goes on: held open like a slow prompt
        elif (prompt := _prompt_text(req)).startswith("run "):
            return sse(tool_use("Bash", {"command": prompt[4:]}))
        if prompt.startswith("parallel") and self.barrier is not None:
            self.barrier.wait()
        if prompt.startswith("slow"):
            self.slow_arrived.set()
            if not self.release.wait(120):
                return stalled(text("never"))
        return sse(text(f"answer to {prompt}"))


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _project(cwd):
    [folder] = (cwd / ".cfg" / "projects").iterdir()
    return folder


def _judge_history(messages):
    """Each prompt followed by its own answer, roles alternating."""
    texts = [(m["role"], _said(m["content"])) for m in messages]
    for (role, said), nxt in zip(texts, texts[1:], strict=False):
        assert role != nxt[0], texts
        if role == "user":
            assert nxt[1] == f"answer to {said}", texts
    return [said for role, said in texts if role == "user"]


def _judge_transcript(path):
    """One chain (no two records hang off one parent) whose messages pair each prompt with its answer."""
    chain = [r for r in _records(path) if r.get("type") in ("user", "assistant", "system")]
    parents = [r["parentUuid"] for r in chain if r.get("parentUuid")]
    assert len(parents) == len(set(parents)), path
    messages = [{"role": r["type"], "content": r["message"]["content"]} for r in chain
                if r["type"] in ("user", "assistant")]
    return _judge_history(messages)


def _first_session(tmp_path, url):
    r = codeloop(["-p", "first", "--output-format", "json"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["session_id"]


@pytest.mark.parametrize("n", [2, 5, 20])
def test_concurrent_resumes_fork_and_never_interleave(tmp_path, n):
    model = Model(n)
    with model.api.serve() as url:
        sid = _first_session(tmp_path, url)
        procs = [_start(["-p", f"parallel {i}", "--resume", sid, "--output-format", "json"], tmp_path, url)
                 for i in range(n)]
        outs = [(p.communicate(timeout=240), p.returncode) for p in procs]
        ids = {}
        for i, ((out, err), code) in enumerate(outs):
            assert code == 0, err
            got = json.loads(out)["session_id"]
            ids[i] = got
            said = [line for line in err.splitlines() if FORK_LINE in line]
            if got == sid:
                assert said == []
            else:   # one line, naming both sessions and the holder's pid
                assert len(said) == 1 and sid in said[0] and got in said[0] and "pid " in said[0], err
        # every process ran at once (the model answered none before all had asked): one held it
        assert list(ids.values()).count(sid) == 1 and len(set(ids.values())) == n
        for i, got in ids.items():
            prompts = _judge_transcript(_project(tmp_path) / f"{got}.jsonl")
            assert prompts == ["first", f"parallel {i}"]
        assert not list(_project(tmp_path).glob("*.lock"))   # every holder let go
        # the next resume of each sends a history where each prompt keeps its own answer
        for i, got in [*ids.items()][:3]:
            before = len(model.api.requests)
            r = codeloop(["-p", "next", "--resume", got, "--output-format", "json"], cwd=tmp_path, base_url=url)
            assert r.returncode == 0 and json.loads(r.stdout)["session_id"] == got and FORK_LINE not in r.stderr
            [req] = model.api.requests[before:]
            assert _judge_history(req.messages) == ["first", f"parallel {i}", "next"]


def test_killed_writer_never_blocks_and_the_resume_stays_in_the_session(tmp_path):
    model = Model()
    with model.api.serve() as url:
        sid = _first_session(tmp_path, url)
        writer = _start(["-p", "slow one", "--resume", sid], tmp_path, url)
        try:
            assert model.slow_arrived.wait(120)   # it holds the session and waits on the model
            r = codeloop(["sessions", "list", "--json"], cwd=tmp_path)
            [row] = json.loads(r.stdout)
            assert row["session_id"] == sid and row["live"]["pid"] == writer.pid
            text_list = codeloop(["sessions", "list"], cwd=tmp_path).stdout
            assert f"[live: pid {writer.pid}" in text_list
            shown = json.loads(codeloop(["sessions", "show", sid, "--json"], cwd=tmp_path).stdout)
            assert shown["live"]["pid"] == writer.pid
            assert f"live: pid {writer.pid}" in codeloop(["sessions", "show", sid], cwd=tmp_path).stdout
            # --fork-session of it copies up to its last finished turn, never the one in flight
            r = codeloop(["-p", "forked on purpose", "--resume", sid, "--fork-session", "--output-format", "json"],
                         cwd=tmp_path, base_url=url)
            forked = json.loads(r.stdout)["session_id"]
            assert r.returncode == 0 and forked != sid and FORK_LINE not in r.stderr
            assert _judge_transcript(_project(tmp_path) / f"{forked}.jsonl") == ["first", "forked on purpose"]
            # refused on request, naming the holder; by flag and by setting
            r = codeloop(["-p", "x", "--resume", sid, "--no-fork-busy"], cwd=tmp_path, base_url=url)
            assert r.returncode == 1 and f"pid {writer.pid}" in r.stderr and len(r.stderr.splitlines()) == 1
            r = codeloop(["-p", "x", "--resume", sid, "--settings", '{"forkBusySession": false}'], cwd=tmp_path,
                         base_url=url)
            assert r.returncode == 1 and f"pid {writer.pid}" in r.stderr
            os.kill(writer.pid, signal.SIGKILL)
            assert writer.wait(60) == -signal.SIGKILL
        finally:
            model.release.set()
            if writer.poll() is None:
                writer.kill()
            writer.communicate()
        assert (_project(tmp_path) / f"{sid}.lock").exists()   # left behind by the killed writer
        assert json.loads(codeloop(["sessions", "list", "--json"], cwd=tmp_path).stdout)[0]["live"] is None
        before = len(model.api.requests)
        r = codeloop(["-p", "after", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0 and json.loads(r.stdout)["session_id"] == sid and FORK_LINE not in r.stderr
        [req] = model.api.requests[before:]
        said = [(m["role"], _said(m["content"])) for m in req.messages]
        assert said[:2] == [("user", "first"), ("assistant", "answer to first")]
        assert "after" in said[-1][1]


def test_a_child_outliving_a_killed_writer_holds_nothing(tmp_path):
    """The lock's descriptor is close-on-exec: a command the writer started (here a background
    `sleep`) that outlives it does not keep the session held."""
    model = Model()
    pidfile = tmp_path / "sleep.pid"
    command = f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}"
    with model.api.serve() as url:
        sid = _first_session(tmp_path, url)
        writer = _start(["-p", f"run {command}", "--resume", sid, "--allowedTools", "Bash"], tmp_path, url)
        try:
            assert model.slow_arrived.wait(120)
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait(60)
        finally:
            model.release.set()
            if writer.poll() is None:
                writer.kill()
            writer.communicate()
        sleeper = int(pidfile.read_text())
        try:
            os.kill(sleeper, 0)   # still running, its parent gone
            assert json.loads(codeloop(["sessions", "list", "--json"], cwd=tmp_path).stdout)[0]["live"] is None
            r = codeloop(["-p", "after", "--resume", sid, "--output-format", "json"], cwd=tmp_path, base_url=url)
            assert r.returncode == 0 and json.loads(r.stdout)["session_id"] == sid and FORK_LINE not in r.stderr
        finally:
            os.kill(sleeper, signal.SIGKILL)


def test_stream_json_resume_of_a_live_session_forks_and_init_says_so(tmp_path):
    model = Model()
    with model.api.serve() as url:
        sid = _first_session(tmp_path, url)
        writer = _start(["-p", "slow one", "--resume", sid], tmp_path, url)
        try:
            assert model.slow_arrived.wait(120)
            line = json.dumps({"type": "user", "message": {"role": "user", "content": "over the wire"}})
            r = codeloop(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                          "--resume", sid], cwd=tmp_path, base_url=url, input=line + "\n")
        finally:
            model.release.set()
            writer.communicate(timeout=120)
        assert r.returncode == 0, r.stderr
        events = jsonl(r.stdout)
        init = next(e for e in events if e.get("subtype") == "init")
        assert init["session_id"] != sid and events[-1]["session_id"] == init["session_id"]
        assert [line for line in r.stderr.splitlines() if FORK_LINE in line] != []
        assert _judge_transcript(_project(tmp_path) / f"{init['session_id']}.jsonl") == ["first", "over the wire"]
        # the holder finished in its own session, untouched by the fork
        assert _judge_transcript(_project(tmp_path) / f"{sid}.jsonl") == ["first", "slow one"]


OLD_SID = "33333333-3333-4333-8333-333333333333"


def _old_interleaved(tmp_path):
    """A transcript an older codeloop wrote when two processes resumed it at once: both prompts hang
    off the same answer, their records interleaved."""
    from pathlib import Path

    from codeloop.session.store import project_key

    fixture = Path(__file__).parent.parent / "fixtures" / "sessions" / f"{OLD_SID}.jsonl"
    folder = tmp_path / ".cfg" / "projects" / project_key(tmp_path.resolve())
    folder.mkdir(parents=True)
    (folder / fixture.name).write_bytes(fixture.read_bytes())
    return folder / fixture.name


def test_old_interleaved_transcript_resumes_along_one_chain_and_the_other_stays_reachable(tmp_path):
    path = _old_interleaved(tmp_path)
    model = Model()
    with model.api.serve() as url:
        # the newest leaf's chain: the second conversation, whole; the first is not merged into it
        r = codeloop(["-p", "next", "--resume", OLD_SID], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        assert _judge_history(model.api.requests[-1].messages) == ["first", "parallel 2", "next"]
        # the other branch, by its leaf
        r = codeloop(["-p", "back on one", "--resume", OLD_SID, "--resume-session-at",
                      "00000012-0000-4000-8000-000000000000"], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        assert _judge_history(model.api.requests[-1].messages) == ["first", "parallel 1", "back on one"]
        # and a plain resume now goes on from there
        r = codeloop(["-p", "then", "--resume", OLD_SID], cwd=tmp_path, base_url=url)
        assert r.returncode == 0, r.stderr
        assert _judge_history(model.api.requests[-1].messages) == ["first", "parallel 1", "back on one", "then"]
    # the file still holds every branch
    said = {_said(r["message"]["content"]) for r in _records(path) if r.get("type") == "user"}
    assert {"parallel 1", "parallel 2", "next", "back on one", "then"} <= said
