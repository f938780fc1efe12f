"""WebFetch and the spellings of a host (issue 25, item 7): decimal, octal, hex, short and IPv4-mapped
forms of loopback and link-local addresses get the decision of the address they spell (rules,
preapproval, plain http on loopback) before any connection, and a redirect to another host, port
or scheme is reported, never followed. Real loopback servers; the CLI as a subprocess."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from codeloop.permissions.hosts import HostKind, canonical_host, host_kind
from codeloop.permissions.policy import PermissionPolicy
from codeloop.permissions.rules import url_host
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin import web_fetch
from codeloop.tools.builtin.web_fetch import Page, Redirect, WebFetchTool, fetch, normalize_url
from codeloop.tools.registry import parse_tool_input
from fakeapi import ScriptedAPI, sse, text, tool_use
from test_web_fetch import codeloop, decide, fetch_tool, side_ctx
from webpages import PageServer

ALLOW, ASK, DENY = PermissionBehavior.ALLOW, PermissionBehavior.ASK, PermissionBehavior.DENY

LOOPBACK = ["127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "0177.1", "017700000001",
            "0x7F.0.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]",
            "１２７．０．０．１"]
METADATA = ["169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe",
            "169.254.43518", "0xa9.16689662", "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]"]
NOT_ADDRESSES = ["1.2.3.4.5", "09.0.0.1", "0x7g.1", "127.0.0.256", "4294967296", "[fe80::1%25lo]",
                 "%31%32%37.0.0.1", "127.0.0.1%00.x", "127..1", "evil.org%5c"]


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch):
    monkeypatch.setattr(web_fetch, "_cache", {})
    monkeypatch.delenv(web_fetch.DOMAINS_ENV, raising=False)


@pytest.fixture
def pages():
    with PageServer() as server:
        yield server


@pytest.fixture
def other():
    """A second loopback server, on another port."""
    with PageServer() as server:
        yield server


def test_canonical_spellings_and_kinds():
    for spelling in LOOPBACK:
        assert canonical_host(spelling.strip("[]")) == "127.0.0.1", spelling
    for spelling in METADATA:
        assert canonical_host(spelling) == "169.254.169.254", spelling
    for spelling in NOT_ADDRESSES:
        assert canonical_host(spelling) is None, spelling
    assert canonical_host("Example.COM.") == "example.com" and canonical_host("ｌｏｃａｌｈｏｓｔ") == "localhost"
    assert canonical_host("bücher.de") == "xn--bcher-kva.de" and canonical_host("0:0::1") == "::1"
    kinds = {"127.9.9.9": HostKind.LOOPBACK, "0.0.0.0": HostKind.LOOPBACK, "::": HostKind.LOOPBACK,
             "::1": HostKind.LOOPBACK, "localhost": HostKind.LOOPBACK, "app.localhost": HostKind.LOOPBACK,
             "169.254.0.7": HostKind.LINK_LOCAL, "fe80::1": HostKind.LINK_LOCAL, "10.0.0.1": HostKind.OTHER,
             "example.com": HostKind.OTHER, "localhost.evil.org": HostKind.OTHER}
    assert {h: host_kind(h) for h in kinds} == kinds


@pytest.mark.parametrize("spelling", LOOPBACK)
def test_loopback_spellings_keep_plain_http_and_reach_127_0_0_1(spelling):
    assert normalize_url(f"http://{spelling}:8123/a?b#c") == "http://127.0.0.1:8123/a?b#c"
    assert url_host(f"http://{spelling}:8123/a") == "127.0.0.1"      # what rules and "don't ask again" see


@pytest.mark.parametrize("spelling", METADATA)
def test_metadata_spellings_are_upgraded_like_the_address_itself(spelling):
    # today's decision for a link-local address: https, as for every host that is not loopback
    assert normalize_url(f"http://{spelling}/latest/meta-data/") == "https://169.254.169.254/latest/meta-data/"


@pytest.mark.parametrize("spelling", NOT_ADDRESSES)
async def test_numeric_hosts_that_are_no_address_are_refused_before_connecting(spelling, tmp_path):
    with pytest.raises(ToolError, match="Invalid URL"):
        await fetch_tool(side_ctx(tmp_path, ScriptedAPI()), url=f"http://{spelling}/x", prompt="p")


async def opinion(url: str, ctx: ToolContext):
    """The tool's own view (the question it would ask names the address and what kind it is)."""
    tool = WebFetchTool()
    return await tool.check_permissions(parse_tool_input(tool, {"url": url, "prompt": "p"}), ctx)


