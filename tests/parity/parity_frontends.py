"""The four ways into codeloop, driven black-box the same way for every capability of the matrix.

Each front end offers two scenarios:

    ask(project, url, prompt)                    one prompt, run until its answer (or a question)
    model_then_compact(project, url, start, new) a first prompt on `start`, the switch to `new`
                                                 as that front end does it, then /compact

and returns an `Outcome` (what the user or caller saw). What the harness sent is read from the
fake model afterwards. Front ends:

    repl         the interactive session on a real pseudo-terminal, judged by the emulated screen
    print        `codeloop -p PROMPT --output-format json` (one-shot; /compact on a --resume)
    stream-json  `-p --input-format stream-json --output-format stream-json --verbose`
    sdk          the official claude-agent-sdk with ClaudeAgentOptions(cli_path=...)

Nothing sleeps for a fixed time: every wait is for a condition, with a generous ceiling that only
guards against a hang.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paritykit import DONE, Project

HANG = 120.0   # seconds: a hang guard, never a timing assertion
SDK_SOURCES = ["user", "project", "local"]


@dataclass
class Outcome:
    """What the front end showed: its output (stdout, screen or SDK messages) and final answer."""
    front_end: str
    output: str
    stderr: str = ""
    returncode: int | None = None
    final: str | None = None

    def __str__(self) -> str:
        return (f"[{self.front_end}] exit={self.returncode} final={self.final!r}\n--- output ---\n"
                f"{self.output[-4000:]}\n--- stderr ---\n{self.stderr[-3000:]}")


def _codeloop(*args: str) -> list[str]:
    return [sys.executable, "-m", "codeloop", *args]


def _jsonl(out: str) -> list[dict[str, Any]]:
    lines = []
    for line in out.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return lines


def _user_line(content: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content},
                       "parent_tool_use_id": None, "session_id": ""}) + "\n"


# -- print mode -------------------------------------------------------------------------------------
class PrintMode:
    name = "print"

    def _run(self, project: Project, url: str, prompt: str, *args: str) -> Outcome:
        r = subprocess.run(_codeloop("-p", prompt, "--output-format", "json", *args), cwd=project.dir,
                           env=project.env(url), capture_output=True, text=True, timeout=HANG)
        final = None
        try:
            final = json.loads(r.stdout).get("result")
        except (json.JSONDecodeError, AttributeError):
            pass
        return Outcome(self.name, r.stdout, r.stderr, r.returncode, final)

    def ask(self, project: Project, url: str, prompt: str) -> Outcome:
        return self._run(project, url, prompt)

    def model_then_compact(self, project: Project, url: str, start: str, new: str) -> Outcome:
        first = self._run(project, url, "hello", "--model", start)
        try:
            sid = json.loads(first.output)["session_id"]
        except (json.JSONDecodeError, KeyError) as exc:
            raise AssertionError(f"the first print-mode run gave no session id ({exc}):\n{first}") from None
        return self._run(project, url, "/compact", "--resume", sid, "--model", new)


# -- stream-json ------------------------------------------------------------------------------------
STREAM_ARGS = ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")


class StreamJsonProc:
    """A live stream-json session: send lines, wait for output lines matching a predicate."""

    def __init__(self, project: Project, url: str, *args: str) -> None:
        self.proc = subprocess.Popen(_codeloop(*STREAM_ARGS, *args), cwd=project.dir, env=project.env(url),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.lines: list[dict[str, Any]] = []
        self.raw, self.err = [], []
        self._cond = threading.Condition()
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()

    def _read_out(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.raw.append(line)
                try:
                    self.lines.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
                self._cond.notify_all()
        with self._cond:
            self.raw.append("<EOF>")
            self._cond.notify_all()

    def send(self, obj: dict[str, Any] | str) -> None:
        self.proc.stdin.write(obj if isinstance(obj, str) else json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], start: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + HANG
        with self._cond:
            while True:
                hit = next((l for l in self.lines[start:] if pred(l)), None)
                if hit is not None:
                    return hit
                if self.raw and self.raw[-1] == "<EOF>":
                    raise AssertionError(f"stream-json ended before the awaited line:\n{self.outcome()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"stream-json never sent the awaited line:\n{self.outcome()}")
                self._cond.wait(left)

    def close(self) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def outcome(self, returncode: int | None = None) -> Outcome:
        results = [l for l in self.lines if l.get("type") == "result"]
        return Outcome(StreamJson.name, "".join(r for r in self.raw if r != "<EOF>"), "".join(self.err),
                       returncode, results[-1].get("result") if results else None)


class StreamJson:
    name = "stream-json"

    def ask(self, project: Project, url: str, prompt: str) -> Outcome:
        r = subprocess.run(_codeloop(*STREAM_ARGS), cwd=project.dir, env=project.env(url), input=_user_line(prompt),
                           capture_output=True, text=True, timeout=HANG)
        results = [l for l in _jsonl(r.stdout) if l.get("type") == "result"]
        return Outcome(self.name, r.stdout, r.stderr, r.returncode, results[-1].get("result") if results else None)

    def model_then_compact(self, project: Project, url: str, start: str, new: str) -> Outcome:
        s = StreamJsonProc(project, url, "--model", start)
        try:
            s.send(_user_line("hello"))
            s.wait_for(lambda l: l.get("type") == "result")
            s.send({"type": "control_request", "request_id": "parity_set_model",
                    "request": {"subtype": "set_model", "model": new}})
            s.wait_for(lambda l: l.get("type") == "control_response"
                       and l["response"].get("request_id") == "parity_set_model")
            mark = len(s.lines)
            s.send(_user_line("/compact"))
            s.wait_for(lambda l: l.get("type") == "result", start=mark)
        finally:
            code = s.close()
        return s.outcome(code)


# -- the Agent SDK ----------------------------------------------------------------------------------
class Sdk:
    name = "sdk"

    def options(self, project: Project, url: str, **kw: Any) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        env = {**project.env(url), "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"}
        # Claude Code's own prompt (the SDK's default is an empty --system-prompt, which has no
        # output style, as in Claude Code) and every settings source, as an SDK user asks for them
        return ClaudeAgentOptions(cli_path=project.cli_path(), cwd=str(project.dir), env=env,
                                  setting_sources=SDK_SOURCES,
                                  system_prompt={"type": "preset", "preset": "claude_code"}, **kw)

    @staticmethod
    def _outcome(messages: list[Any], stderr: list[str]) -> Outcome:
        from claude_agent_sdk import ResultMessage

        results = [m for m in messages if isinstance(m, ResultMessage)]
        return Outcome(Sdk.name, "\n".join(repr(m) for m in messages), "".join(stderr), None,
                       results[-1].result if results else None)

    def ask(self, project: Project, url: str, prompt: str) -> Outcome:
        from claude_agent_sdk import query

        stderr: list[str] = []

        async def go() -> list[Any]:
            opts = self.options(project, url, stderr=stderr.append)
            return [m async for m in query(prompt=prompt, options=opts)]
        return self._outcome(asyncio.run(asyncio.wait_for(go(), HANG)), stderr)

    def model_then_compact(self, project: Project, url: str, start: str, new: str) -> Outcome:
        from claude_agent_sdk import ClaudeSDKClient

        stderr: list[str] = []

        async def go() -> list[Any]:
            out: list[Any] = []
            async with ClaudeSDKClient(options=self.options(project, url, model=start,
                                                            stderr=stderr.append)) as client:
                await client.query("hello")
                out += [m async for m in client.receive_response()]
                await client.set_model(new)
                await client.query("/compact")
                out += [m async for m in client.receive_response()]
            return out
        return self._outcome(asyncio.run(asyncio.wait_for(go(), HANG)), stderr)


# -- the REPL on a pseudo-terminal ------------------------------------------------------------------
READY = "shift+tab to cycle"
QUESTIONS = ("Do you want", "1) Yes")   # a permission dialog: the run is waiting on the user
TRUST_QUESTION = "Do you trust the files"


class ReplSession:
    """One REPL in a pty (tests/repl's Term), read through a terminal emulator (tests/repl's Screen)."""

    ROWS, COLS = 50, 140

    def __init__(self, project: Project, url: str, *args: str) -> None:
        from ptyterm import Term
        from screen import Screen

        self.term = Term(project.dir, url, *args, env=project.env(url), rows=self.ROWS, cols=self.COLS,
                         timeout=HANG)
        self.screen = Screen(self.term, rows=self.ROWS, cols=self.COLS)
        self.seen = ""   # the screen at the last wait
        try:
            if self.wait_any(READY, TRUST_QUESTION) == TRUST_QUESTION:
                raise AssertionError(f"the REPL asked whether to trust the (trusted) project:\n{self.seen}")
        except BaseException:
            self.term.close()
            raise

    def wait_any(self, *needles: str) -> str:
        try:
            shown = self.screen.wait_for(lambda s: any(n in s for n in needles), timeout=HANG)
        except AssertionError as exc:
            raise AssertionError(f"the REPL never showed any of {needles!r}: {exc}") from None
        self.seen = shown
        return next(n for n in needles if n in shown)

    def submit(self, line: str) -> None:
        self.term.line(line)

    def close(self, *, graceful: bool = True) -> int | None:
        """/exit when the REPL is at its prompt (so it stops its MCP servers itself); killed otherwise."""
        code = None
        try:
            if graceful and self.term.child.isalive() and not any(q in self.seen for q in QUESTIONS):
                self.term.line("/exit")
                code = self.term.wait_exit(timeout=30)
        except Exception:  # noqa: BLE001 — a REPL that will not exit is killed; the cell's verdict stands
            pass
        finally:
            self.term.close()
        return code

    def outcome(self, code: int | None = None) -> Outcome:
        shown = "\n".join(line for line in self.seen.splitlines() if line.strip())
        return Outcome(Repl.name, shown, "", code, DONE if DONE in self.seen else None)


class Repl:
    name = "repl"

    def ask(self, project: Project, url: str, prompt: str) -> Outcome:
        s = ReplSession(project, url)
        ok = False
        try:
            s.submit(prompt)
            s.wait_any(DONE, *QUESTIONS)
            ok = True
        finally:
            code = s.close(graceful=ok)
        return s.outcome(code)

    def model_then_compact(self, project: Project, url: str, start: str, new: str) -> Outcome:
        s = ReplSession(project, url, "--model", start)
        ok = False
        try:
            s.submit("hello")
            s.wait_any(DONE)
            s.submit(f"/model {new}")
            s.wait_any("Model set to")
            s.submit("/compact")
            s.wait_any("Conversation compacted", "ompaction failed", "Error")
            ok = True
        finally:
            code = s.close(graceful=ok)
        return s.outcome(code)


FRONT_ENDS = {fe.name: fe for fe in (Repl(), PrintMode(), StreamJson(), Sdk())}
# the conftest fixtures that skip a front end's cells on a machine that cannot run it
NEEDS = {"repl": ("need_pty",), "sdk": ("need_sdk",)}


def pty_problem() -> str | None:
    """Why a pseudo-terminal cannot be used here (None: it can)."""
    try:
        import pexpect
        import pyte  # noqa: F401
    except ImportError as exc:
        return f"the REPL cells need pexpect and pyte: {exc}"
    try:
        child = pexpect.spawn(sys.executable, ["-c", "print('ok')"], timeout=30, encoding="utf-8")
        child.expect("ok")
        child.close()
    except Exception as exc:  # noqa: BLE001 — no /dev/ptmx, a sandboxed pty …
        return f"cannot spawn a pseudo-terminal: {exc}"
    return None


def sandbox_problem() -> str | None:
    """Why bubblewrap cannot sandbox here (None: it can). CODELOOP_BWRAP may point at a bwrap."""
    from codeloop.sandbox.bwrap import probe

    return probe().error

