"""Output styles (the `outputStyle` setting): how the system prompt tells the model to respond.

As in Claude Code: "default" is the plain system prompt; every other style drops the
efficient-output instructions (be concise…) and adds its own instructions at the end of the
system prompt; a custom style also drops the coding instructions unless its front matter says
`keep-coding-instructions: true`. Built-ins: Explanatory and Learning. Custom styles are
Markdown files in `.claude/output-styles/` (project) and `~/.claude/output-styles/` (user,
following CLAUDE_CONFIG_DIR; codeloop's own config dir too), named by front matter `name` or
the file name; a project style wins over a user style of the same name. A project's style files
are read without following links out of the project (permissions.project_files).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.permissions.project_files import ProjectFiles


class StyleSource(str, Enum):
    BUILT_IN = "built-in"
    USER = "user"
    PROJECT = "project"


@dataclass(frozen=True)
class OutputStyle:
    """A named output style: its instructions and where it came from."""
    name: str
    instructions: str
    keep_coding_instructions: bool
    source: StyleSource
    description: str = ""


DEFAULT_STYLE = "default"

_EXPLANATORY = """\
# Output style: Explanatory
Besides doing the software engineering task, help the user understand the code and your choices.
Before and after writing code, add short educational insights about this codebase and the
implementation choices you made, set apart like this:
"★ Insight ─────────────────────────────────────
[2-3 key points, specific to this codebase or this change]
─────────────────────────────────────────────────"
Keep insights in the conversation, not in the code. They may make your answers longer than usual;
that is expected."""

_LEARNING = """\
# Output style: Learning
Work with the user as a collaborative teacher: do the task, and let the user write small,
meaningful pieces of it themselves so they learn by doing.
- Share short educational insights (as in the Explanatory style) about the codebase and your choices.
- Where a piece of 2-10 lines involves a real design decision (business logic, error handling, a
  choice between approaches), do not write it: put a `TODO(human)` marker where it goes, explain
  the context and the trade-offs, and ask the user to write it. Ask for one such piece at a time.
- Write the boilerplate and the routine parts yourself."""

BUILT_IN: dict[str, OutputStyle] = {
    "Explanatory": OutputStyle("Explanatory", _EXPLANATORY, True, StyleSource.BUILT_IN,
                               "Explains implementation choices and codebase patterns"),
    "Learning": OutputStyle("Learning", _LEARNING, True, StyleSource.BUILT_IN,
                            "Learn by doing: asks you to write small pieces of code"),
}


def style_dirs(cwd: Path, user_dirs: list[Path], *, project: bool = True, user: bool = True
               ) -> list[tuple[Path, StyleSource]]:
    """Where custom styles live, lowest precedence first."""
    dirs = [(d / "output-styles", StyleSource.USER) for d in dict.fromkeys(user_dirs)] if user else []
    if project:
        dirs.append((cwd / ".claude" / "output-styles", StyleSource.PROJECT))
    return dirs


def custom_styles(dirs: list[tuple[Path, StyleSource]], files: ProjectFiles | None = None
                  ) -> tuple[dict[str, OutputStyle], list[str]]:
    """({name: style}, warnings) from the `.md` files in `dirs`; later dirs win on a name.

    A project's styles are read through `files` (the session's reader, which then keeps the
    warnings about skipped files; without one, they are returned here): one that leads out of
    the project is skipped."""
    from codeloop.permissions.project_files import ProjectFiles
    from codeloop.tools.agents import FrontmatterError, parse_frontmatter

    styles: dict[str, OutputStyle] = {}
    warnings: list[str] = []
    own = files is None
    if files is None:
        at = next((f.parent.parent for f, s in dirs if s is StyleSource.PROJECT), None)   # <project>/.claude/…
        files = ProjectFiles(at if at is not None else Path.cwd())
    for folder, source in dirs:
        project = source is StyleSource.PROJECT
        if project and not files.project_dir(folder, "output styles"):
            continue
        try:
            found = sorted(p for p in folder.iterdir() if p.suffix == ".md" and (p.is_file() or p.is_symlink()))
        except OSError:
            continue
        for path in found:
            text = files.read_text(path, "output style") if project else files.read_user_text(path, "output style")
            if text is None:
                continue
            fields: dict[str, Any] = {}
            body = text
            if text.lstrip("\ufeff").startswith("---"):
                try:
                    fields, body = parse_frontmatter(text)
                except FrontmatterError as exc:
                    warnings.append(f"output style {path}: {exc}")
                    continue
            name = str(fields.get("name") or path.stem).strip()
            keep = fields.get("keep-coding-instructions")
            styles[name] = OutputStyle(name, body.strip(), keep is True or str(keep).lower() == "true", source,
                                       str(fields.get("description") or ""))
    if own:
        warnings += files.drain()
    return styles, warnings


def resolve_output_style(name: object, dirs: list[tuple[Path, StyleSource]], files: ProjectFiles | None = None
                         ) -> tuple[OutputStyle | None, list[str]]:
    """The style `name` names (None: the default prompt), and what to warn about.

    Names match exactly first, then ignoring case (settings written as "explanatory" work)."""
    if name is None or (isinstance(name, str) and name.strip().lower() in ("", DEFAULT_STYLE)):
        return None, []
    if not isinstance(name, str):
        return None, [f"settings: outputStyle must be a string, got {type(name).__name__}; using the default style"]
    wanted = name.strip()
    custom, warnings = custom_styles(dirs, files)
    pool = {**BUILT_IN, **custom}
    style = pool.get(wanted) or next((s for n, s in pool.items() if n.lower() == wanted.lower()), None)
    if style is None:
        known = ", ".join([DEFAULT_STYLE, *sorted(pool)])
        warnings.append(f"settings: output style {wanted!r} not found (known: {known}); using the default style")
    return style, warnings
