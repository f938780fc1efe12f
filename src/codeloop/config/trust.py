"""Folder trust: which project folders may run their own configuration (hooks, MCP servers, …).

Trust is remembered per absolute (symlink-resolved) path in `<config_dir>/trusted-folders.json`:

    {"folders": {"/abs/path": {"trusted_at": "2025-01-01T00:00:00+00:00"}}}

A folder is trusted when it or an ancestor was trusted — except that the home directory and
`/` only count for themselves: trusting `~` once (say, to use codeloop there) must not silently
trust every repository cloned below it. Nor does an ancestor's trust cover a subfolder that has
configuration of its own (`project_config_files`: settings files, `.mcp.json`, agent definitions,
skills): what was trusted is what the user saw, and a `sub/.claude/settings.json` planted later
(by a build, a dependency, a model's command) would otherwise run its hooks the next time
codeloop starts in `sub/`. Such a folder is trusted only by its own entry; instruction files
(CLAUDE.md) are prompt text and are read either way. Claude Code lets an ancestor's trust cover
every subfolder; this is the stricter rule. A corrupt trust file reads as empty and yields a
warning; nothing here raises on bad data. Writes are atomic (temp file + os.replace).

Two other sources count, so Claude Code scripts need no codeloop-only flag: the trust the user
already gave the folder in Claude Code (`~/.claude.json` projects[path].hasTrustDialogAccepted,
same ancestor rules) and the explicit switch `CODELOOP_TRUST=1` in the environment.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.config.paths import config_dir

TRUST_FILE_NAME = "trusted-folders.json"
TRUST_ENV = "CODELOOP_TRUST"
VIA_ENV = f"${TRUST_ENV}"


@dataclass(frozen=True)
class TrustFile:
    """The trusted folders as read from the trust file, with a warning if it was unreadable."""
    folders: dict[str, dict[str, Any]]
    warning: str | None = None


@dataclass(frozen=True)
class TrustStatus:
    """Whether a path is trusted, and through which trusted folder."""
    trusted: bool
    via: str | None = None          # the trusted folder that covers the path
    warning: str | None = None      # set when the trust file could not be read
    # a trusted ancestor whose trust does not reach this folder, which has configuration of its own
    not_inherited: str | None = None

    def note(self, path: Path | str) -> str | None:
        """One line on why a folder under a trusted one is not trusted (None: nothing to say)."""
        if self.trusted or self.not_inherited is None:
            return None
        return (f"{_key(path)} has its own configuration: the trust given to {self.not_inherited} does not "
                "extend to a subfolder's own settings, MCP servers, agents or skills; trust the subfolder itself")


def trust_file_path() -> Path:
    return config_dir() / TRUST_FILE_NAME


def _key(path: Path | str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(path))))


def load_trusted_folders() -> TrustFile:
    path = trust_file_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return TrustFile({})
    except (OSError, UnicodeDecodeError) as e:
        return TrustFile({}, f"could not read {path}: {e}; treating no folder as trusted")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return TrustFile({}, f"{path}:{e.lineno}:{e.colno}: invalid JSON ({e.msg}); treating no folder as trusted")
    folders = data.get("folders") if isinstance(data, dict) else None
    if not isinstance(folders, dict):
        return TrustFile({}, f"{path}: expected {{\"folders\": {{...}}}}; treating no folder as trusted")
    return TrustFile({k: v if isinstance(v, dict) else {} for k, v in folders.items() if isinstance(k, str)})


def check_trust(path: Path | str) -> TrustStatus:
    if os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes"):
        return TrustStatus(True, VIA_ENV)
    loaded = load_trusted_folders()
    target = Path(_key(path))
    no_blanket = {_key(Path.home()), "/"}
    own: list[bool] = []   # whether the folder has configuration of its own, looked at once if needed

    def covers(folder: str) -> bool:
        if folder == str(target):
            return True
        if not own:
            own.append(bool(project_config_files(target)))
        return not own[0]

    inherited = None
    for candidate in (target, *target.parents):
        key = str(candidate)
        if key not in loaded.folders or (candidate != target and key in no_blanket):
            continue
        if covers(key):
            return TrustStatus(True, key, loaded.warning)
        inherited = key
        break
    from codeloop.config.claude_json import trusted_in_claude_code

    accepted = trusted_in_claude_code(target)
    if accepted is not None:
        if covers(accepted):
            return TrustStatus(True, f"{accepted} (trusted in Claude Code)", loaded.warning)
        inherited = inherited or accepted
    return TrustStatus(False, None, loaded.warning, inherited)


def is_trusted(path: Path | str) -> bool:
    return check_trust(path).trusted


def _write(folders: dict[str, dict[str, Any]]) -> None:
    from codeloop.fsutil import atomic_write_json

    atomic_write_json(trust_file_path(), {"folders": folders}, indent=2, sort_keys=True)


def _set_aside_corrupt() -> str | None:
    """Keep a corrupt trust file as `.corrupt` rather than overwrite what the user may want back."""
    path = trust_file_path()
    backup = path.with_name(path.name + ".corrupt")
    try:
        os.replace(path, backup)
    except OSError:
        return None
    return f"{path} was corrupt and has been moved to {backup}"


def trust(path: Path | str) -> str | None:
    """Trust `path` (and so its subfolders). Returns a warning if an unreadable trust file was replaced."""
    loaded = load_trusted_folders()
    warning = _set_aside_corrupt() if loaded.warning else None
    folders = dict(loaded.folders)
    from datetime import UTC, datetime   # only when a folder is trusted, not at every start

    folders[_key(path)] = {"trusted_at": datetime.now(UTC).isoformat(timespec="seconds")}
    _write(folders)
    return warning or loaded.warning


def untrust(path: Path | str) -> bool:
    """Forget `path` itself. Returns False if it was not explicitly trusted (an ancestor may still be)."""
    loaded = load_trusted_folders()
    key = _key(path)
    if key not in loaded.folders:
        return False
    folders = dict(loaded.folders)
    del folders[key]
    _write(folders)
    return True


def project_config_files(cwd: Path | str) -> list[Path]:
    """Files in the project whose settings trust would unlock, and that exist: its settings files
    and `.mcp.json` (hooks, MCP servers, environment), and its agent definitions and skills folders
    (trust lets an agent's permissionMode and a skill's allowed-tools act)."""
    from codeloop.config.settings import claude_user_dir, project_settings_paths, user_settings_paths

    root = Path(os.path.abspath(cwd))
    user = [_key(p) for p in user_settings_paths()]
    candidates = [p for p, _ in project_settings_paths(root)] + [root / ".mcp.json"]
    # In ~, ~/.claude/settings.json is the user's own file: it is not project config.
    found = [p for p in candidates if p.is_file() and _key(p) not in user]
    user_dirs = {_key(config_dir()), _key(claude_user_dir())}
    for folder in (".codeloop", ".claude"):
        if _key(root / folder) in user_dirs:
            continue   # ~/.claude and ~/.codeloop hold the user's own agents and skills
        agents, skills = root / folder / "agents", root / folder / "skills"
        if _has(agents, lambda p: p.suffix == ".md"):   # what agent discovery reads
            found.append(agents)
        if _has(skills, Path.is_dir):                    # skill folders, as skill discovery finds them
            found.append(skills)
    return found


def _has(folder: Path, match: Any) -> bool:
    try:
        return any(match(p) for p in folder.iterdir())
    except OSError:
        return False


def needs_trust(cwd: Path | str) -> bool:
    """True only when the folder is untrusted *and* has configuration that trust would unlock.

    Hooks and MCP servers live in the settings files and `.mcp.json`, so checking for those files
    covers them; a plain folder never prompts.
    """
    return bool(project_config_files(cwd)) and not is_trusted(cwd)
