"""The system prompt, the system context (environment, git) and the user context (CLAUDE.md).

The user context travels as a meta user message prepended to the history, as in Claude Code,
so the system prompt stays stable across projects and caches well. Both are read per query
(`ContextLoader`, spec 004 §6.1), so a CLAUDE.md edit takes effect on the next prompt; the
environment block (date, git branch) is a snapshot taken once per session, as Claude Code takes it,
so a branch switch or a new day does not invalidate the prompt cache after the static prompt (a new
day is said in a meta message instead: `ContextLoader.date_change`). The
project's CLAUDE.md files are read through the session's `ProjectFiles` (permissions.project_files):
one that is a link out of the project is skipped and warned about, never sent.
"""

from __future__ import annotations

import os
import time
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
    users: set[str] | None = None   # where the user's files are, worked out once a project file exists
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
            if (sources is not None and source not in sources) or not (path.is_file() or path.is_symlink()):
                continue
            if users is None:
                users = {_where(p) for p in user_files}
            if _where(path) in users:
                continue   # in ~, ~/.claude/CLAUDE.md is the user's file, read above
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
                        today: _dt.date | None = None, output_style: Any = None,
                        environment: str | None = None) -> list[str]:
    """`output_style` (an OutputStyle, None for the default) shapes the default prompt only: a
    custom system prompt (--system-prompt) replaces everything, style included. `environment`: the
    session's snapshot of the environment block (None: taken now)."""
    styled = output_style is not None and custom is None
    parts = [custom if custom is not None else styled_prompt(output_style) if styled else DEFAULT_SYSTEM_PROMPT]
    parts.append(environment if environment is not None else environment_block(cwd, today))
    if append:
        parts.append(append)
    if styled and output_style.instructions:
        parts.append(output_style.instructions)
    return parts


DATE_CHANGE = ("<system-reminder>\nThe date has changed: today is now {day}. The user's clock shows it too, "
               "so there is no need to mention it.\n</system-reminder>")


class ContextLoader:
    """(system prompt, user context) as of now: the session calls it before each query.

    CLAUDE.md files are read on every call; the environment block and the date are the snapshot of
    the first call. `claude_md=False` (--bare) leaves CLAUDE.md discovery out of the user context;
    `sources` (--setting-sources) keeps only the CLAUDE.md files of those sources. `files`: the
    session's project-file reader, which keeps the warnings about files it skipped."""

    def __init__(self, cwd: Path, config_dir: Path, *, custom: str | None = None, append: str | None = None,
                 claude_md: bool = True, sources: frozenset[str] | None = None,
                 output_style: Any = None, files: ProjectFiles | None = None):
        self.cwd, self.config_dir, self.custom, self.append = cwd, config_dir, custom, append
        self.sources = sources if claude_md else frozenset()   # --bare reads no instruction file at all
        self.output_style, self.files = output_style, files
        self.day: str | None = None          # the snapshot's date (ISO), in the prompt for the whole session
        self._told: str | None = None        # the last day the model was told of
        self._environment: str | None = None

    def __call__(self) -> tuple[list[str], dict[str, str]]:
        if self._environment is None:
            self.day = _iso_day(None)
            self._environment = environment_block(self.cwd)
        ctx = user_context(self.cwd, self.config_dir, sources=self.sources, files=self.files)
        if self.day is not None:
            ctx["currentDate"] = f"Today's date is {self.day}."
        return build_system_prompt(self.cwd, custom=self.custom, append=self.append, output_style=self.output_style,
                                   environment=self._environment), ctx

    def date_change(self, today: _dt.date | None = None) -> str | None:
        """A meta reminder when the day moved on since the model was last told (then the new day is
        the one it knows); None otherwise. The snapshot itself stays, so the cached prefix does."""
        day = _iso_day(today)
        if self.day is None or day == (self._told or self.day):
            return None
        self._told = day
        return DATE_CHANGE.format(day=day)


def context_loader(cwd: Path, config_dir: Path, **kw: Any) -> ContextLoader:
    """The session's `ContextLoader` (kept as a function: callers and tests build it this way)."""
    return ContextLoader(cwd, config_dir, **kw)