async def test_rules_decide_on_the_address_however_it_is_spelled(tmp_path, monkeypatch):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    deny = PermissionPolicy(cwd=tmp_path, deny=["WebFetch(domain:127.0.0.1)", "WebFetch(domain:169.254.169.254)"])
    allow = PermissionPolicy(cwd=tmp_path, allow=["WebFetch(domain:127.0.0.1)"])
    spelled = PermissionPolicy(cwd=tmp_path, deny=["WebFetch(domain:0x7f.1)", "WebFetch(domain:[::ffff:a9fe:a9fe])"])
    none = PermissionPolicy(cwd=tmp_path)
    for spelling in LOOPBACK:
        url = f"http://{spelling}:8123/page"
        assert (await decide(deny, url, ctx)).behavior is DENY, spelling
        assert (await decide(spelled, url, ctx)).behavior is DENY, spelling
        assert (await decide(allow, url, ctx)).behavior is ALLOW, spelling
        assert (await decide(none, url, ctx)).behavior is ASK, spelling
        asked = await opinion(url, ctx)
        assert asked.behavior is ASK and "127.0.0.1 (loopback: this machine)" in asked.message, spelling
    for spelling in METADATA:
        url = f"http://{spelling}/latest/meta-data/iam/"
        assert (await decide(deny, url, ctx)).behavior is DENY, spelling
        assert (await decide(spelled, url, ctx)).behavior is DENY, spelling
        assert (await decide(allow, url, ctx)).behavior is ASK, spelling
        assert (await decide(none, url, ctx)).behavior is ASK, spelling
        asked = await opinion(url, ctx)
        assert asked.behavior is ASK and "169.254.169.254 (the cloud instance-metadata address)" in asked.message
    asked = await opinion("http://[fe80::1]/", ctx)
    assert asked.behavior is ASK and "fe80::1 (link-local" in asked.message
    # an address rule covers that address only, never as a "parent domain" of another
    assert (await decide(PermissionPolicy(cwd=tmp_path, allow=["WebFetch(domain:0.1)"]),
                         "http://127.0.0.1/", ctx)).behavior is ASK
    # the legitimate rule keeps working: a name covers its subdomains
    named = PermissionPolicy(cwd=tmp_path, allow=["WebFetch(domain:example.com)"])
    assert (await decide(named, "https://Docs.Example.COM./x", ctx)).behavior is ALLOW
    # preapproval by the environment: also on the address, whatever the spelling
    monkeypatch.setenv(web_fetch.DOMAINS_ENV, "0x7f.1")
    for spelling in LOOPBACK:
        assert (await decide(none, f"http://{spelling}/", ctx)).behavior is ALLOW, spelling
    assert (await decide(none, "http://127.0.0.2/", ctx)).behavior is ASK


async def test_every_spelling_fetches_the_loopback_page(pages):
    for spelling in LOOPBACK:
        got = await fetch(f"http://{spelling}:{pages.port}/notes.md")
        assert isinstance(got, Page) and got.url == f"{pages.url}/notes.md", spelling
    assert pages.hits["/notes.md"] == len(LOOPBACK)


def via(server, to: str, path: str = "/redirect") -> str:
    return f"{server.url}{path}?to={quote(to, safe='')}"


