"""Compaction reads the prompt cache (issue 26, item 7): the summary request is the conversation's
own request with the instructions appended; the environment block is a once-per-session snapshot
(a branch switch changes nothing sent, a new day is said in a meta message)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from typing import Any

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.cli.startup.options import options_from_argv
from codeloop.context.prompt import ContextLoader
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.assembly import open_session


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


def provider(api: ScriptedAPI) -> AnthropicProvider:
    return AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())


async def drain(events) -> list:
    return [ev async for ev in events]


def plain(value: Any) -> Any:
    """The request without its cache breakpoints (which move from turn to turn by design)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def breakpoints(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


def is_summary(req) -> bool:
    return "Primary Request and Intent" in json.dumps(req.messages[-1])


async def test_compact_sends_the_conversations_own_prefix(project):
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(project / "notes.txt")})), sse(text("read it")),
                      sse(text("<summary>We read notes.txt.</summary>")), sse(text("next")))
    conv, _ = await open_session(options_from_argv(["-p", "x"]), provider=provider(api))
    try:
        await drain(conv.submit("read notes.txt"))
        await drain(conv.compact())
        turn, summary = api.requests[1].body, api.requests[2].body
        assert is_summary(api.requests[2]) and summary["tools"] and summary["model"] == turn["model"]
        assert summary["tools"] == turn["tools"] and summary["system"] == turn["system"]
        # everything the last turn sent is the start of the summary request, then its answer, then the ask
        assert plain(summary["messages"][:len(turn["messages"])]) == plain(turn["messages"])
        assert summary["messages"][len(turn["messages"])]["content"][0]["text"] == "read it"
        assert breakpoints(summary) <= 4    # the API's limit
        before_ask = summary["messages"][-2]["content"][-1]
        assert before_ask.get("cache_control") and before_ask["text"] == "read it"
        # the conversation's own next request is untouched by the extra breakpoint
        await drain(conv.submit("go on"))
        assert breakpoints(api.requests[3].body) <= 4
    finally:
        await conv.aclose()


async def test_a_model_that_calls_a_tool_instead_of_summarising_is_asked_plainly(project):
    api = ScriptedAPI(sse(text("hello")), sse(tool_use("Read", {"file_path": "notes.txt"})),
                      sse(text("<summary>We said hello.</summary>")))
    conv, _ = await open_session(options_from_argv(["-p", "x"]), provider=provider(api))
    try:
        await drain(conv.submit("hi"))
        events = await drain(conv.compact())
        first, second = api.requests[1].body, api.requests[2].body
        assert first["tools"] and "tools" not in second and is_summary(api.requests[2])
        boundary = next(e for e in events if type(e).__name__ == "CompactBoundary")
        assert "We said hello." in json.dumps([m.content for m in boundary.messages])
    finally:
        await conv.aclose()


async def test_a_branch_switch_changes_nothing_sent_before_the_history(project):
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    conv, _ = await open_session(options_from_argv(["-p", "x"]), provider=provider(api))
    try:
        await drain(conv.submit("first"))
        (project / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
        (project / "CLAUDE.md").write_text("Use tabs.\n")     # instructions are still read per prompt
        await drain(conv.submit("second"))
        one, two = api.requests[0].body, api.requests[1].body
        assert "Current git branch: main" in json.dumps(one["system"])
        assert plain(one["system"]) == plain(two["system"]) and one["tools"] == two["tools"]
        assert "Use tabs." in json.dumps(two["messages"][0]) and "Use tabs." not in json.dumps(one["messages"][0])
    finally:
        await conv.aclose()


def test_a_new_day_is_said_once_and_the_snapshot_stays(tmp_path):
    loader = ContextLoader(tmp_path, tmp_path / "cfg")
    system, ctx = loader()
    assert loader.date_change() is None                       # same day: nothing to say
    later = dt.date.fromisoformat(loader.day) + dt.timedelta(days=1)  # type: ignore[arg-type]
    notice = loader.date_change(later)
    assert notice is not None and later.isoformat() in notice
    assert loader.date_change(later) is None                  # said once
    assert loader() == (system, ctx)                          # the prompt and its date keep the snapshot
    assert loader.date_change(later + dt.timedelta(days=1)) is not None
