"""Skills (issue 16): SKILL.md folders discovered in the project and user dirs, front matter,
the listing the model sees, the Skill tool loading one on demand, and `skills` in system/init."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin.skill import SkillTool
from codeloop.tools.registry import builtin_tools, parse_tool_input
from codeloop.tools.skills import SkillSource, discover, listing, session_skills, split_front_matter
from fakeapi import ScriptedAPI, sse, text, tool_use


def make_skill(root: Path, folder: str, front: str, body: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}" if front else body)
    return path


@pytest.fixture
def skills_env(tmp_path, monkeypatch):
    project, cfg = tmp_path / "proj", tmp_path / "cfg"
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    make_skill(project / ".claude" / "skills", "changelog",
               "name: changelog\ndescription: Write CHANGELOG entries in Keep a Changelog style.",
               "Add entries under ## Unreleased.\nVersion: $ARGUMENTS\n")
    make_skill(project / ".codeloop" / "skills", "release", "description: \"Cut a release: tag, build, publish\"\n"
               "allowed-tools: Bash(git tag:*), Read", "Run `git tag` for the version.\n")
    make_skill(cfg / "skills", "pdf-forms", "name: pdf-forms\ndescription: Fill PDF forms\nallowed-tools:\n"
               "  - Read\n  - Bash(python:*)", "Use scripts/fill.py in this folder.\n")
    make_skill(cfg / "skills", "changelog", "description: the user's own changelog skill", "shadowed\n")
    make_skill(tmp_path / "claude-home" / "skills", "no-description", "name: quiet", "")
    (project / ".claude" / "skills" / "stray-file.md").write_text("not a skill folder")
    return project


def test_front_matter_subset():
    meta, body = split_front_matter("---\nname: x\ndescription: 'quoted: yes'\ntags: [a, b]\nallowed-tools:\n"
                                    "  - Read\n# comment\n---\nBody\n")
    assert meta == {"name": "x", "description": "quoted: yes", "tags": ["a", "b"], "allowed-tools": ["Read"]}
    assert body == "Body\n"
    assert split_front_matter("no front matter") == ({}, "no front matter")
    assert split_front_matter("---\nunterminated: yes\n") == ({}, "---\nunterminated: yes\n")


def test_discovery_order_sources_and_allowed_tools(skills_env):
    found = {s.name: s for s in discover(skills_env)}
    assert sorted(found) == ["changelog", "pdf-forms", "release"]       # no description: not listed
    assert found["changelog"].source is SkillSource.PROJECT and "Keep a Changelog" in found["changelog"].description
    assert found["release"].allowed_tools == ("Bash(git tag:*)", "Read")
    assert found["pdf-forms"].allowed_tools == ("Read", "Bash(python:*)")
    assert found["pdf-forms"].source is SkillSource.USER
    text = listing(list(found.values()))
    assert "- release: Cut a release: tag, build, publish" in text and "Skill tool" in text


def skill_ctx(project: Path, policy: PermissionPolicy | None = None) -> ToolContext:
    ctx = ToolContext(cwd=project, project_dir=project)
    ctx.policy = policy or PermissionPolicy(cwd=project)
    return ctx


async def call(ctx, **raw):
    tool = SkillTool()
    return await tool.call(parse_tool_input(tool, raw), ctx)


async def test_skill_tool_loads_body_with_arguments(skills_env):
    ctx = skill_ctx(skills_env)
    res = await call(ctx, skill="changelog", args="1.4.0")
    assert res.content.startswith("Launching skill: changelog")
    assert f"Base directory for this skill: {skills_env / '.claude' / 'skills' / 'changelog'}" in res.content
    assert "Version: 1.4.0" in res.content and "shadowed" not in res.content
    res = await call(ctx, skill="/pdf-forms", args="form.pdf")
    assert "Use scripts/fill.py" in res.content and res.content.rstrip().endswith("ARGUMENTS: form.pdf")
    with pytest.raises(ToolError, match="Unknown skill: nope. Available skills: changelog, pdf-forms, release"):
        await call(ctx, skill="nope")


async def test_permissions_and_allowed_tools_grants(skills_env):
    policy = PermissionPolicy(cwd=skills_env)
    ctx, tool = skill_ctx(skills_env, policy), SkillTool()

    async def decide(name):
        inp = parse_tool_input(tool, {"skill": name})
        return policy.decide(tool, inp, await tool.check_permissions(inp, ctx), {"skill": name}).behavior

    assert await decide("changelog") is PermissionBehavior.ALLOW          # instructions only
    assert await decide("release") is PermissionBehavior.ASK              # grants tools: asks
    assert PermissionPolicy(cwd=skills_env, allow=["Skill(release)"]).decide(
        tool, parse_tool_input(tool, {"skill": "release"}), await tool.check_permissions(
            parse_tool_input(tool, {"skill": "release"}), ctx), {"skill": "release"}).behavior \
        is PermissionBehavior.ALLOW
    res = await call(ctx, skill="pdf-forms")                               # a user skill: granted
    assert res.data["granted"] == ["Read", "Bash(python:*)"] and "Bash(python:*)" in policy.allow
    res = await call(ctx, skill="release")                                 # untrusted project: not granted
    assert res.data["granted"] == [] and "not trusted" in res.content and "Bash(git tag:*)" not in policy.allow
    ctx.project_trusted = True
    assert (await call(ctx, skill="release")).data["granted"] == ["Bash(git tag:*)"]


def test_gate_hides_the_tool_without_skills(tmp_path, skills_env, monkeypatch):
    tool = next(t for t in builtin_tools(lazy=True) if t.name == "Skill")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "none"))
    assert not tool.is_enabled(ToolContext(cwd=empty, project_dir=empty))
    ctx = ToolContext(cwd=skills_env, project_dir=skills_env)
    assert tool.is_enabled(ctx) and [s.name for s in session_skills(ctx)] == ["changelog", "release"]
    assert not tool.is_enabled(ToolContext(cwd=skills_env, project_dir=skills_env, agent_id="sub"))


def test_cli_stream_json_init_lists_skills_and_the_model_loads_one(skills_env):
    api = ScriptedAPI(sse(tool_use("Skill", {"skill": "changelog", "args": "2.0.0"}, id="sk")),
                      sse(text("Added the 2.0.0 entry.")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_"))}
    with api.serve() as url:
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url,
                    "CODELOOP_CONFIG_DIR": str(skills_env / ".cfg"), "HOME": str(skills_env)})
        r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "update the changelog", "--output-format",
                            "stream-json", "--verbose"], cwd=skills_env, env=env, capture_output=True, text=True,
                           timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    init = next(line for line in lines if line.get("subtype") == "init")
    assert init["skills"] == ["changelog", "release"] and "Skill" in init["tools"]
    assert "- changelog: Write CHANGELOG entries" in api.requests[0].system_text
    loaded = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "Version: 2.0.0" in str(loaded["content"])
    assert lines[-1]["result"] == "Added the 2.0.0 entry."
