"""A plugin folder in Claude Code's format, and a marketplace of it in a local git repository, for the
plugin tests (issue 28)."""

import json
import subprocess
from pathlib import Path


def make_plugin(root: Path, name: str = "greet", *, manifest: dict | None = None) -> Path:
    """A plugin folder with a command, an agent, a skill and a UserPromptSubmit hook."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        manifest if manifest is not None else {"name": name, "version": "1.2.0", "description": "greets"}))
    (root / "commands").mkdir()
    (root / "commands" / "hello.md").write_text("---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS\n")
    (root / "agents").mkdir()
    (root / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews greetings\n---\nYou are the greet reviewer.\n")
    (root / "skills" / "wave").mkdir(parents=True)
    (root / "skills" / "wave" / "SKILL.md").write_text("---\nname: wave\ndescription: Waves at people\n---\nWave.\n")
    (root / "context.txt").write_text("context from the plugin hook\n")
    # the command names the script through ${CLAUDE_PLUGIN_ROOT}; the script finds it in its environment
    (root / "context.sh").write_text('cat "$CLAUDE_PLUGIN_ROOT/context.txt"\n')
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": 'sh "${CLAUDE_PLUGIN_ROOT}/context.sh"'}]}]}}))
    return root


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                    *args], cwd=cwd, check=True, capture_output=True)


def make_marketplace(root: Path) -> Path:
    make_plugin(root / "plugins" / "greet")
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "team", "owner": {"name": "Team"},
        "plugins": [{"name": "greet", "source": "./plugins/greet", "description": "greets"}]}))
    git("init", "-q", cwd=root)
    git("add", ".", cwd=root)
    git("commit", "-qm", "marketplace", cwd=root)
    return root
