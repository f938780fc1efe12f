"""MCP prompts and resources in the real REPL (a pty): a server's prompts are in the `/` menu
from the start and expand into the prompt the server returns; resources complete after `@` and
`@server:uri` attaches one."""

import json
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "servers" / "content_server.py"


def test_prompt_menu_expansion_and_resource_mention(tmp_path, screen):
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"content": {"command": sys.executable, "args": [str(SERVER)]}}}))
    api = ScriptedAPI(sse(text("hello there Bob")), sse(text("the word is pelican")))
    with api.serve() as url:
        s = screen(url, "--mcp-config", str(cfg), env={"HOME": str(tmp_path / "home")})
        s.term.send("/mcp__con")
        shown = s.wait_text("Greet someone (MCP: content)")
        assert "/mcp__content__review" in shown
        s.term.send("tent__greet Bob\r")
        s.wait_text("hello there Bob")
        s.term.send("what does @readme")
        s.wait_text("content:docs://readme")          # resources complete beside files
        s.term.send("\t")
        s.wait_for(lambda screen_text: s.input_line().rstrip() == "> what does @content:docs://readme")
        s.term.send(" say?\r")
        s.wait_text("the word is pelican")
    assert "Say hello to Bob in a cheerful way." in json.dumps(api.requests[0].messages[-1])
    assert "PELICAN" in json.dumps(api.requests[1].messages)
