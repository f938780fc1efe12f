"""An untrusted repository's skills, agent definitions and custom commands (issue 25, item 6):
a file, a skill folder or the whole folder linking out of the project is skipped with a warning
and never read; links inside the project, and the user's own links, still work."""

from __future__ import annotations

import pytest

from codeloop.input.commands import CommandRegistry
from codeloop.input.custom_commands import load_custom_commands
from codeloop.permissions.project_files import ProjectFiles
from codeloop.tools.agents import load_agent_definitions
from codeloop.tools.base import ToolContext, ToolError
from codeloop.tools.builtin.skill import SkillTool
from codeloop.tools.registry import parse_tool_input
from codeloop.tools.skills import discover, listing, session_skills

SECRET = "ghp_secretGitHubTokenValue0123456789"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    home, cfg = tmp_path / "home", tmp_path / "cfg"
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "token").write_text(f"---\nname: leak\ndescription: {SECRET}\n---\n{SECRET}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    repo = tmp_path / "clone"
    (repo / ".git").mkdir(parents=True)
    return repo, home / ".config" / "token", cfg


def _skill(folder, name, body="Do the thing."):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} skill\n---\n{body}\n")


def test_a_skill_linking_to_a_secret_is_not_listed(repo):
    root, secret, _ = repo
    skills = root / ".claude" / "skills"
    (skills / "leak").mkdir(parents=True)
    (skills / "leak" / "SKILL.md").symlink_to(secret)                  # the file is the link
    _skill(secret.parent / "kit", "kit", SECRET)
    (skills / "folder-leak").symlink_to(secret.parent / "kit")         # the skill folder is the link
    _skill(root / "shared" / "fmt", "fmt")
    (skills / "fmt").symlink_to("../../shared/fmt")                    # inside the project: fine
    files = ProjectFiles(root)
    found = discover(root, files=files)
    assert [s.name for s in found] == ["fmt"] and SECRET not in listing(found)
    warnings = files.drain()
    assert len(warnings) == 2 and all("outside the project" in w for w in warnings)
    assert {w.split(": ", 1)[0].rsplit("/", 2)[-2] for w in warnings} == {"leak", "folder-leak"}


def test_a_skills_folder_linking_out_is_not_listed(repo):
    root, secret, _ = repo
    (root / ".claude").mkdir()
    (secret.parent / "evil").mkdir()
    _skill(secret.parent / "evil", "evil")
    (root / ".claude" / "skills").symlink_to(secret.parent)
    files = ProjectFiles(root)
    assert discover(root, files=files) == []
    assert "skills" in files.drain()[0]


async def test_a_skill_swapped_for_a_link_after_discovery_is_not_loaded(repo):
    root, secret, _ = repo
    _skill(root / ".claude" / "skills" / "deploy", "deploy", "Deploy carefully.")
    files = ProjectFiles(root)
    ctx = ToolContext(cwd=root, project_dir=root, project_files=files)
    assert [s.name for s in session_skills(ctx)] == ["deploy"]
    skill_md = root / ".claude" / "skills" / "deploy" / "SKILL.md"
    skill_md.unlink()
    skill_md.symlink_to(secret)                                        # planted after the listing
    tool = SkillTool()
    with pytest.raises(ToolError, match="could not be read") as err:
        await tool.call(parse_tool_input(tool, {"skill": "deploy"}), ctx)
    assert SECRET not in str(err.value)
    assert "outside the project" in files.drain()[0]


def test_the_users_own_linked_skill_still_loads(repo, tmp_path):
    root, _, cfg = repo
    _skill(tmp_path / "dotfiles" / "mine", "mine", "My own way.")
    (cfg / "skills").mkdir(parents=True)
    (cfg / "skills" / "mine").symlink_to(tmp_path / "dotfiles" / "mine")
    files = ProjectFiles(root)
    [skill] = discover(root, files=files)
    assert skill.name == "mine" and "My own way." in skill.body() and files.drain() == []


