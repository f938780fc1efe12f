"""Subagent definitions: the built-in `general-purpose` agent and `*.md` files with frontmatter.

Where they come from, highest precedence first (a name defined twice keeps the first):

    <project>/.codeloop/agents/*.md, <project>/.claude/agents/*.md,
    <config dir>/agents/*.md, ~/.claude/agents/*.md, built-ins

and each plugin's `agents/*.md`, named `<plugin>:<name>` (`plugin_agent_definitions`).

A file is YAML-style frontmatter between `---` lines, then the agent's system prompt:

    ---
    name: code-reviewer
    description: Reviews diffs for bugs
    tools: Read, Grep, Glob          # or [Read, Grep] or a "- Read" block list; "*"/absent = all
    model: sonnet                    # inherit (default) | sonnet | opus | haiku | a full model id
    maxTurns: 20                     # optional
    ---
    You are a meticulous reviewer…

Programmatic agents — the Agent SDK's `agents={...}` (sent in `initialize`) and `--agents JSON` —
use Claude Code's definition fields: `{"name": {"description", "prompt", "tools"?, "disallowedTools"?,
"model"?, "maxTurns"?, ...}}` (`definitions_from_json`); they take precedence over files.

Only the small frontmatter subset agents use is parsed (scalars, quoted scalars, inline and
block lists, `|`/`>` block scalars), so no YAML dependency is needed. A file that cannot be
parsed or lacks `name`/`description` is skipped and reported in `.warnings`; loading never raises.
A project's files are read without following links out of the project (permissions.project_files).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from enum import Enum
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.config.plugins import Plugin

GENERAL_PURPOSE = "general-purpose"
DEFAULT_MAX_TURNS = 50
INHERIT = "inherit"

DEFAULT_SUBAGENT_PROMPT = """\
You are a subagent of codeloop, an agentic coding harness. The main agent has handed you one task; \
carry it out using the tools you have, working autonomously — nobody will answer questions. \
Search and read before you change anything, keep to the task, and do not start unrelated work.

When you are done, reply with a concise final report: what you found or did, with the exact file \
paths and lines that matter. That final message is all the main agent receives, so include \
everything it needs and nothing else. If you cannot finish, say what blocked you."""

_NAME_RE = r"[A-Za-z0-9][A-Za-z0-9_.-]*"   # patterns compile on first use (re caches them), not at start-up
_KEY_RE = r"([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)"


class AgentSource(str, Enum):
    BUILTIN = "built-in"
    USER = "user"
    PROJECT = "project"
    CLI = "cli"            # --agents / the SDK's agents option
    PLUGIN = "plugin"      # a plugin's agents/ (config.plugins), named <plugin>:<agent>


@dataclass(frozen=True)
class AgentDefinition:
    """A subagent type: its prompt, tools, model and where it was defined."""
    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] | None = None     # None: every tool the parent has (except Task)
    model: str | None = None                 # None or "inherit": the parent's model
    max_turns: int | None = None             # None: DEFAULT_MAX_TURNS
    source: AgentSource = AgentSource.BUILTIN
    path: Path | None = None
    disallowed_tools: tuple[str, ...] = ()   # removed from the subagent's tools
    permission_mode: str | None = None       # Claude Code's `permissionMode` (None: the parent's)


BUILTIN_AGENTS: tuple[AgentDefinition, ...] = (
    AgentDefinition(
        name=GENERAL_PURPOSE,
        description=("General-purpose agent for researching complex questions, searching for code and "
                     "carrying out multi-step tasks. Use it when a search may take several rounds of "
                     "looking, or to keep a large investigation out of the main context."),
        system_prompt=DEFAULT_SUBAGENT_PROMPT),
)


class AgentDefinitions(dict[str, AgentDefinition]):
    """name → definition, plus the warnings about files that were skipped."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.warnings: list[str] = []


class FrontmatterError(ValueError):
    pass


# -- frontmatter --------------------------------------------------------------------------------

def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        if raw[0] == "'":
            return raw[1:-1].replace("''", "'")
        try:
            return str(json.loads(raw))  # YAML double-quoted escapes are (nearly) JSON's
        except ValueError:
            return raw[1:-1]
    if " #" in raw:  # a trailing comment
        raw = raw.split(" #", 1)[0].rstrip()
    return raw


