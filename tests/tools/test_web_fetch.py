"""WebFetch (issue 16): real saved HTML pages from a loopback server, the prompt applied by a side
call answered by the scripted fake API, redirects, caps, the cache and the permission rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin import web_fetch
from codeloop.tools.builtin.web_fetch import WebFetchTool, normalize_url
from codeloop.tools.registry import parse_tool_input
from fakeapi import ScriptedAPI, sse, text, tool_use
from webpages import PageServer


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch):
    monkeypatch.setattr(web_fetch, "_cache", {})
    monkeypatch.delenv(web_fetch.DOMAINS_ENV, raising=False)


@pytest.fixture
def pages():
    with PageServer() as server:
        yield server


def side_ctx(tmp_path: Path, api: ScriptedAPI) -> ToolContext:
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model="claude-sonnet-4-5")
    ctx.side_provider = AnthropicProvider("k", base_url="http://fake", transport=api.transport())
    return ctx


async def fetch_tool(ctx, **raw):
    tool = WebFetchTool()
    return await tool.call(parse_tool_input(tool, raw), ctx)


def side_text(req) -> str:
    return req.messages[0]["content"][0]["text"]


def test_url_normalisation():
    assert normalize_url("http://example.com/a?b=1") == "https://example.com/a?b=1"
    # loopback keeps plain http: no certificate there (and the tests serve pages on it)
    assert normalize_url("http://127.0.0.1:8000/x") == "http://127.0.0.1:8000/x"
    assert normalize_url("http://localhost/x") == "http://localhost/x"
    for bad in ("ftp://example.com/f", "not a url", "https://", "https://user:pw@example.com/"):
        with pytest.raises(ToolError):
            normalize_url(bad)


async def test_html_page_becomes_markdown_and_the_prompt_is_answered_by_the_small_model(tmp_path, pages):
    api = ScriptedAPI(sse(text("rustdoc turns doc comments into HTML.")))
    ctx = side_ctx(tmp_path, api)
    res = await fetch_tool(ctx, url=pages.url + "/rustdoc.html", prompt="What does rustdoc do?")
    assert res.content == "rustdoc turns doc comments into HTML." and not res.is_error
    side = api.requests[0]
    assert side.body["model"] == web_fetch.DEFAULT_SIDE_MODEL and "tools" not in side.body
    sent = side_text(side)
    assert "# What is rustdoc?" in sent and "$ cargo new docs --lib" in sent   # markdown, code kept
    assert "<div" not in sent and "localStorage" not in sent                  # tags and scripts gone
    assert sent.rstrip().endswith("Never produce or reproduce exact song lyrics.")
    assert "What does rustdoc do?" in sent
    assert res.data["code"] == 200 and res.data["bytes"] == (Path(web_fetch.__file__).parents[4] / "tests" /
                                                               "fixtures" / "web" / "rustdoc-what-is-rustdoc.html"
                                                               ).stat().st_size


async def test_other_real_pages_convert(tmp_path, pages):
    api = ScriptedAPI(sse(text("a")), sse(text("b")))
    ctx = side_ctx(tmp_path, api)
    await fetch_tool(ctx, url=pages.url + "/debian.html", prompt="uids?")
    await fetch_tool(ctx, url=pages.url + "/libffi.html", prompt="cif?")
    assert "Users and Groups in the Debian System" in side_text(api.requests[0])
    assert "ffi_prep_cif" in side_text(api.requests[1]) and "FFI_BAD_TYPEDEF" in side_text(api.requests[1])


async def test_cache_serves_a_repeat_fetch_without_the_network(tmp_path, pages):
    api = ScriptedAPI(sse(text("one")), sse(text("two")))
    ctx = side_ctx(tmp_path, api)
    await fetch_tool(ctx, url=pages.url + "/rustdoc.html", prompt="p1")
    res = await fetch_tool(ctx, url=pages.url + "/rustdoc.html", prompt="p2")
    assert pages.hits["/rustdoc.html"] == 1 and res.content == "two"
    assert "p2" in side_text(api.requests[1])
    # an expired entry is dropped on lookup
    page = web_fetch._cache[pages.url + "/rustdoc.html"]
    assert web_fetch.cached(page.url, now=page.fetched_at + web_fetch.CACHE_TTL_S + 1) is None
    assert web_fetch._cache == {}


async def test_same_host_redirect_is_followed_other_host_is_reported(tmp_path, pages):
    api = ScriptedAPI(sse(text("followed")))
    ctx = side_ctx(tmp_path, api)
    res = await fetch_tool(ctx, url=pages.url + "/same-host-redirect", prompt="p")
    assert res.content == "followed" and pages.hits["/rustdoc.html"] == 1
    res = await fetch_tool(ctx, url=pages.url + "/other-host-redirect", prompt="summarise it")
    assert res.content.startswith("REDIRECT DETECTED: The URL redirects to a different host.")
    assert f'url: "http://localhost:{pages.port}/rustdoc.html"' in res.content and "summarise it" in res.content
    assert "Status: 301 Moved Permanently" in res.content
    assert pages.hits["/rustdoc.html"] == 1 and len(api.requests) == 1   # not followed, no side call


async def test_errors_size_cap_timeout_and_binary(tmp_path, pages, monkeypatch):
    ctx = side_ctx(tmp_path, ScriptedAPI())
    with pytest.raises(ToolError, match="status code 404"):
        await fetch_tool(ctx, url=pages.url + "/nope", prompt="p")
    monkeypatch.setattr(web_fetch, "MAX_BODY_BYTES", 10_000)
    with pytest.raises(ToolError, match="WebFetch reads at most 10000 bytes"):
        await fetch_tool(ctx, url=pages.url + "/big", prompt="p")
    monkeypatch.setattr(web_fetch, "FETCH_TIMEOUT_S", 0.5)
    with pytest.raises(ToolError, match="timed out"):
        await fetch_tool(ctx, url=pages.url + "/slow", prompt="p")
    with pytest.raises(ToolError, match="image/png"):
        await fetch_tool(ctx, url=pages.url + "/image.png", prompt="p")


async def test_preapproved_markdown_is_returned_without_a_side_call(tmp_path, pages, monkeypatch):
    monkeypatch.setenv(web_fetch.DOMAINS_ENV, "127.0.0.1")
    api = ScriptedAPI()
    res = await fetch_tool(side_ctx(tmp_path, api), url=pages.url + "/notes.md", prompt="p")
    assert res.content.startswith("# Notes") and api.requests == []


async def test_no_side_provider_is_a_clear_error(tmp_path, pages):
    with pytest.raises(ToolError, match="no model for side calls"):
        await fetch_tool(ToolContext(cwd=tmp_path, project_dir=tmp_path), url=pages.url + "/rustdoc.html",
                         prompt="p")


async def decide(policy, url, ctx):
    tool = WebFetchTool()
    inp = parse_tool_input(tool, {"url": url, "prompt": "p"})
    return policy.decide(tool, inp, await tool.check_permissions(inp, ctx), {"url": url, "prompt": "p"})


async def test_permissions_ask_by_default_rules_and_preapproved_hosts(tmp_path, monkeypatch):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    policy = PermissionPolicy(cwd=tmp_path)
    assert (await decide(policy, "https://example.com/a", ctx)).behavior is PermissionBehavior.ASK
    assert (await decide(policy, "http://docs.python.org/3/", ctx)).behavior is PermissionBehavior.ALLOW
    allow = PermissionPolicy(cwd=tmp_path, allow=["WebFetch(domain:example.com)"])
    assert (await decide(allow, "https://sub.example.com/a", ctx)).behavior is PermissionBehavior.ALLOW
    assert (await decide(allow, "https://example.org/a", ctx)).behavior is PermissionBehavior.ASK
    deny = PermissionPolicy(cwd=tmp_path, deny=["WebFetch(domain:docs.python.org)"])
    assert (await decide(deny, "https://docs.python.org/3/", ctx)).behavior is PermissionBehavior.DENY
    monkeypatch.setenv(web_fetch.DOMAINS_ENV, "wiki.internal, example.com")
    assert (await decide(policy, "https://wiki.internal/x", ctx)).behavior is PermissionBehavior.ALLOW
    monkeypatch.setenv(web_fetch.DOMAINS_ENV, "none")
    assert (await decide(policy, "https://docs.python.org/3/", ctx)).behavior is PermissionBehavior.ASK
    # read-only: plan mode still lets it reach its question
    plan = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN)
    assert (await decide(plan, "https://example.com/", ctx)).behavior is PermissionBehavior.ASK


def codeloop(args, *, cwd, base_url, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    full.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url,
                 "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd), **(env or {})})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=60)


def test_cli_webfetch_allowed_by_domain_rule_and_denied_without(tmp_path, pages):
    url = pages.url + "/rustdoc.html"
    api = ScriptedAPI(sse(tool_use("WebFetch", {"url": url, "prompt": "What is rustdoc?"}, id="wf")),
                      sse(text("It documents Rust crates."), model="claude-haiku-4-5", input_tokens=900),
                      sse(text("rustdoc documents Rust crates.")),
                      sse(tool_use("WebFetch", {"url": url, "prompt": "again"}, id="wf2")), sse(text("no")))
    with api.serve() as base:
        r = codeloop(["-p", "read it", "--output-format", "json", "--allowedTools", "WebFetch(domain:127.0.0.1)"],
                     cwd=tmp_path, base_url=base)
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        assert "WebFetch" in api.requests[0].tool_names
        side = api.requests[1]
        assert side.body["model"] == "claude-haiku-4-5" and "# What is rustdoc?" in side_text(side)
        result = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
        assert result["tool_use_id"] == "wf" and "It documents Rust crates." in json.dumps(result["content"])
        assert res["result"] == "rustdoc documents Rust crates." and res["permission_denials"] == []
        assert "claude-haiku-4-5" in res["modelUsage"]          # the side call is metered
        r = codeloop(["-p", "again", "--output-format", "json"], cwd=tmp_path, base_url=base)
    res = json.loads(r.stdout)
    assert [d["tool_name"] for d in res["permission_denials"]] == ["WebFetch"]
    assert pages.hits["/rustdoc.html"] == 1


def test_side_model_is_small_on_anthropic_and_the_session_model_elsewhere(tmp_path, monkeypatch):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model="qwen3:8b")
    named = lambda n: type("P", (), {"name": n})()  # noqa: E731
    monkeypatch.delenv("ANTHROPIC_SMALL_FAST_MODEL", raising=False)
    assert web_fetch.side_model(ctx, named("anthropic")) == "claude-haiku-4-5"
    assert web_fetch.side_model(ctx, named("ollama")) == "qwen3:8b"
    monkeypatch.setenv("ANTHROPIC_SMALL_FAST_MODEL", "claude-3-5-haiku")
    assert web_fetch.side_model(ctx, named("anthropic")) == "claude-3-5-haiku"
