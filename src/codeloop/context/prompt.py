"""The system prompt, the system context (environment, git) and the user context (CLAUDE.md).

The user context travels as a meta user message prepended to the history, as in Claude Code,
so the system prompt stays stable across projects and caches well. Both are read per query
(`context_loader`, spec 004 §6.1), so a CLAUDE.md edit takes effect on the next prompt. The
project's CLAUDE.md files are read through the session's `ProjectFiles` (permissions.project_files):
one that is a link out of the project is skipped and warned about, never sent.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TYPE_CHECKING

from codeloop.messages import user_context_message  # noqa: F401 (re-exported)

DEFAULT_SYSTEM_PROMPT = """\
You are codeloop, an interactive agentic coding assistant running in the user's terminal. \
You help with software engineering tasks: reading and changing code, running commands, \
debugging, explaining. Use the tools available to you to do the work rather than describing it.

# How to work
- Be concise and direct. Your output is shown in a terminal; use GitHub-flavoured Markdown sparingly.
- Read files before changing them, and understand the surrounding code and its conventions first.
- Prefer editing existing files to creating new ones. Never create documentation files unless asked.
- Make the smallest change that fully does the task. Do not add unrelated refactors.
- Use the TodoWrite tool to plan and track multi-step tasks; mark items completed as you go.
- When you run commands, prefer non-interactive forms; explain destructive commands before running them.
- Verify your work: run the tests or the program when that is possible.
- When you reference code, use the form `path:line` so the user can navigate to it.
- Never guess at file contents, URLs or APIs you have not seen; look them up with the tools.
- Do not commit, push or publish unless the user asks you to.
"""

CLAUDE_MD_HEADER = ("Codebase and user instructions are shown below. Be sure to adhere to these "
                    "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you "
                    "MUST follow them exactly as written.")


if TYPE_CHECKING:
    import datetime as _dt

    from codeloop.permissions.project_files import ProjectFiles


def _os_name() -> tuple[str, str]:
    """(system, release) as `platform` gives them; os.uname where it exists (importing
    `platform` costs start-up time)."""
    if hasattr(os, "uname"):
        u = os.uname()
        return u.sysname, u.release
    import platform
    return platform.system(), platform.release()


def _iso_day(today: _dt.date | None) -> str:
    """YYYY-MM-DD of `today`, or of the local date now (without importing datetime at start-up)."""
    return today.isoformat() if today is not None else time.strftime("%Y-%m-%d")

def find_git_root(cwd: Path) -> Path | None:
    for d in (cwd, *cwd.parents):
        if (d / ".git").exists():
            return d
    return None


def git_branch(root: Path) -> str | None:
    """Current branch read from .git/HEAD directly: no subprocess on the start-up path.

    The repository supplies these files (and a worktree's `.git` file points elsewhere), so they
    are read bounded and regular-only (a FIFO must not hang the start), and only a well-formed
    branch name or commit id goes into the prompt — never the text of whatever file they lead to."""
    import re

    from codeloop.permissions.project_files import read_regular

    git = root / ".git"
    if git.is_file():  # worktree or submodule: "gitdir: <path>"
        raw = read_regular(git, 4096)
        if raw is None:
            return None
        target = raw.decode("utf-8", "replace").strip().removeprefix("gitdir:").strip()
        if not target or "\0" in target:
            return None
        git = (root / target).resolve()
    raw = read_regular(git / "HEAD", 4096)
    if raw is None:
        return None
    head = raw.decode("utf-8", "replace").strip()
    if head.startswith("ref:"):
        ref = head[4:].strip()
        name = ref.removeprefix("refs/heads/")
        return name if re.fullmatch(r"[\w./+@-]{1,255}", name) else None
    return f"(detached at {head[:12]})" if re.fullmatch(r"[0-9a-f]{40,64}", head) else None


def environment_block(cwd: Path, today: _dt.date | None = None) -> str:
    root = find_git_root(cwd)
    lines = [f"Working directory: {cwd}",
             f"Is directory a git repo: {'Yes' if root else 'No'}"]
    if root:
        branch = git_branch(root)
        if branch:
            lines.append(f"Current git branch: {branch}")
    system, release = _os_name()
    lines += [f"Platform: {system.lower()}",
              f"OS Version: {system} {release}",
              f"Today's date: {_iso_day(today)}"]
    return "<env>\n" + "\n".join(lines) + "\n</env>"


# Which --setting-sources source each kind of instruction file belongs to (as in Claude Code:
# `user` ~/.claude/CLAUDE.md, `project` CLAUDE.md and .claude/CLAUDE.md, `local` CLAUDE.local.md).
USER_SOURCE, PROJECT_SOURCE, LOCAL_SOURCE = "user", "project", "local"
USER_KIND = "user's private global instructions for all projects"
PROJECT_KIND = "project instructions, checked into the codebase"
LOCAL_KIND = "user's private project instructions, not checked in"


def instruction_files(cwd: Path, config_dir: Path, sources: frozenset[str] | None = None,
                      files: ProjectFiles | None = None) -> list[tuple[Path, str]]:
    """CLAUDE.md files in load order: the user's global ones, then root → cwd, local after shared.

    `sources` (--setting-sources / the SDK's setting_sources) limits them to those sources;
    None: all. The project's files are read through `files` (permissions.project_files): one that
    leads out of the project is skipped, with a warning left in `files`."""
    from codeloop.permissions.project_files import ProjectFiles

    files = files if files is not None else ProjectFiles(cwd)
    out = []
    home_claude = Path(os.path.expanduser("~")) / ".claude" / "CLAUDE.md"
    user_files = list(dict.fromkeys([config_dir / "CLAUDE.md", home_claude]))
    users = {_where(p) for p in user_files}
    if sources is None or USER_SOURCE in sources:
        for path in user_files:
            if path.is_file():
                text = files.read_user_text(path, "user instructions")
                if text is not None:
                    out.append((path, f"Contents of {path} ({USER_KIND}):\n\n{text.strip()}"))
    for d in reversed((cwd, *cwd.parents)):
        for path, kind, source in ((d / "CLAUDE.md", PROJECT_KIND, PROJECT_SOURCE),
                                   (d / ".claude" / "CLAUDE.md", PROJECT_KIND, PROJECT_SOURCE),
                                   (d / "CLAUDE.local.md", LOCAL_KIND, LOCAL_SOURCE)):
            if (sources is not None and source not in sources) or _where(path) in users:
                continue   # in ~, ~/.claude/CLAUDE.md is the user's file, read above
            if path.is_file() or path.is_symlink():
                text = files.read_text(path, "instructions", directory=d)
                if text is not None:
                    out.append((path, f"Contents of {path} ({kind}):\n\n{text.strip()}"))
    return out


# Claude Code's InstructionsLoaded memory_type of each kind of instruction file.
_MEMORY_TYPES = {USER_KIND: "User", PROJECT_KIND: "Project", LOCAL_KIND: "Local"}


def loaded_instruction_files(claude_md: str) -> list[tuple[str, str]]:
    """(path, memory type) of each instruction file in a user context's `claudeMd` text, in order."""
    import re

    kinds = "|".join(re.escape(k) for k in _MEMORY_TYPES)
    return [(m.group(1), _MEMORY_TYPES[m.group(2)])
            for m in re.finditer(rf"^Contents of (.+) \(({kinds})\):$", claude_md, re.MULTILINE)]


def _where(path: Path) -> str:
    """The file's place, its folder's links resolved (not its own: a link is judged when read)."""
    return os.path.join(os.path.realpath(path.parent), path.name)


def user_context(cwd: Path, config_dir: Path, today: _dt.date | None = None,
                 sources: frozenset[str] | None = None, files: ProjectFiles | None = None) -> dict[str, str]:
    ctx: dict[str, str] = {}
    found = instruction_files(cwd, config_dir, sources, files)
    if found:
        ctx["claudeMd"] = CLAUDE_MD_HEADER + "\n\n" + "\n\n".join(text for _, text in found)
    ctx["currentDate"] = f"Today's date is {_iso_day(today)}."
    return ctx


_EFFICIENCY_LINE = "- Be concise and direct."


def styled_prompt(style: Any) -> str:
    """The default prompt under an output style (context.output_styles): every style drops the
    efficient-output line; a style without `keep_coding_instructions` drops the "How to work"
    coding instructions too (its own instructions go at the end of the system prompt)."""
    intro, _, how = DEFAULT_SYSTEM_PROMPT.partition("\n# How to work\n")
    if not style.keep_coding_instructions:
        return intro
    kept = [ln for ln in how.splitlines() if not ln.startswith(_EFFICIENCY_LINE)]
    return intro + "\n# How to work\n" + "\n".join(kept) + "\n"


def build_system_prompt(cwd: Path, *, custom: str | None = None, append: str | None = None,
                        today: _dt.date | None = None, output_style: Any = None) -> list[str]:
    """`output_style` (an OutputStyle, None for the default) shapes the default prompt only: a
    custom system prompt (--system-prompt) replaces everything, style included."""
    styled = output_style is not None and custom is None
    parts = [custom if custom is not None else styled_prompt(output_style) if styled else DEFAULT_SYSTEM_PROMPT]
    parts.append(environment_block(cwd, today))
    if append:
        parts.append(append)
    if styled and output_style.instructions:
        parts.append(output_style.instructions)
    return parts


def context_loader(cwd: Path, config_dir: Path, *, custom: str | None = None, append: str | None = None,
                   claude_md: bool = True, sources: frozenset[str] | None = None,
                   output_style: Any = None, files: ProjectFiles | None = None
                   ) -> Callable[[], tuple[list[str], dict[str, str]]]:
    """(system prompt, user context) as of now: the session calls it before each query.

    `claude_md=False` (--bare) leaves CLAUDE.md discovery out of the user context; `sources`
    (--setting-sources) keeps only the CLAUDE.md files of those sources. `files`: the session's
    project-file reader, which keeps the warnings about files it skipped."""
    read = sources if claude_md else frozenset()   # --bare reads no instruction file at all

    def load() -> tuple[list[str], dict[str, str]]:
        ctx = user_context(cwd, config_dir, sources=read, files=files)
        return build_system_prompt(cwd, custom=custom, append=append, output_style=output_style), ctx
    return load