def _inline_list(raw: str) -> list[str]:
    inner = raw.strip()[1:-1]
    return [_scalar(p) for p in inner.split(",") if p.strip()]


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(fields, body) of a markdown file that starts with a `---` frontmatter block."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontmatterError("no frontmatter: the file must start with a '---' line")
    try:
        end = next(k for k in range(1, len(lines)) if lines[k].strip() == "---")
    except StopIteration:
        raise FrontmatterError("the frontmatter is not closed by a '---' line") from None
    fields: dict[str, Any] = {}
    k = 1
    while k < end:
        line = lines[k]
        if not line.strip() or line.lstrip().startswith("#"):
            k += 1
            continue
        if line[:1].isspace():
            raise FrontmatterError(f"line {k + 1}: unexpected indentation: {line.strip()!r}")
        m = re.fullmatch(_KEY_RE, line.rstrip())
        if m is None:
            raise FrontmatterError(f"line {k + 1}: expected 'key: value', got {line.strip()!r}")
        key, rest = m.group(1), m.group(2).strip()
        k += 1
        block: list[str] = []
        while k < end and (not lines[k].strip() or lines[k][:1].isspace()):
            block.append(lines[k])
            k += 1
        while block and not block[-1].strip():
            block.pop()
        if rest in ("|", ">", "|-", ">-"):
            body = [b.strip() for b in block]
            fields[key] = "\n".join(body) if rest[0] == "|" else " ".join(b for b in body if b)
        elif rest.startswith("["):
            if not rest.endswith("]") or block:
                raise FrontmatterError(f"{key}: unterminated list")
            fields[key] = _inline_list(rest)
        elif rest == "" and block:
            items = [b.strip() for b in block if b.strip()]
            if not all(i.startswith("- ") or i == "-" for i in items):
                raise FrontmatterError(f"{key}: nested mappings are not supported")
            fields[key] = [_scalar(i[1:]) for i in items]
        elif block:
            raise FrontmatterError(f"{key}: unexpected indented lines after a value")
        else:
            fields[key] = _scalar(rest)
    return fields, "\n".join(lines[end + 1:]).strip()


# -- definitions ----------------------------------------------------------------------------------

def _tool_list(value: Any) -> tuple[str, ...] | None:
    if value is None or value == "":
        return None  # absent or empty: inherit every tool
    items = value if isinstance(value, list) else str(value).split(",")
    names = tuple(dict.fromkeys(s for s in (str(i).strip() for i in items) if s))
    return None if "*" in names else names


def parse_agent_file(path: Path, source: AgentSource) -> AgentDefinition:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise FrontmatterError(f"cannot read: {exc}") from exc
    return agent_from_text(text, path, source)


def agent_from_text(text: str, path: Path, source: AgentSource) -> AgentDefinition:
    """The definition a file's text gives; FrontmatterError when it gives none."""
    fields, body = parse_frontmatter(text)
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not re.fullmatch(_NAME_RE, name):
        raise FrontmatterError("missing or invalid 'name' (letters, digits, '-', '_', '.')")
    if not isinstance(description, str) or not description.strip():
        raise FrontmatterError("missing 'description'")
    model = fields.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise FrontmatterError("'model' must be a model name, an alias or 'inherit'")
    max_turns = fields.get("maxTurns", fields.get("max_turns"))
    if max_turns is not None:
        if not (isinstance(max_turns, str) and max_turns.isdigit() and int(max_turns) > 0):
            raise FrontmatterError("'maxTurns' must be a positive integer")
        max_turns = int(max_turns)
    return AgentDefinition(name=name, description=description.strip(),
                           system_prompt=body or DEFAULT_SUBAGENT_PROMPT, tools=_tool_list(fields.get("tools")),
                           model=None if model is None or model == INHERIT else model.strip(), max_turns=max_turns,
                           source=source, path=path, disallowed_tools=_tool_list(fields.get("disallowedTools")) or (),
                           permission_mode=_permission_mode(fields.get("permissionMode"), FrontmatterError))


PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


def _permission_mode(value: Any, error: type[Exception], name: str = "") -> str | None:
    if value is None or value == "":
        return None
    if value not in PERMISSION_MODES:
        raise error(f"{name}'permissionMode' must be one of {', '.join(PERMISSION_MODES)}")
    return str(value)


# Fields of Claude Code's AgentDefinition codeloop does not act on (accepted, not an error).
_IGNORED_FIELDS = frozenset({"skills", "memory", "mcpServers", "initialPrompt", "background", "effort", "color"})


def definition_from_dict(name: str, raw: Any) -> AgentDefinition:
    """One programmatic definition (SDK `AgentDefinition` / `--agents` entry); ValueError when unusable."""
    if isinstance(raw, AgentDefinition):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"agent {name!r}: expected an object with description and prompt")
    if not re.fullmatch(_NAME_RE, str(name)):
        raise ValueError(f"agent {name!r}: invalid name (letters, digits, '-', '_', '.')")
    description, prompt = raw.get("description"), raw.get("prompt")
    if not isinstance(description, str) or not description.strip():
        raise ValueError(f"agent {name!r}: missing 'description'")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"agent {name!r}: missing 'prompt'")
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError(f"agent {name!r}: 'model' must be a model name, an alias or 'inherit'")
    max_turns = raw.get("maxTurns")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError(f"agent {name!r}: 'maxTurns' must be a positive integer")
    return AgentDefinition(name=str(name), description=description.strip(), system_prompt=prompt,
                           tools=_tool_list(raw.get("tools")), model=None if model in (None, INHERIT) else model,
                           max_turns=max_turns, source=AgentSource.CLI,
                           disallowed_tools=_tool_list(raw.get("disallowedTools")) or (),
                           permission_mode=_permission_mode(raw.get("permissionMode"), ValueError, f"agent {name!r}: "))


