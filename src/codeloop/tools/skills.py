"""Skills: folders holding a SKILL.md (front matter + instructions) the model loads on demand.

Discovery order (the first skill of a name wins): the project's `.codeloop/skills` and
`.claude/skills`, then the user's `~/.codeloop/skills` (CODELOOP_CONFIG_DIR moves it) and
`~/.claude/skills` (CLAUDE_CONFIG_DIR), then the session's plugins' `skills/` folders (named
`<plugin>:<skill>`, `ctx.plugins`). Each `<dir>/<folder>/SKILL.md` may open with front matter:

    ---
    name: pdf-forms                 # defaults to the folder name
    description: Fill PDF forms…    # what the model sees in the listing (required to be listed)
    allowed-tools: Read, Bash(python:*)
    ---

Only names and descriptions go to the model (`listing`); the body is read when the Skill tool
loads it. Discovery runs once per ToolContext (cached in `ctx.skills`) and costs a few
directory listings; nothing here is imported at start-up. A project's skill files are read
through the session's `ProjectFiles` (`ctx.project_files`): a SKILL.md, a skill folder or the
skills folder itself that leads out of the project is skipped, with a warning for the user.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.config.plugins import Plugin
    from codeloop.permissions.project_files import ProjectFiles

SKILL_FILE = "SKILL.md"
MAX_DESCRIPTION = 1024
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"   # compiled on first use


class SkillSource(str, Enum):
    PROJECT = "project"
    USER = "user"
    PLUGIN = "plugin"    # a plugin the user enabled: read and trusted as the user's own


@dataclass(frozen=True)
class Skill:
    """A skill: its name, description, SKILL.md path and where it came from."""
    name: str
    description: str
    path: Path                     # the SKILL.md
    source: SkillSource
    allowed_tools: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # what read it (permissions.project_files.ProjectFiles): the body is read the same way
    files: Any = field(default=None, compare=False, hash=False, repr=False)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The instructions, read again now; OSError when the file is gone or may not be read."""
        text = _read(self.path, self.source, self.files)
        if text is None:
            raise OSError(f"{self.path} is gone, or leads out of the project")
        return split_front_matter(text)[1]


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). A small YAML subset: `key: value`, `key: [a, b]`, and `- item` lists."""
    text = text.lstrip("\ufeff")
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        return {}, text
    meta: dict[str, Any] = {}
    key: str | None = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        line = line.rstrip("\r\n")
        item = re.match(r"^\s*-\s+(.*)$", line)
        if item and key is not None:
            prev = meta.get(key)
            meta[key] = (prev if isinstance(prev, list) else []) + [_scalar(item.group(1))]
            continue
        m = re.match(r"^([A-Za-z0-9_\-]+)\s*:\s*(.*)$", line)
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            meta[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key] = _scalar(value) if value else ""
    return meta, "".join(lines[end + 1:]).lstrip("\r\n")


def _tool_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if str(v).strip())
    if isinstance(value, str):
        # "Read, Grep, Bash(git status:*)": commas inside a rule's parentheses do not split it
        parts, depth, cur = [], 0, ""
        for ch in value:
            depth += (ch == "(") - (ch == ")")
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return tuple(p.strip() for p in parts if p.strip())
    return ()


def _read(path: Path, source: SkillSource, files: ProjectFiles | None) -> str | None:
    from codeloop.permissions.project_files import ProjectFiles

    if files is None:
        files = ProjectFiles(path.parents[3] if source is SkillSource.PROJECT else Path.cwd())
    return files.read_text(path, "skill") if source is SkillSource.PROJECT else files.read_user_text(path, "skill")


def load_skill(skill_md: Path, source: SkillSource, files: ProjectFiles | None = None) -> Skill | None:
    text = _read(skill_md, source, files)
    if text is None:
        return None
    meta, body = split_front_matter(text)
    name = str(meta.get("name") or skill_md.parent.name).strip()
    description = str(meta.get("description") or "").strip()
    if not description:  # like Claude Code: the first paragraph of the body stands in
        description = next((p.strip() for p in body.split("\n\n") if p.strip() and not p.startswith("#")), "")
    if not re.match(_NAME, name) or not description:
        return None
    return Skill(name, " ".join(description.split())[:MAX_DESCRIPTION], skill_md, source,
                 _tool_list(meta.get("allowed-tools")), meta, files)


def user_skill_dirs(env: dict[str, str] | None = None) -> list[Path]:
    env = dict(os.environ) if env is None else env
    # The config dir rule of session.store (a higher layer), restated: CODELOOP_CONFIG_DIR or ~/.codeloop.
    config = Path(env["CODELOOP_CONFIG_DIR"]).expanduser() if env.get("CODELOOP_CONFIG_DIR") else \
        Path.home() / ".codeloop"
    claude = Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude"
    return [config / "skills", claude / "skills"]


def project_skill_dirs(project_dir: Path) -> list[Path]:
    return [project_dir / ".codeloop" / "skills", project_dir / ".claude" / "skills"]


def discover(project_dir: Path, env: dict[str, str] | None = None, files: ProjectFiles | None = None,
             plugins: Sequence[Plugin] = ()) -> list[Skill]:
    """The skills of a project, of the user and of the session's plugins (named `<plugin>:<skill>`).
    A project's SKILL.md files are read through `files` (default: a reader of `project_dir`): one
    leading out of the project is skipped."""
    from codeloop.permissions.project_files import ProjectFiles

    files = files if files is not None else ProjectFiles(project_dir)
    found: dict[str, Skill] = {}
    roots = [(d, SkillSource.PROJECT) for d in project_skill_dirs(project_dir)]
    roots += [(d, SkillSource.USER) for d in user_skill_dirs(env)]
    users = {os.path.realpath(d) for d, s in roots if s is SkillSource.USER}
    for root, source in roots:
        if source is SkillSource.PROJECT and (os.path.realpath(root) in users or not files.project_dir(root, "skills")):
            continue   # started in ~, ~/.claude/skills is the user's folder: read as theirs below
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for folder in folders:
            skill_md = folder / SKILL_FILE
            if skill_md.is_file() or skill_md.is_symlink():
                skill = load_skill(skill_md, source, files)
                if skill is not None and skill.name not in found:
                    found[skill.name] = skill
    for plugin in plugins:
        for root in plugin.skill_dirs:
            for skill_md in sorted(root.glob(f"*/{SKILL_FILE}")):
                skill = load_skill(skill_md, SkillSource.PLUGIN, files)
                if skill is not None:
                    found.setdefault(f"{plugin.name}:{skill.name}",
                                     replace(skill, name=f"{plugin.name}:{skill.name}"))
    return sorted(found.values(), key=lambda s: s.name)


def session_skills(ctx: Any) -> list[Skill]:
    """The skills of this context's project, discovered on first use."""
    if ctx.skills is None:
        ctx.skills = discover(Path(ctx.project_dir), files=ctx.project_files, plugins=ctx.plugins)
    return ctx.skills


def find_skill(ctx: Any, name: str) -> Skill | None:
    name = name.strip().lstrip("/")
    return next((s for s in session_skills(ctx) if s.name == name), None)


def listing(skills: list[Skill]) -> str:
    """What the model is told: one line per skill, loaded with the Skill tool on demand."""
    if not skills:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in skills]
    return ("The following skills are available. When one matches the task, load it with the Skill tool "
            "(skill: \"<name>\") before doing anything else about the task, then follow its instructions:\n"
            + "\n".join(lines))
