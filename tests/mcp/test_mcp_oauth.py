"""OAuth for remote MCP servers against a real loopback authorization server + protected MCP
server written with the SDK (tests/mcp/servers/oauth_server.py): discovery, dynamic client
registration, PKCE, the browser step (completed here by following the printed URL with httpx),
tokens kept 0600 and reused, refresh once expired, a refused authorization; sessions that never
wait on a sign-in (needs-auth at once, `/mcp login` in the session, `codeloop mcp login` from a
terminal), and print mode end to end with the token never written anywhere but its file."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from codeloop.mcp.client import McpManager  # noqa: E402
from codeloop.mcp.config import ServerConfig, Transport  # noqa: E402
from mcpkit import ServerProcesses, endpoint, free_port  # noqa: E402

SERVERS = Path(__file__).parent / "servers"
HANG_GUARD = 90


@pytest.fixture
def oauth_server(tmp_path):
    """Start oauth_server.py (mode, **env) → (url, grants()): the grants it has made so far."""
    servers = ServerProcesses()

    def start(mode: str = "http", **env: str):
        port = free_port()
        log = tmp_path / f"grants-{port}.log"
        servers.start("oauth_server.py", mode, port=port, env={"GRANT_LOG": str(log), **env})
        return endpoint(port, mode), lambda: log.read_text().split() if log.exists() else []

    yield start
    servers.stop_all()


@pytest.fixture(autouse=True)
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CODELOOP_NO_BROWSER", "1")
    return tmp_path / "cfg"


class Browser:
    """Follows each printed authorization URL with httpx, as a person's browser would."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.pages: list[int] = []
        self.tasks: list[asyncio.Task] = []

    def __call__(self, server: str, url: str) -> None:
        self.urls.append(url)
        self.tasks.append(asyncio.get_running_loop().create_task(self.visit(url)))

    async def visit(self, url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as client:
            self.pages.append((await client.get(url)).status_code)


async def connect(url: str, transport=Transport.HTTP, browser=None, extra=()):
    manager = McpManager(tool_timeout=60)
    manager.on_auth_url = browser or Browser()
    await manager.start([ServerConfig("remote", transport, url=url), *extra], timeout=HANG_GUARD)
    return manager


async def whoami(manager: McpManager) -> str:
    tool = next(t for t in manager.tools() if t.name == "mcp__remote__whoami")
    result = await tool._caller("whoami", {})
    return result["content"][0]["text"]


@pytest.mark.parametrize("mode", ["http", "sse"])
async def test_first_connection_signs_in_then_tokens_are_reused(oauth_server, config_dir, mode):
    url, grants = oauth_server(mode)
    transport = Transport.HTTP if mode == "http" else Transport.SSE
    browser = Browser()
    manager = await connect(url, transport, browser)
    try:
        assert manager.statuses() == [{"name": "remote", "status": "connected"}], manager.errors()
        assert manager.auth_status() == {"remote": "authenticated"}
        assert await whoami(manager) == "signed in"
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert len(browser.urls) == 1 and browser.pages == [200]
    assert "code_challenge_method=S256" in browser.urls[0] and "code_challenge=" in browser.urls[0]
    assert grants() == ["register", "authorize", "code"]
    [token_file] = (config_dir / "mcp-oauth").iterdir()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    assert json.loads(token_file.read_text())["tokens"]["access_token"].startswith("at-")

    again = Browser()
    manager = await connect(url, transport, again)
    try:
        assert await whoami(manager) == "signed in" and manager.auth_status() == {"remote": "authenticated"}
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert again.urls == [] and grants() == ["register", "authorize", "code"]   # no second sign-in


async def test_expired_token_is_refreshed_without_a_browser(oauth_server, config_dir):
    url, grants = oauth_server()
    manager = await connect(url)
    await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    [token_file] = (config_dir / "mcp-oauth").iterdir()
    data = json.loads(token_file.read_text())
    old_token = data["tokens"]["access_token"]
    data["expires_at"] = 1.0                     # expired long ago
    token_file.write_text(json.dumps(data))
    browser = Browser()
    manager = await connect(url, browser=browser)
    try:
        assert await whoami(manager) == "signed in"
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert browser.urls == [] and grants() == ["register", "authorize", "code", "refresh"]
    assert json.loads(token_file.read_text())["tokens"]["access_token"] != old_token


async def test_logout_and_reconnect_signs_in_again(oauth_server, config_dir):
    url, grants = oauth_server()
    browser = Browser()
    manager = await connect(url, browser=browser)
    try:
        assert manager.logout("remote") and not manager.logout("ghost")
        assert not (config_dir / "mcp-oauth").exists() or not list((config_dir / "mcp-oauth").iterdir())
        await manager.reconnect("remote", timeout=HANG_GUARD)
        assert await whoami(manager) == "signed in"
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert len(browser.urls) == 2 and grants().count("authorize") == 2


async def test_preregistered_client_and_fixed_callback_port(oauth_server):
    port = free_port()
    url, grants = oauth_server(PRE_CLIENT="codeloop-fixed", PRE_REDIRECT=f"http://127.0.0.1:{port}/callback")
    browser = Browser()
    manager = McpManager(tool_timeout=60)
    manager.on_auth_url = browser
    await manager.start([ServerConfig("remote", Transport.HTTP, url=url,
                                      oauth={"clientId": "codeloop-fixed", "callbackPort": port})], timeout=HANG_GUARD)
    try:
        assert await whoami(manager) == "signed in", manager.errors()
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)
    assert grants() == ["authorize", "code"]          # no dynamic registration: the server has it off
    assert "client_id=codeloop-fixed" in browser.urls[0] and f"127.0.0.1%3A{port}%2Fcallback" in browser.urls[0]