async def test_redirect_to_another_port_is_reported_not_followed(pages, other):
    for target in (f"http://127.0.0.1:{other.port}/rustdoc.html", f"http://2130706433:{other.port}/rustdoc.html",
                   f"http://[::ffff:127.0.0.1]:{other.port}/rustdoc.html", f"http://0x7f.1:{other.port}/rustdoc.html"):
        got = await fetch(via(pages, target))
        assert isinstance(got, Redirect), target
        assert got.target == f"{other.url}/rustdoc.html" and got.status == 302
    # the case of the issue: an allowed localhost page sending the fetch to another port
    got = await fetch(f"http://localhost:{pages.port}/redirect?to=" +
                      quote(f"http://localhost:{other.port}/rustdoc.html", safe=""))
    assert isinstance(got, Redirect) and got.target == f"http://localhost:{other.port}/rustdoc.html"
    # a same-port hop first, then the port change: still reported, at the second hop
    got = await fetch(via(pages, "/redirect?to=" + quote(f"{other.url}/rustdoc.html", safe="")))
    assert isinstance(got, Redirect) and got.target == f"{other.url}/rustdoc.html"
    assert other.hits == {} and pages.hits["/rustdoc.html"] == 0


async def test_redirect_to_another_host_or_scheme_is_reported(pages):
    for target, reported in ((f"http://localhost:{pages.port}/rustdoc.html", None),
                             (f"https://127.0.0.1:{pages.port}/rustdoc.html", None),
                             ("http://0xa9fea9fe/latest/meta-data/", "https://169.254.169.254/latest/meta-data/"),
                             ("http://[::ffff:a9fe:a9fe]/latest/", "https://169.254.169.254/latest/"),
                             ("http://0/x", None)):
        got = await fetch(via(pages, target))
        assert isinstance(got, Redirect), target
        assert got.target == (reported or normalize_url(target))
    assert pages.hits["/rustdoc.html"] == 0


async def test_same_site_redirects_are_followed(pages):
    for target in ("/rustdoc.html", f"{pages.url}/rustdoc.html", f"http://2130706433:{pages.port}/rustdoc.html",
                   f"http://127.0.0.1:{pages.port}/rustdoc.html#top"):
        got = await fetch(via(pages, target))
        assert isinstance(got, Page) and got.status == 200, target
    assert pages.hits["/rustdoc.html"] == 4


async def test_the_model_is_told_where_the_redirect_goes(tmp_path, pages, other):
    api = ScriptedAPI()
    res = await fetch_tool(side_ctx(tmp_path, api), url=via(pages, f"http://0x7f.1:{other.port}/debian.html"),
                           prompt="users?")
    assert res.content.startswith("REDIRECT DETECTED: The URL redirects to a different host.")
    assert f"Redirect URL: {other.url}/debian.html" in res.content and "Status: 302 Found" in res.content
    assert f'url: "{other.url}/debian.html"' in res.content and 'prompt: "users?"' in res.content
    assert other.hits == {} and api.requests == []


def test_cli_deny_rule_holds_for_every_spelling_and_nothing_is_fetched(tmp_path, pages):
    urls = [f"http://{s}:{pages.port}/rustdoc.html" for s in ("2130706433", "0x7f.1", "[::ffff:127.0.0.1]")]
    api = ScriptedAPI(*(sse(tool_use("WebFetch", {"url": u, "prompt": "p"}, id=f"w{i}")) for i, u in enumerate(urls)),
                      sse(text("done")))
    with api.serve() as base:
        r = codeloop(["-p", "read", "--output-format", "json", "--allowedTools", "WebFetch",
                      "--disallowedTools", "WebFetch(domain:127.0.0.1)"], cwd=tmp_path, base_url=base)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert [d["tool_input"]["url"] for d in res["permission_denials"]] == urls
    assert pages.hits == {}


def test_cli_allow_rule_for_the_address_covers_another_spelling(tmp_path, pages):
    url = f"http://2130706433:{pages.port}/rustdoc.html"
    api = ScriptedAPI(sse(tool_use("WebFetch", {"url": url, "prompt": "What is rustdoc?"}, id="wf")),
                      sse(text("It documents crates."), model="claude-haiku-4-5"), sse(text("done")))
    with api.serve() as base:
        r = codeloop(["-p", "read", "--output-format", "json", "--allowedTools", "WebFetch(domain:127.0.0.1)"],
                     cwd=tmp_path, base_url=base)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["permission_denials"] == [] and pages.hits["/rustdoc.html"] == 1
    result = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "It documents crates." in json.dumps(result["content"])
