"""`codeloop mcp serve`: codeloop's file and shell tools offered to any MCP client over stdio.

    argv ─▶ RunOptions (codeloop's own flags: --permission-mode, --allowedTools, --settings, -d, …)
         ─▶ open_session (the one assembly: policy, sandbox, hooks; no model, no transcript,
            none of the configured MCP servers — a served codeloop is a tool box, not a client)
         ─▶ tools/list   the served tools the session has (SERVED, narrowed by --tools / deny rules)
         ─▶ tools/call   the loop's own tool runner: PreToolUse hooks, rules and mode, the sandbox,
                         PostToolUse hooks — exactly what a model's call goes through

Nobody is there to answer a permission question, so a call that would ask is refused with the
reason, as in print mode; the mode and rules decide what runs (`--permission-mode acceptEdits`,
`--allowedTools "Bash(git status:*)"`, settings `permissions`). Calls run one at a time, in one
session, so a Read before an Edit counts as in a conversation.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
from typing import Any

# The tools that make sense without a model or a conversation around them (WebFetch and the
# agents need a model, AskUserQuestion a person, the plan and task tools a conversation).
SERVED = ("Bash", "Glob", "Grep", "Read", "Edit", "Write", "NotebookEdit", "TaskOutput", "TaskStop")
_ERROR_TAG = re.compile(r"</?tool_use_error>")


class _NoModel:
    """The provider of a served session: nothing in it may call a model."""
    name = "none"

    async def stream(self, request: Any) -> Any:
        raise RuntimeError("codeloop mcp serve has no model")
        yield  # an async generator, as providers are

    async def aclose(self) -> None:
        return None


def serve_main(argv: list[str]) -> int:
    """Run the server until the client closes stdin; 1 with one line when the session cannot start."""
    from codeloop.cli.startup.options import resolve_options
    from codeloop.cli.startup.parser import build_parser
    from codeloop.cli.startup.preflight import FlagError, prepare
    from codeloop.cli.startup.tool_lists import tool_list
    from codeloop.session.options import SetupError

    try:
        args = build_parser().parse_args(["-p", "mcp serve", "--no-session-persistence", "--strict-mcp-config", *argv])
        prepare(args)   # -d/--debug logs to stderr: stdout is the protocol's
        args.allowed_tools = tool_list(args.allowed_tools) or []
        args.disallowed_tools = tool_list(args.disallowed_tools) or []
        args.tools = tool_list(args.tools)
        options = resolve_options(args, interactive=False, model_needed=False)   # a tool box: no model
    except SystemExit as exc:   # argparse said why on stderr
        return int(exc.code or 1)
    except (SetupError, FlagError, ValueError) as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1
    try:
        return asyncio.run(_serve(options))
    except SetupError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130


async def _serve(options: Any) -> int:
    import logging

    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from codeloop.session.assembly import open_session
    from codeloop.session.parts import SessionHost
    from codeloop.version import __version__

    logging.getLogger("mcp").setLevel(logging.WARNING)
    conv, warnings = await open_session(options, SessionHost(), provider=_NoModel())
    for w in warnings:
        sys.stderr.write(f"codeloop: warning: {w}\n")
    tools = {t.name: t for t in conv.config.tools if t.name in SERVED}
    calls = ToolCalls(conv, list(tools.values()))
    server: Any = Server("codeloop", version=__version__, on_list_tools=calls.list_tools,
                         on_call_tool=calls.call_tool)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await conv.aclose()
    return 0


class ToolCalls:
    """The server's two handlers over one session's tools."""

    def __init__(self, conv: Any, tools: list[Any]) -> None:
        self.conv, self.tools = conv, tools
        self.lock = asyncio.Lock()          # one call at a time: tools share the session's state
        self.ids = itertools.count(1)

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(tools=[types.Tool(name=t.name, description=str(t.description),
                                                       input_schema=t.input_schema()) for t in self.tools])

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        from codeloop.loop.tool_runner import run_tool_use

        block = {"type": "tool_use", "id": f"toolu_mcp_{next(self.ids):06d}", "name": params.name,
                 "input": dict(params.arguments or {})}
        async with self.lock:
            run = await run_tool_use(block, self.tools, self.conv.tool_context, self.conv.can_use_tool)
        result = next(b for b in run.message.content if isinstance(b, dict) and b.get("type") == "tool_result")
        return mcp_result(result)


def mcp_result(result: dict[str, Any]) -> Any:
    """A tool_result block → the MCP CallToolResult (text and images; errors flagged)."""
    from mcp import types

    content = result.get("content")
    blocks: list[dict[str, Any]] = ([{"type": "text", "text": content}] if isinstance(content, str)
                                    else list(content or []))
    out: list[Any] = []
    for b in blocks:
        if b.get("type") == "image" and (b.get("source") or {}).get("type") == "base64":
            out.append(types.ImageContent(data=b["source"]["data"], mime_type=b["source"]["media_type"]))
        elif b.get("type") == "text":
            out.append(types.TextContent(text=_ERROR_TAG.sub("", str(b.get("text", "")))))
    return types.CallToolResult(content=out or [types.TextContent(text="(no output)")],
                                is_error=bool(result.get("is_error")))
