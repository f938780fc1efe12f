"""Issue 26: UserPromptExpansion — a user-typed custom slash command expanding into a prompt runs
the hooks whose matcher names the command; exit 2 blocks the expansion, stdout is context."""

from __future__ import annotations

import json

from fakeapi import ScriptedAPI, sse, text
from inputhelpers import FakeFront

from codeloop.input.commands import CommandRegistry
from codeloop.input.dispatch import Dispatcher, SubmitPath
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig


def dispatcher(api, cwd, hooks):
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=[], system_prompt=["test"], user_context={},
                             policy=PermissionPolicy(mode=PermissionMode.BYPASS, cwd=cwd), hooks={"hooks": hooks})
    conv = Conversation(cfg, AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport()),
                        session_id="11111111-2222-4333-8444-555555555555")
    front = FakeFront(conv)
    return Dispatcher(front, CommandRegistry.load(cwd, cwd / ".cfg", home=cwd / "home")), front


def hook(tmp_path, name, body):
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ncat > '{tmp_path}/{name}.json'\n{body}\n")
    script.chmod(0o755)
    return {"hooks": [{"type": "command", "command": str(script)}]}


def project(tmp_path):
    cwd = tmp_path / "project"
    (cwd / ".claude" / "commands").mkdir(parents=True)
    (cwd / ".claude" / "commands" / "greet.md").write_text("Say hello to $ARGUMENTS.\n")
    (cwd / ".claude" / "commands" / "deploy.md").write_text("Deploy $ARGUMENTS now.\n")
    return cwd


async def test_expansion_hook_sees_the_command_and_its_stdout_reaches_the_model(tmp_path):
    cwd = project(tmp_path)
    hooks = {"UserPromptExpansion": [{"matcher": "greet", **hook(tmp_path, "greet", "echo 'greet politely'")},
                                     {"matcher": "deploy", **hook(tmp_path, "other", "")}]}
    api = ScriptedAPI(sse(text("hello, Ada")))
    d, front = dispatcher(api, cwd, hooks)
    assert await d.on_submit("/greet Ada") is SubmitPath.EXECUTED
    seen = json.loads((tmp_path / "greet.json").read_text())
    assert seen["hook_event_name"] == "UserPromptExpansion" and seen["expansion_type"] == "slash_command"
    assert seen["command_name"] == "greet" and seen["command_args"] == "Ada"
    assert seen["command_source"] == "project" and seen["prompt"].strip() == "Say hello to Ada."
    assert not (tmp_path / "other.json").exists()           # the matcher is the command name
    sent = json.dumps(api.requests[0].messages)
    assert "greet politely" in sent and "Say hello to Ada." in sent
    front.conv.close()


async def test_exit_2_blocks_the_expansion(tmp_path):
    cwd = project(tmp_path)
    hooks = {"UserPromptExpansion": [{"matcher": "deploy", **hook(tmp_path, "deploy",
                                                                  "echo 'no deploys on Friday' >&2; exit 2")}]}
    api = ScriptedAPI(sse(text("never")))
    d, front = dispatcher(api, cwd, hooks)
    await d.on_submit("/deploy prod")
    assert api.requests == []
    assert "no deploys on Friday" in front.text()
    front.conv.close()
