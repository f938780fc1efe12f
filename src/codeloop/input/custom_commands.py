"""Custom slash commands: markdown files in `commands/` folders, with optional frontmatter.

Where they come from, highest precedence first (a name defined twice keeps the first):

    <project>/.codeloop/commands/*.md, <project>/.claude/commands/*.md,
    <config dir>/commands/*.md, ~/.claude/commands/*.md

    ---
    description: Review the staged diff
    allowed-tools: Bash(git diff:*), Read
    model: haiku
    argument-hint: [focus]
    ---
    Review the staged changes, paying attention to $ARGUMENTS.

A file in a subfolder is namespaced: `commands/git/review.md` is `/git:review`; a plugin's
`commands/review.md` is `/<plugin>:review` (and `/review` while no other command has that name). The body is the
prompt; `$ARGUMENTS` becomes everything typed after the command and `$1`…`$9` the
whitespace-separated words. A file whose frontmatter cannot be parsed is skipped with a warning,
and so is a project's file that leads out of the project (a link to a secret is never read).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from enum import Enum
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.config.plugins import Plugin


class CommandSource(str, Enum):
    BUILTIN = "built-in"
    PROJECT = "project"
    USER = "user"
    PLUGIN = "plugin"
    MCP = "mcp"          # a connected MCP server's prompt (input.mcp_input)


@dataclass(frozen=True)
class CustomCommand:
    """A slash command defined in a markdown file."""
    name: str
    prompt: str
    description: str
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    argument_hint: str | None = None
    source: CommandSource = CommandSource.PROJECT
    path: Path | None = None


_POSITIONAL = re.compile(r"\$([1-9])")


def expand_arguments(template: str, args: str) -> str:
    """`$ARGUMENTS` → the whole argument string, `$1`…`$9` → single words.

    With no placeholder at all the arguments are appended, so `/cmd some text` never loses
    what the user typed (Claude Code does the same).
    """
    args = args.strip()
    has_placeholder = "$ARGUMENTS" in template or _POSITIONAL.search(template) is not None
    if not has_placeholder:
        return f"{template}\n\nARGUMENTS: {args}" if args else template
    try:
        words = shlex.split(args)
    except ValueError:  # an unbalanced quote: fall back to plain words
        words = args.split()
    out = template.replace("$ARGUMENTS", args)
    return _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", out)


def command_dirs(cwd: Path, config_dir: Path, home: Path | None = None) -> list[tuple[Path, CommandSource]]:
    home = home if home is not None else Path(os.path.expanduser("~"))
    return [(cwd / ".codeloop" / "commands", CommandSource.PROJECT),
            (cwd / ".claude" / "commands", CommandSource.PROJECT),
            (config_dir / "commands", CommandSource.USER),
            (home / ".claude" / "commands", CommandSource.USER)]


def _tools(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, list):
        items = [str(v) for v in value]
    else:  # "Bash(git add:*), Read": split on commas outside parentheses
        items, depth, cur = [], 0, ""
        for ch in str(value):
            depth += ch == "("
            depth -= ch == ")" and depth > 0
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        items.append(cur)
    return tuple(s.strip() for s in items if s.strip())


def parse_command_file(path: Path, name: str, source: CommandSource) -> CustomCommand:
    """Raises ValueError (FrontmatterError) on malformed frontmatter."""
    return command_from_text(path.read_text(encoding="utf-8"), path, name, source)


def command_from_text(text: str, path: Path, name: str, source: CommandSource) -> CustomCommand:
    """The command a file's text defines; ValueError (FrontmatterError) on malformed frontmatter."""
    from codeloop.tools.agents import parse_frontmatter

    fields: dict[str, Any] = {}
    body = text.strip()
    if text.lstrip("\ufeff").startswith("---"):
        fields, body = parse_frontmatter(text)
    description = str(fields.get("description") or "").strip()
    if not description:  # like Claude Code: the first line of the body describes it
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        description = first.lstrip("# ")[:80] or f"custom command ({source.value})"
    model = str(fields.get("model") or "").strip() or None
    hint = fields.get("argument-hint")
    if isinstance(hint, list):  # `argument-hint: [focus]` reads as a list
        hint = "[" + ", ".join(hint) + "]"
    return CustomCommand(name=name, prompt=body, description=description,
                         allowed_tools=_tools(fields.get("allowed-tools")),
                         model=None if model == "inherit" else model,
                         argument_hint=str(hint) if hint else None, source=source, path=path)


def load_custom_commands(cwd: Path, config_dir: Path, *, home: Path | None = None,
                         plugins: Sequence[Plugin] = ()) -> tuple[dict[str, CustomCommand], list[str]]:
    """(name → command, warnings). Never raises for a bad file. A project's command files are read
    without following a link out of the project (permissions.project_files): such a file, or a
    commands folder that leads out, is skipped with a warning. Then each plugin's commands, named
    `<plugin>:<command>` (config.plugins)."""
    from codeloop.permissions.project_files import ProjectFiles

    files = ProjectFiles(cwd)
    found: dict[str, CustomCommand] = {}
    warnings: list[str] = []
    seen_dirs: set[str] = set()
    dirs = command_dirs(cwd, config_dir, home)
    users = {os.path.realpath(f) for f, s in dirs if s is CommandSource.USER}
    for folder, source in dirs:
        key = os.path.realpath(folder)
        project = source is CommandSource.PROJECT
        if key in seen_dirs or not folder.is_dir() or (project and key in users):
            continue  # ~/.claude/commands may be the config dir's own folder, or (started in ~) the project's
        if project and not files.project_dir(folder, "custom commands"):
            continue
        seen_dirs.add(key)
        for path in sorted(folder.rglob("*.md")):
            rel = path.relative_to(folder).with_suffix("")
            name = ":".join(rel.parts)
            if name in found:
                continue
            try:
                text = (files.read_text(path, "command file", errors="strict") if project
                        else files.read_user_text(path, "command file", errors="strict"))
                if text is not None:
                    found[name] = command_from_text(text, path, name, source)
            except (UnicodeDecodeError, ValueError) as exc:
                warnings.append(f"skipped command file {path}: {exc}")
    for plugin in plugins:
        for folder in plugin.command_paths:
            paths = sorted(folder.rglob("*.md")) if folder.is_dir() else [folder]
            for path in paths:
                rel = path.relative_to(folder).with_suffix("") if folder.is_dir() else Path(path.stem)
                name = ":".join((plugin.name, *rel.parts))
                try:
                    text = files.read_user_text(path, "command file", errors="strict")
                    if text is not None and name not in found:
                        found[name] = command_from_text(text, path, name, CommandSource.PLUGIN)
                except (UnicodeDecodeError, ValueError) as exc:
                    warnings.append(f"skipped command file {path}: {exc}")
    return found, warnings + files.drain()


def expanded_prompt(text: str, cwd: Path, config_dir: Path,
                    plugins: Sequence[Plugin] = ()) -> tuple[str, CustomCommand] | None:
    """`/name args` naming a custom or plugin command (a plugin's by its short name too): (the prompt
    it expands to, as the REPL sends it, and the command); None for any other text (headless)."""
    text = text.strip()
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return None
    name, _, args = text[1:].partition(" ")
    commands, _ = load_custom_commands(cwd, config_dir, plugins=plugins)
    command = commands.get(name) or next((c for c in commands.values() if c.source is CommandSource.PLUGIN
                                          and c.name.partition(":")[2] == name), None)
    return (expand_arguments(command.prompt, args), command) if command is not None else None