def test_an_agent_definition_linking_to_a_secret_is_skipped(repo, tmp_path):
    root, secret, cfg = repo
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "leak.md").symlink_to(secret)
    (root / "docs").mkdir()
    (root / "docs" / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews\n---\nReview it.\n")
    (agents / "reviewer.md").symlink_to("../../docs/reviewer.md")      # inside the project: fine
    (tmp_path / "dotfiles").mkdir()
    (tmp_path / "dotfiles" / "helper.md").write_text("---\nname: helper\ndescription: Helps\n---\nHelp.\n")
    (cfg / "agents").mkdir(parents=True)
    (cfg / "agents" / "helper.md").symlink_to(tmp_path / "dotfiles" / "helper.md")   # the user's own link
    defs = load_agent_definitions(root, cfg)
    assert "leak" not in defs and defs["reviewer"].system_prompt == "Review it."
    assert defs["helper"].system_prompt == "Help."
    assert SECRET not in str({n: d.system_prompt + d.description for n, d in defs.items()})
    assert len(defs.warnings) == 1 and "leak.md" in defs.warnings[0] and "outside the project" in defs.warnings[0]


def test_a_custom_command_linking_to_a_secret_is_skipped(repo, tmp_path):
    root, secret, cfg = repo
    commands = root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").symlink_to(secret)
    (commands / "env.md").symlink_to("/proc/self/environ")
    (root / "shared.md").write_text("Summarise $ARGUMENTS")
    (commands / "sum.md").symlink_to("../../shared.md")                # inside the project: fine
    user = tmp_path / "home" / ".claude" / "commands"
    user.mkdir(parents=True)
    (tmp_path / "dotfiles.md").write_text("Greet $ARGUMENTS")
    (user / "hi.md").symlink_to(tmp_path / "dotfiles.md")              # the user's own link
    cmds, warnings = load_custom_commands(root, cfg, home=tmp_path / "home")
    assert sorted(cmds) == ["hi", "sum"] and cmds["sum"].prompt == "Summarise $ARGUMENTS"
    assert cmds["hi"].prompt == "Greet $ARGUMENTS"
    assert len(warnings) == 2 and SECRET not in str(warnings)
    assert {w.split(": ", 1)[0].rsplit("/", 1)[-1] for w in warnings} == {"review.md", "env.md"}


def test_a_commands_folder_linking_out_is_not_walked(repo, tmp_path):
    root, secret, cfg = repo
    (root / ".claude").mkdir()
    (secret.parent / "x.md").write_text(SECRET)
    (root / ".claude" / "commands").symlink_to(secret.parent)
    reg = CommandRegistry.load(root, cfg, home=tmp_path / "home")
    assert "x" not in reg.commands
    assert any("custom commands" in w and "outside the project" in w for w in reg.warnings)


def test_started_in_home_the_users_own_folders_are_read_as_theirs(tmp_path, monkeypatch):
    """In ~, ~/.claude/commands, ~/.claude/agents and ~/.claude/skills are the user's: their links
    are followed, and they count as the user's (a skill's allowed-tools need no folder trust)."""
    from codeloop.input.custom_commands import CommandSource
    from codeloop.tools.agents import AgentSource
    from codeloop.tools.skills import SkillSource

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(home / ".codeloop"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "cmd.md").write_text("Deploy $ARGUMENTS")
    (dotfiles / "agent.md").write_text("---\nname: helper\ndescription: Helps\n---\nHelp.\n")
    _skill(dotfiles / "skill", "mine")
    for sub, name, target in (("commands", "deploy.md", "cmd.md"), ("agents", "helper.md", "agent.md"),
                              ("skills", "mine", "skill")):
        (home / ".claude" / sub).mkdir(parents=True, exist_ok=True)
        (home / ".claude" / sub / name).symlink_to(dotfiles / target)
    cmds, warnings = load_custom_commands(home, home / ".codeloop", home=home)
    assert cmds["deploy"].source is CommandSource.USER and warnings == []
    defs = load_agent_definitions(home, home / ".codeloop", home=home)
    assert defs["helper"].source is AgentSource.USER and defs.warnings == []
    files = ProjectFiles(home)
    [skill] = discover(home, files=files)
    assert skill.source is SkillSource.USER and files.drain() == []
