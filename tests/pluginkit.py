"""A plugin folder in Claude Code's format for the plugin tests (issue 28)."""

import json
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
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": 'cat "${CLAUDE_PLUGIN_ROOT}/context.txt"'}]}]}}))
    return root