def definitions_from_json(value: Any) -> AgentDefinitions:
    """`--agents '{"reviewer": {...}}'` (a JSON string) or the SDK's agents dict → definitions.
    Raises ValueError with a message for the user."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"--agents: invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("--agents: expected a JSON object of agent name → definition")
    out = AgentDefinitions()
    for name, raw in value.items():
        out[str(name)] = definition_from_dict(str(name), raw)
    return out


def agent_dirs(cwd: Path, config_dir: Path, home: Path | None = None) -> list[tuple[Path, AgentSource]]:
    """The folders definitions are read from, highest precedence first."""
    home = Path.home() if home is None else home
    return [(cwd / ".codeloop" / "agents", AgentSource.PROJECT), (cwd / ".claude" / "agents", AgentSource.PROJECT),
            (config_dir / "agents", AgentSource.USER), (home / ".claude" / "agents", AgentSource.USER)]


def load_agent_definitions(cwd: Path, config_dir: Path, *, home: Path | None = None) -> AgentDefinitions:
    """A project's definitions are read without following a link out of the project
    (permissions.project_files); a file skipped so is named in `.warnings`."""
    from codeloop.permissions.project_files import ProjectFiles

    out = AgentDefinitions()
    files = ProjectFiles(cwd)
    seen_dirs: set[Path] = set()
    dirs = agent_dirs(cwd, config_dir, home)
    users = {os.path.realpath(f) for f, s in dirs if s is AgentSource.USER}
    for folder, source in dirs:
        project = source is AgentSource.PROJECT
        if project and (os.path.realpath(folder) in users or not files.project_dir(folder, "agent definitions")):
            continue   # started in ~, ~/.claude/agents is the user's folder: read as theirs below
        try:
            resolved = folder.resolve()
            found = sorted(folder.glob("*.md")) if folder.is_dir() else []
        except OSError as exc:
            out.warnings.append(f"{folder}: cannot list agent definitions: {exc}")
            continue
        if resolved in seen_dirs:  # e.g. the config dir is ~/.claude
            continue
        seen_dirs.add(resolved)
        for path in found:
            try:
                text = (files.read_text(path, "agent definition", errors="strict") if project
                        else files.read_user_text(path, "agent definition", errors="strict"))
                if text is None:
                    continue
                definition = agent_from_text(text, path, source)
            except (FrontmatterError, UnicodeError) as exc:
                out.warnings.append(f"{path}: skipped agent definition: {exc}")
                continue
            out.setdefault(definition.name, definition)
    out.warnings += files.drain()
    for builtin in BUILTIN_AGENTS:
        out.setdefault(builtin.name, builtin)
    return out


def plugin_agent_definitions(plugins: Sequence[Plugin]) -> AgentDefinitions:
    """Each plugin's agent files, named `<plugin>:<name>`; a file skipped is named in `.warnings`."""
    from dataclasses import replace

    from codeloop.permissions.project_files import ProjectFiles

    out = AgentDefinitions()
    files = ProjectFiles(Path.cwd())
    for plugin in plugins:
        for folder in plugin.agent_paths:
            for path in (sorted(folder.glob("*.md")) if folder.is_dir() else [folder]):
                try:
                    text = files.read_user_text(path, "agent definition", errors="strict")
                    if text is None:
                        continue
                    definition = agent_from_text(text, path, AgentSource.PLUGIN)
                except (FrontmatterError, UnicodeError) as exc:
                    out.warnings.append(f"{path}: skipped agent definition: {exc}")
                    continue
                out.setdefault(f"{plugin.name}:{definition.name}",
                               replace(definition, name=f"{plugin.name}:{definition.name}"))
    out.warnings += files.drain()
    return out


def resolve_agent_model(definition: AgentDefinition, parent_model: str) -> str:
    """The model a subagent runs on: the parent's for inherit/unset, aliases resolved."""
    from codeloop.providers.aliases import MODEL_ALIASES

    model = definition.model
    if not model or model == INHERIT:
        return parent_model
    return MODEL_ALIASES.get(model, model)


def agent_listing(definitions: dict[str, AgentDefinition]) -> str:
    """`- name: description (Tools: …)` lines for the Task tool's description."""
    lines = []
    for d in definitions.values():
        if not isinstance(d, AgentDefinition):  # a raw programmatic definition that slipped through
            continue
        tools = ", ".join(d.tools) if d.tools is not None else "*"
        lines.append(f"- {d.name}: {d.description} (Tools: {tools})")
    return "\n".join(lines)