async def test_refused_authorization_is_one_line_and_the_rest_works(oauth_server):
    url, _ = oauth_server(DENY="1")
    tools = ServerConfig("tools", Transport.STDIO, command=sys.executable, args=(str(SERVERS / "tools_server.py"),))
    manager = await connect(url, extra=[tools])
    try:
        statuses = {s["name"]: s["status"] for s in manager.statuses()}
        assert statuses == {"remote": "failed", "tools": "connected"}
        error = manager.errors()["remote"]
        assert "access_denied" in error and "\n" not in error
        assert manager.auth_status() == {"remote": "failed", "tools": "not-required"}
        assert any(t.name == "mcp__tools__echo" for t in manager.tools())
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)


async def test_a_session_never_waits_on_a_sign_in_and_signs_in_when_asked(oauth_server, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "input"))
    from fakeapi import ScriptedAPI
    from inputhelpers import make_dispatcher

    url, grants = oauth_server()
    manager = McpManager(tool_timeout=60)
    manager.sign_in = False                      # what every session's start does
    browser = Browser()
    manager.on_auth_url = browser
    await manager.start([ServerConfig("remote", Transport.HTTP, url=url)], timeout=HANG_GUARD)
    try:
        assert manager.statuses() == [{"name": "remote", "status": "needs-auth"}]
        assert manager.problems() == ["server remote needs authentication: sign in with /mcp login remote in an "
                                      "interactive session, or `codeloop mcp login remote`"]
        assert browser.urls == [] and "authorize" not in grants() and manager.tools() == []
        d, front = make_dispatcher(ScriptedAPI(), tmp_path)
        front.conv.mcp = manager
        await d.on_submit("/mcp")
        assert "⚠ remote  needs-auth  ⚠ needs authentication: /mcp login remote" in front.text()
        visits: list[asyncio.Task] = []
        shown = front.show

        def show(text: str, *, style: str = "") -> None:   # the person opens the URL the REPL shows
            shown(text, style=style)
            if "/authorize?" in text:
                visits.append(asyncio.get_running_loop().create_task(browser.visit(text.splitlines()[-1])))

        front.show = show
        await d.on_submit("/mcp login remote")
        assert "Open this URL in a browser to sign in to remote" in front.text(), front.text()
        assert "Signed in to remote: connected, " in front.text() and visits and browser.pages == [200]
        assert await whoami(manager) == "signed in" and grants() == ["register", "authorize", "code"]
        await d.on_submit("/mcp logout remote")
        assert "Signed out of remote" in front.text()
        assert manager.statuses() == [{"name": "remote", "status": "needs-auth"}]   # and it does not ask again
        assert grants().count("authorize") == 1
    finally:
        await asyncio.wait_for(manager.aclose(), HANG_GUARD)


