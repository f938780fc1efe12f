"""MCP in the user's input: `@server:uri` resource mentions and `/mcp__server__prompt` commands.

* `@server:uri` (`@docs:file://api/auth`) names a resource of a connected MCP server: its contents
  are read and attached as a meta message, as an `@file` mention attaches a file. The read goes
  through the permission policy as ReadMcpResourceTool (a deny rule stops it). A mention whose
  server is not a connected MCP server is left to the `@file` handling.
* A server's prompts are slash commands named `mcp__<server>__<prompt>` (synced into the command
  registry before each slash command, so /help and completion see them); the words after the
  command fill the prompt's arguments in order, and the prompt the server returns is what is
  sent to the model.

Failures (unknown resource, a server that refuses) are one line naming the server; the prompt
goes on without the attachment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codeloop.messages import Message, user_message

if TYPE_CHECKING:
    from codeloop.input.commands import Command, CommandRegistry
    from codeloop.session.conversation import Conversation

PROMPT_PREFIX = "mcp__"


def resource_mention(conv: Conversation, mention: str) -> tuple[str, str] | None:
    """(server, uri) when `mention` is `server:uri` for a connected MCP server, else None."""
    manager = getattr(conv, "mcp", None)
    # the longest connected name first: a plugin's servers are `plugin:<plugin>:<server>`
    servers = sorted(manager.connected_servers() if manager is not None else [], key=len, reverse=True)
    server = next((s for s in servers if mention.startswith(s + ":") and len(mention) > len(s) + 1), None)
    if server is None:
        return None
    uri = mention[len(server) + 1:]
    return server, uri.rstrip("?!.,;:)") or uri   # "see @docs:a://b." names a://b


async def resource_attachment(conv: Conversation, server: str, uri: str) -> tuple[Message | None, str | None]:
    """(meta message, None) with the resource's contents, or (None, why) in one line."""
    from codeloop.mcp.resources import READ_NAME, resource_text
    from codeloop.tools.base import PermissionBehavior, ToolError
    from codeloop.tools.registry import parse_tool_input

    manager = conv.mcp
    tool = next((t for t in manager.tools() if t.name == READ_NAME), None)
    if tool is None:
        return None, f"@{server}:{uri}: not attached — MCP server {server} offers no resources"
    raw = {"server": server, "uri": uri}
    inp = parse_tool_input(tool, raw)
    decision = conv.config.policy.decide(tool, inp, await tool.check_permissions(inp, conv.tool_context), raw)
    if decision.behavior is not PermissionBehavior.ALLOW:
        return None, f"@{server}:{uri}: not attached — {decision.message or 'reading it would need permission'}"
    try:
        result = await manager.read_resource(server, uri)
    except ToolError as exc:
        return None, f"@{server}:{uri}: not attached — {exc}"
    return user_message(resource_text(server, uri, result), is_meta=True), None


def prompt_command(conv: Conversation, name: str) -> Command | None:
    """The slash command for `mcp__server__prompt`, when a connected server has that prompt."""
    manager = getattr(conv, "mcp", None)
    if not name.startswith(PROMPT_PREFIX) or manager is None:
        return None
    found = next(((s, p) for s, p in manager.prompts() if command_name(s, p["name"]) == name), None)
    if found is None:
        return None
    server, prompt = found
    from codeloop.input.commands import Command, CommandOutcome, CommandType
    from codeloop.input.custom_commands import CommandSource

    async def run(host: Any, args: str) -> CommandOutcome:
        try:
            return CommandOutcome(prompt=await expand(host.conv, server, prompt, args))
        except ValueError as exc:   # shown to the user; nothing is sent
            return CommandOutcome(text=str(exc))

    from codeloop.mcp.resources import prompt_usage

    return Command(name=name, description=f"{prompt.get('description') or prompt['name']} (MCP: {server})",
                   type=CommandType.PROMPT, handler=run, argument_hint=prompt_usage(name, prompt).partition(" ")[2],
                   source=CommandSource.MCP)


def prompt_commands(conv: Conversation) -> list[Command]:
    """Every connected server's prompts as slash commands (for /help and completion)."""
    manager = getattr(conv, "mcp", None)
    names = [command_name(s, p["name"]) for s, p in (manager.prompts() if manager is not None else [])]
    return [c for n in names if (c := prompt_command(conv, n)) is not None]


def sync_prompt_commands(registry: CommandRegistry, conv: Conversation) -> None:
    """Put the connected servers' prompts in the registry (servers come and go), so /help and
    completion list them; a name a built-in or custom command holds stays theirs."""
    from codeloop.input.custom_commands import CommandSource

    for name in [n for n, c in registry.commands.items() if c.source is CommandSource.MCP]:
        del registry.commands[name]
    for cmd in prompt_commands(conv):
        registry.commands.setdefault(cmd.name, cmd)


def command_name(server: str, prompt: str) -> str:
    from codeloop.mcp.tools import sanitize

    return f"{PROMPT_PREFIX}{sanitize(server)}__{sanitize(prompt)}"


async def expand(conv: Conversation, server: str, prompt: dict[str, Any], args: str) -> str:
    """The prompt text the server returns for these arguments; ValueError (one line) when it cannot."""
    from codeloop.mcp.resources import prompt_arguments, prompt_text
    from codeloop.tools.base import ToolError

    name = command_name(server, prompt["name"])
    try:
        values = prompt_arguments(name, prompt, args)
        result = await conv.mcp.get_prompt(server, prompt["name"], values)
    except (ValueError, ToolError) as exc:
        raise ValueError(f"/{name}: {exc}") from None
    text = prompt_text(result)
    if not text.strip():
        raise ValueError(f"/{name}: MCP server {server} returned an empty prompt")
    return text


async def expand_slash(conv: Conversation, value: str) -> str | None:
    """`/mcp__server__prompt args` → the prompt to send (print mode); None when it is no MCP prompt;
    ValueError (one line) when the prompt cannot be had."""
    from codeloop.input.commands import parse_slash

    slash = parse_slash(value)
    if slash is None or not slash[0].startswith(PROMPT_PREFIX):
        return None
    manager = getattr(conv, "mcp", None)
    found = next(((s, p) for s, p in (manager.prompts() if manager is not None else [])
                  if command_name(s, p["name"]) == slash[0]), None)
    if found is None:
        return None
    return await expand(conv, found[0], found[1], slash[1])


async def expand_message(conv: Conversation, prompt: Message) -> Message:
    """The prompt message with `/mcp__server__prompt args` replaced by what the server returns (the
    same message, uuid and all, when it names no MCP prompt); ValueError (one line) when it fails."""
    from dataclasses import replace

    text = await expand_slash(conv, prompt.text)
    return prompt if text is None else replace(prompt, content=[{"type": "text", "text": text}])
