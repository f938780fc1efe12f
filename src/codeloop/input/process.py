"""process_user_input (spec 004 §4): one submitted command → the messages it adds to the context.

Owns the input forms the harness handles itself before (or instead of) a model call:

* `/name args` — slash commands: LOCAL ones run here and show their output (no model call);
  PROMPT ones (custom commands, /init) expand into the prompt that is sent.
* bash mode (`!cmd`) — the user's own shell command, run in the session's cwd with no permission
  check (the user typed it); input and output enter the context as `<bash-*>` user messages so
  the model sees them next turn. No model call.
* `@path` mentions — the file's content attached as a meta message, read through the Read tool
  and only when the permission policy would let Read have it without asking; `@server:uri` names
  an MCP server's resource instead, and `/mcp__server__prompt` a server's prompt (mcp_input.py).
* task notifications (a background task ended while no query ran) — the model is told in a
  new turn, with the same meta message the loop folds in between turns.
* pasted-text placeholders (`[Pasted text #1 +12 lines]`) expanded back; pasted images become
  image blocks on the prompt.

Attachments are skipped for every command but the first of a batch (`skip_attachments`), so a
batch of queued prompts does not inject the same files twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.config.flags import ATTACH_NAMED_FILES
from codeloop.input.commands import CommandRegistry, CommandType, parse_slash
from codeloop.loop.queue import QueuedCommand, QueueMode, _image_blocks, queued_command_message
from codeloop.messages import READ_ATTACHMENT_HEAD, Message, user_message

if TYPE_CHECKING:
    from codeloop.abort import AbortController
    from codeloop.input.commands import CommandHost
    from codeloop.session.conversation import Conversation

BASH_OUTPUT_LIMIT = 30_000
BASH_TIMEOUT_S = 600.0
MAX_DIR_ENTRIES = 200
_PASTE_REF = re.compile(r"\[Pasted text #(\d+)(?: \+\d+ lines)?\]")
_MENTION = re.compile(r'(?:^|(?<=\s))@("[^"]+"|[^\s"]+)')


@dataclass
class ProcessedInput:
    """What the user's input became: messages, whether to query, notices and output."""
    messages: list[Message] = field(default_factory=list)  # the last one is the prompt when querying
    should_query: bool = False
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    notices: list[str] = field(default_factory=list)       # shown to the user, never to the model
    output: str | None = None                               # a LOCAL command's output


def paste_placeholder(paste_id: int, text: str) -> str:
    lines = text.count("\n")
    return f"[Pasted text #{paste_id} +{lines} lines]" if lines else f"[Pasted text #{paste_id}]"


def expand_pasted_text(value: str, pasted: dict[Any, dict[str, Any]] | None) -> str:
    if not pasted:
        return value

    def sub(m: re.Match[str]) -> str:
        item = pasted.get(int(m.group(1))) or pasted.get(m.group(1))
        return item["content"] if item and item.get("type") == "text" else m.group(0)
    return _PASTE_REF.sub(sub, value)


def add_to_context(conv: Conversation, messages: list[Message]) -> None:
    """Record messages that reach the model with the next request, without a model call now."""
    conv.add_messages(messages)


# -- bash mode ------------------------------------------------------------------------------------

def _clip(s: str) -> str:
    return s if len(s) <= BASH_OUTPUT_LIMIT else s[:BASH_OUTPUT_LIMIT] + f"\n… [{len(s) - BASH_OUTPUT_LIMIT} chars cut]"