def run_codeloop(tmp_path, args, *, base_url="http://127.0.0.1:9", follow=True):
    """codeloop as a subprocess, following any printed authorization URL as a browser would:
    (process, stdout, stderr lines, status codes of the pages visited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"), "HOME": str(tmp_path), "DISPLAY": "",
                "WAYLAND_DISPLAY": "", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": base_url})
    visited: list[int] = []
    err_lines: list[str] = []
    proc = subprocess.Popen([sys.executable, "-m", "codeloop", *args], cwd=tmp_path, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read_stderr() -> None:
        for line in proc.stderr:
            err_lines.append(line)
            if follow and line.startswith("http://127.0.0.1") and "/authorize?" in line:
                visited.append(httpx.get(line.strip(), follow_redirects=True, timeout=30).status_code)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:   # stderr belongs to the reader thread: wait for the end, then read stdout
        proc.wait(timeout=HANG_GUARD)
    finally:
        proc.kill()
    out = proc.stdout.read()
    reader.join(timeout=10)
    return proc, out, err_lines, visited


def test_print_mode_never_waits_on_a_sign_in(oauth_server, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text

    url, grants = oauth_server()
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"remote": {"type": "http", "url": url}}}))
    api = ScriptedAPI(sse(text("answered without it")))
    with api.serve() as base:
        proc, out, err_lines, visited = run_codeloop(
            tmp_path, ["-p", "hi", "--mcp-config", str(cfg), "--output-format", "stream-json", "--verbose"],
            base_url=base)
    assert proc.returncode == 0, "".join(err_lines)
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["mcp_servers"] == [{"name": "remote", "status": "needs-auth"}]
    assert events[-1]["result"] == "answered without it"
    [line] = [x for x in err_lines if "remote" in x]
    assert "needs authentication" in line and "codeloop mcp login remote" in line
    assert visited == [] and "authorize" not in grants() and "mcp__remote__whoami" not in api.requests[0].tool_names


def test_mcp_login_from_a_terminal_then_print_mode_uses_the_token(oauth_server, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fakeapi import ScriptedAPI, sse, text, tool_use

    url, grants = oauth_server()
    assert run_codeloop(tmp_path, ["mcp", "add", "-t", "http", "remote", url])[0].returncode == 0
    proc, out, err_lines, visited = run_codeloop(tmp_path, ["mcp", "login", "remote"])
    assert proc.returncode == 0 and out.strip() == "Signed in to remote.", "".join(err_lines)
    assert visited == [200] and any("MCP server remote needs authorization" in x for x in err_lines)
    token_file = next((tmp_path / ".cfg" / "mcp-oauth").iterdir())
    token = json.loads(token_file.read_text())["tokens"]["access_token"]

    api = ScriptedAPI(sse(tool_use("mcp__remote__whoami", {}, id="w")), sse(text("you are signed in")))
    with api.serve() as base:
        proc, out, err_lines, visited = run_codeloop(tmp_path, ["-p", "who am I?", "--allowedTools",
                                                                "mcp__remote__whoami"], base_url=base)
    assert proc.returncode == 0 and out.strip() == "you are signed in", "".join(err_lines)
    assert visited == [] and grants() == ["register", "authorize", "code"]
    transcript = "".join(p.read_text() for p in (tmp_path / ".cfg" / "projects").rglob("*.jsonl"))
    assert "signed in" in transcript and token not in transcript
    assert token not in out + "".join(err_lines) and token not in json.dumps([r.body for r in api.requests])

    proc, out, _, _ = run_codeloop(tmp_path, ["mcp", "logout", "remote"])
    assert proc.returncode == 0 and "Signed out of remote" in out and not token_file.exists()


def test_mcp_login_refused_or_not_remote_is_one_line(oauth_server, tmp_path):
    url, _ = oauth_server(DENY="1")
    assert run_codeloop(tmp_path, ["mcp", "add", "-t", "http", "remote", url])[0].returncode == 0
    assert run_codeloop(tmp_path, ["mcp", "add", "local", sys.executable, "x.py"])[0].returncode == 0
    proc, out, err_lines, visited = run_codeloop(tmp_path, ["mcp", "login", "remote"])
    assert proc.returncode == 1 and visited == [200] and "Traceback" not in "".join(err_lines)
    [line] = [x for x in err_lines if x.startswith("Error:")]
    assert "Sign-in to remote failed" in line and "access_denied" in line
    for name, why in (("local", "only http and sse servers sign in"), ("ghost", "No MCP server found with name")):
        proc, _, err_lines, _ = run_codeloop(tmp_path, ["mcp", "login", name])
        assert proc.returncode == 1 and [x for x in err_lines if why in x] == err_lines, err_lines


def test_mcp_list_says_needs_authentication_without_a_browser(oauth_server, tmp_path):
    url, grants = oauth_server()
    assert run_codeloop(tmp_path, ["mcp", "add", "-t", "http", "remote", url])[0].returncode == 0
    proc, out, err_lines, visited = run_codeloop(tmp_path, ["mcp", "list"], follow=False)
    assert proc.returncode == 0, "".join(err_lines)
    assert f"remote: {url} (HTTP) - ⚠ Needs authentication" in out
    assert "/authorize?" not in out + "".join(err_lines) and "authorize" not in grants()