async def run_bash_mode(command: str, cwd: Path, abort: AbortController | None = None) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of the user's `!command`; aborting kills it (exit code 130)."""
    proc = await asyncio.create_subprocess_shell(command, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                 start_new_session=True)
    comm = asyncio.ensure_future(proc.communicate())
    waiters: set[asyncio.Future[Any]] = {comm}
    stopper = asyncio.ensure_future(abort.wait()) if abort is not None else None
    if stopper is not None:
        waiters.add(stopper)
    done, _ = await asyncio.wait(waiters, timeout=BASH_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    if stopper is not None:
        stopper.cancel()
    if comm not in done:
        try:
            os.killpg(proc.pid, 9)  # the whole group: `sleep 100 | cat` must die too
        except ProcessLookupError:
            pass
        out, err = await comm
        why = "interrupted" if stopper is not None and stopper in done else f"timed out after {BASH_TIMEOUT_S:.0f}s"
        return out.decode(errors="replace"), err.decode(errors="replace") + f"\n[command {why}]", 130
    out, err = comm.result()
    return out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode or 0


def bash_messages(command: str, out: str, err: str) -> list[Message]:
    return [user_message(f"<bash-input>{command}</bash-input>"),
            user_message(f"<bash-stdout>{_clip(out.rstrip())}</bash-stdout>"
                         f"<bash-stderr>{_clip(err.rstrip())}</bash-stderr>")]


# -- @file mentions -------------------------------------------------------------------------------

def find_mentions(text: str) -> list[str]:
    return [m.strip('"') for m in _MENTION.findall(text)]


# A bare word that names a file: a path with an extension ("config.ini", "src/app.py").
_NAMED_FILE = re.compile(r"""(?:^|(?<=[\s"'`(]))([\w.-]*[\w-]\.[A-Za-z0-9]+|[\w.-]+(?:/[\w.-]+)+)""")
MAX_NAMED_FILES = 3


def named_files(text: str, cwd: Path) -> list[str]:
    """Existing files inside `cwd` that `text` names without an @ (at most MAX_NAMED_FILES).

    The local-model profile attaches them like @-mentions: a small model that already sees the
    file a question names answers it instead of hunting for it with searches it gets wrong."""
    out: list[str] = []
    root = cwd.resolve()
    for word in dict.fromkeys(w.rstrip(".") for w in _NAMED_FILE.findall(text)):
        path = (cwd / word).resolve()
        if path.is_relative_to(root) and path.is_file():
            out.append(word)
            if len(out) == MAX_NAMED_FILES:
                break
    return out


def mentions_in(conv: Conversation, text: str) -> list[str]:
    """The @-mentions of `text`, plus the files it names when the session attaches those."""
    found = find_mentions(text)
    if conv.config.feature_flags.get(ATTACH_NAMED_FILES):
        found += named_files(text, conv.config.cwd)
    return list(dict.fromkeys(found))


async def attachment_for(conv: Conversation, mention: str) -> tuple[Message | None, str | None]:
    """(meta message, None) for a readable mention, (None, why) when refused, (None, None) if no file."""
    from codeloop.tools.base import PermissionBehavior
    from codeloop.tools.registry import parse_tool_input

    if ":" in mention and conv.mcp is not None:
        from codeloop.input.mcp_input import resource_attachment, resource_mention

        if (resource := resource_mention(conv, mention)) is not None:
            return await resource_attachment(conv, *resource)
    path = Path(os.path.expanduser(mention))
    path = path if path.is_absolute() else conv.config.cwd / path
    if not path.exists() and mention.rstrip("?!.,;:)") != mention:  # "look at @a.py?" names a.py
        return await attachment_for(conv, mention.rstrip("?!.,;:)"))
    if not path.exists():
        return None, None  # "@someone" in prose: not a file, leave the text alone
    read = next((t for t in conv.config.tools if t.name == "Read"), None)
    if read is None:
        return None, f"@{mention}: not attached (the Read tool is not available in this session)"
    raw = {"file_path": str(path)}
    inp = parse_tool_input(read, raw)
    opinion = await read.check_permissions(inp, conv.tool_context)
    decision = conv.config.policy.decide(read, inp, opinion, raw)
    if decision.behavior is not PermissionBehavior.ALLOW:
        return None, f"@{mention}: not attached — {decision.message or 'Read would need permission'}"
    if path.is_dir():
        entries = sorted(os.listdir(path))
        listing = "\n".join(f"- {e}{'/' if (path / e).is_dir() else ''}" for e in entries[:MAX_DIR_ENTRIES])
        more = f"\n… and {len(entries) - MAX_DIR_ENTRIES} more" if len(entries) > MAX_DIR_ENTRIES else ""
        body = f"Called the Bash tool with the following input: {{\"command\": \"ls {path}\"}}\n\n" \
               f"Result of calling the Bash tool:\n{listing}{more}"
        return user_message(body, is_meta=True), None
    result = await read.call(inp, conv.tool_context)
    blocks = [] if isinstance(result.content, str) else list(result.content)
    content = result.content if isinstance(result.content, str) else "\n".join(
        b.get("text", "") for b in blocks if b.get("type") == "text")
    if result.is_error:
        return None, f"@{mention}: not attached — {content[:200]}"
    head = (f"{READ_ATTACHMENT_HEAD}: {json.dumps(raw)}\n\n"
            f"Result of calling the Read tool:\n")
    media = [b for b in blocks if b.get("type") in ("image", "document")]
    if media:  # an image (or PDF) travels as its own block, as the Read tool's result does
        return user_message([{"type": "text", "text": head + content if content else head.rstrip()}, *media],
                            is_meta=True), None
    return user_message(head + content, is_meta=True), None


async def mention_attachments(conv: Conversation, text: str) -> list[str]:
    """Attach the files `text` mentions to the context (print mode); the notices for refused ones."""
    messages, notices = [], []
    for mention in mentions_in(conv, text):
        msg, why = await attachment_for(conv, mention)
        if msg is not None:
            messages.append(msg)
        elif why:
            notices.append(why)
    if messages:
        add_to_context(conv, messages)
    return notices


# -- pasted images ----------------------------------------------------------------------------------

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the API's per-image limit


def pasted_image_path(text: str, cwd: Path) -> Path | None:
    """The image file a paste names (a dragged or copied path: quoted, `file://`, `\\ ` escapes), or None."""
    from urllib.parse import unquote

    t = text.strip()
    if not t or "\n" in t or len(t) > 4096:
        return None
    if len(t) > 1 and t[0] == t[-1] and t[0] in "'\"":
        t = t[1:-1]
    if t.startswith("file://"):
        t = unquote(t[len("file://"):])
    t = re.sub(r"\\(.)", r"\1", t)
    path = Path(os.path.expanduser(t))
    path = path if path.is_absolute() else cwd / path
    return path if path.suffix.lower() in IMAGE_TYPES and path.is_file() else None


def image_paste(data: bytes, media_type: str) -> dict[str, Any] | str:
    """A pasted-contents entry for an image, or why it cannot be attached."""
    import base64

    if len(data) > MAX_IMAGE_BYTES:
        return f"image not attached: {len(data) // 1024} KB is over the {MAX_IMAGE_BYTES // 1024 // 1024} MB limit"
    return {"type": "image", "content": base64.b64encode(data).decode("ascii"), "media_type": media_type}


# -- the entry point --------------------------------------------------------------------------------

async def process_user_input(host: CommandHost, registry: CommandRegistry, cmd: QueuedCommand, *,
                             skip_attachments: bool = False,
                             abort: AbortController | None = None) -> ProcessedInput:
    conv = host.conv
    value = expand_pasted_text(cmd.value, cmd.pasted_contents)
    if cmd.mode is QueueMode.BASH:
        out, err, _ = await run_bash_mode(value, conv.config.cwd, abort)
        return ProcessedInput(bash_messages(value, out, err), should_query=False)
    if cmd.mode is QueueMode.TASK_NOTIFICATION:   # a background task ended while no query ran: tell the model now
        return ProcessedInput([queued_command_message(cmd)], should_query=True)
    result = ProcessedInput()
    slash = None if cmd.skip_slash_commands else parse_slash(value)
    if slash is not None:
        name, args = slash
        if conv.mcp is not None:   # the connected servers' prompts, as they are now
            from codeloop.input.mcp_input import sync_prompt_commands
            sync_prompt_commands(registry, conv)
        command = registry.find(name)
        if command is None:
            return ProcessedInput(output=f"Unknown command: /{name}  (/help lists the commands)")
        try:
            outcome = await command.run(host, args)
        except Exception as exc:  # a failing command (say /compact on an API error) is reported, not fatal
            return ProcessedInput(output=f"/{name} failed: {exc}")
        if command.type is CommandType.LOCAL or not outcome.should_query:
            return ProcessedInput(output=outcome.text)
        value = outcome.prompt or ""
        result.allowed_tools, result.model = outcome.allowed_tools, outcome.model
        # UserPromptExpansion hooks: exit 2 blocks the expansion; their stdout is context for the model
        expansion = await conv.hooks.lifecycle.user_prompt_expansion(name, args, command.source.value, value)
        if expansion.refused:
            return ProcessedInput(output=f"/{name} was blocked by a UserPromptExpansion hook: {expansion.reason}")
        if expansion.context:
            result.messages.append(user_message("<system-reminder>\nUserPromptExpansion hook additional context:\n"
                                                + "\n".join(expansion.context) + "\n</system-reminder>",
                                                is_meta=True))
    if not skip_attachments:
        for mention in mentions_in(host.conv, value):
            msg, why = await attachment_for(host.conv, mention)
            if msg is not None:
                result.messages.append(msg)
            elif why:
                result.notices.append(why)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": value}, *_image_blocks(cmd.pasted_contents)]
    result.messages.append(user_message(blocks if len(blocks) > 1 else value))
    result.should_query = True
    return result


def clipboard_image() -> tuple[bytes, str] | None:
    """The clipboard's image (bytes, media type) through wl-paste or xclip where one is installed."""
    import subprocess

    from codeloop.shellpath import find_program

    tools = []
    if os.environ.get("WAYLAND_DISPLAY") and (wl := find_program("wl-paste")):
        tools.append(([wl, "--list-types"], lambda t, wl=wl: [wl, "--type", t]))
    if os.environ.get("DISPLAY") and (xclip := find_program("xclip")):
        tools.append(([xclip, "-selection", "clipboard", "-t", "TARGETS", "-o"],
                      lambda t, xclip=xclip: [xclip, "-selection", "clipboard", "-t", t, "-o"]))
    for list_types, fetch in tools:
        try:
            types = subprocess.run(list_types, capture_output=True, timeout=2).stdout.decode(errors="replace")
            kind = next((t for t in IMAGE_TYPES.values() if t in types.split()), None)
            if kind:
                data = subprocess.run(fetch(kind), capture_output=True, timeout=5).stdout
                if data:
                    return data, kind
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None
