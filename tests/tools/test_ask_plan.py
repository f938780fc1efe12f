"""AskUserQuestion and ExitPlanMode / plan mode (issue 16): the question form is the permission
prompt (answers come back in updatedInput), print mode denies both, the SDK answers through
can_use_tool, and plan mode lets only read-only tools run until the plan is approved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolContext, ToolError
from codeloop.tools.builtin.ask_user import AskUserQuestionTool
from codeloop.tools.builtin.plan_mode import ExitPlanModeTool
from codeloop.tools.builtin.write import WriteTool
from codeloop.tools.registry import parse_tool_input
from fakeapi import ScriptedAPI, sse, text, tool_use

QUESTIONS = [{"question": "Which database should we use?", "header": "Database",
              "options": [{"label": "PostgreSQL (Recommended)", "description": "Relational, robust"},
                          {"label": "SQLite", "description": "A single file"}], "multiSelect": False},
             {"question": "Which features do you want?", "header": "Features",
              "options": [{"label": "Auth", "description": "Log-in"}, {"label": "Search", "description": "Find"},
                          {"label": "Export", "description": "CSV"}], "multiSelect": True}]


def ctx_with(tmp_path: Path, policy: PermissionPolicy) -> ToolContext:
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    ctx.policy = policy
    return ctx


async def decide(tool, raw, policy, ctx):
    inp = parse_tool_input(tool, raw)
    return policy.decide(tool, inp, await tool.check_permissions(inp, ctx), raw)


async def test_answers_in_the_input_become_the_result(tmp_path):
    tool = AskUserQuestionTool()
    answers = {QUESTIONS[0]["question"]: "SQLite", QUESTIONS[1]["question"]: "Auth, Export"}
    res = await tool.call(parse_tool_input(tool, {"questions": QUESTIONS, "answers": answers}),
                          ToolContext(cwd=tmp_path, project_dir=tmp_path))
    assert res.content == ('User has answered your questions: "Which database should we use?"="SQLite", '
                           '"Which features do you want?"="Auth, Export". You can now continue with the user\'s '
                           'answers in mind.')
    assert res.data["answers"] == answers
    with pytest.raises(ToolError, match="did not answer"):
        await tool.call(parse_tool_input(tool, {"questions": QUESTIONS}), ToolContext(cwd=tmp_path,
                                                                                      project_dir=tmp_path))
    with pytest.raises(ToolError, match="options"):
        parse_tool_input(tool, {"questions": [{**QUESTIONS[0], "options": QUESTIONS[0]["options"][:1]}]})


async def test_questions_always_ask_even_in_bypass_and_are_denied_in_dont_ask(tmp_path):
    tool, raw = AskUserQuestionTool(), {"questions": QUESTIONS}
    for mode in (PermissionMode.DEFAULT, PermissionMode.BYPASS, PermissionMode.PLAN, PermissionMode.ACCEPT_EDITS):
        policy = PermissionPolicy(cwd=tmp_path, mode=mode, allow=["AskUserQuestion"])
        assert (await decide(tool, raw, policy, ctx_with(tmp_path, policy))).behavior is PermissionBehavior.ASK
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.DONT_ASK)
    assert (await decide(tool, raw, policy, ctx_with(tmp_path, policy))).behavior is PermissionBehavior.DENY
    policy = PermissionPolicy(cwd=tmp_path, deny=["AskUserQuestion"])
    assert (await decide(tool, raw, policy, ctx_with(tmp_path, policy))).behavior is PermissionBehavior.DENY


async def test_plan_mode_refuses_writes_and_exit_plan_mode_switches_mode(tmp_path):
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN, allow=["Write"])
    ctx = ctx_with(tmp_path, policy)
    write = {"file_path": str(tmp_path / "f.txt"), "content": "x"}
    assert (await decide(WriteTool(), write, policy, ctx)).behavior is PermissionBehavior.DENY
    tool = ExitPlanModeTool()
    assert (await decide(tool, {"plan": "1. do it"}, policy, ctx)).behavior is PermissionBehavior.ASK
    res = await tool.call(parse_tool_input(tool, {"plan": "1. Add f.txt\n2. Test it"}), ctx)
    assert res.content.startswith("User has approved your plan.") and "2. Test it" in res.content
    assert policy.mode is PermissionMode.DEFAULT
    assert (await decide(WriteTool(), write, policy, ctx)).behavior is PermissionBehavior.ALLOW
    # outside plan mode the tool refuses without a prompt
    decision = await decide(tool, {"plan": "again"}, policy, ctx)
    assert decision.behavior is PermissionBehavior.DENY and "not in plan mode" in decision.message


async def test_an_approver_that_chose_a_mode_keeps_it(tmp_path):
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN)
    ctx = ctx_with(tmp_path, policy)
    policy.set_mode(PermissionMode.ACCEPT_EDITS)   # what the REPL does on "Yes, and auto-accept edits"
    await ExitPlanModeTool().call(parse_tool_input(ExitPlanModeTool(), {"plan": "p"}), ctx)
    assert policy.mode is PermissionMode.ACCEPT_EDITS


class FakeRepl:
    """The REPL's `choose` with scripted picks, to drive repl_ask's forms."""
    def __init__(self, picks, policy, typed=()):
        self.picks, self.titles, self.shown, self.typed = list(picks), [], [], list(typed)
        self.conv = type("C", (), {"config": type("Cfg", (), {"policy": policy})()})()

    async def choose(self, title, options):
        self.titles.append((title, [k for k, _ in options]))
        return self.picks.pop(0)

    async def ask_text(self, title):
        return self.typed.pop(0)

    def show(self, text, style=""):
        self.shown.append(text)

    def _invalidate(self):
        pass


async def test_repl_forms_fill_answers_and_approve_plans(tmp_path):
    from codeloop.cli.repl.dialogs.tool_forms import DONE, OTHER, approve_plan, ask_questions

    repl = FakeRepl(["SQLite", "Export", "Auth", DONE], PermissionPolicy(cwd=tmp_path))
    decision = await ask_questions(repl, {"questions": QUESTIONS})
    assert decision.behavior is PermissionBehavior.ALLOW
    assert decision.updated_input["answers"] == {QUESTIONS[0]["question"]: "SQLite",
                                                 QUESTIONS[1]["question"]: "Export, Auth"}
    assert repl.titles[0] == ("[Database] Which database should we use?",
                              ["PostgreSQL (Recommended)", "SQLite", OTHER])
    assert DONE not in repl.titles[1][1] and DONE in repl.titles[2][1]       # Done only after a pick
    # Other: the typed text is the answer; an empty answer goes back to the choices
    repl = FakeRepl([OTHER, OTHER, "Export", DONE], PermissionPolicy(cwd=tmp_path), typed=["", "DuckDB"])
    decision = await ask_questions(repl, {"questions": QUESTIONS})
    assert decision.updated_input["answers"][QUESTIONS[0]["question"]] == "DuckDB"
    assert len(repl.titles) == 4 and repl.titles[1][0] == repl.titles[0][0]
    declined = await ask_questions(FakeRepl([None], PermissionPolicy(cwd=tmp_path)), {"questions": QUESTIONS})
    assert declined.behavior is PermissionBehavior.DENY
    policy = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN)
    repl = FakeRepl(["no"], policy)
    keep = await approve_plan(repl, {"plan": "1. step"})
    assert keep.behavior is PermissionBehavior.DENY and "keep planning" in keep.message
    assert policy.mode is PermissionMode.PLAN and repl.shown == ["Here is Claude's plan (above)."]
    go = await approve_plan(FakeRepl(["acceptEdits"], policy), {"plan": "1. step"})
    assert go.behavior is PermissionBehavior.ALLOW and policy.mode is PermissionMode.ACCEPT_EDITS


def codeloop(args, *, cwd, base_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base_url,
                "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd)})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def test_cli_print_mode_plan_mode_and_questions(tmp_path):
    target = tmp_path / "app.py"
    api = ScriptedAPI(sse(tool_use("Write", {"file_path": str(target), "content": "x"}, id="w"),
                          tool_use("AskUserQuestion", {"questions": QUESTIONS[:1]}, id="q")),
                      sse(tool_use("ExitPlanMode", {"plan": "1. Write app.py"}, id="p")),
                      sse(text("Here is my plan: write app.py.")))
    with api.serve() as url:
        r = codeloop(["-p", "plan it", "--output-format", "json", "--permission-mode", "plan"], cwd=tmp_path,
                     base_url=url)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert "Plan mode is active" in api.requests[0].system_text and "ExitPlanMode" in api.requests[0].tool_names
    assert not target.exists()
    results = {b["tool_use_id"]: b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result"}
    assert "not available in plan mode" in json.dumps(results["w"]) and results["q"]["is_error"] is True
    assert [d["tool_name"] for d in res["permission_denials"]] == ["Write", "AskUserQuestion", "ExitPlanMode"]
    assert res["result"] == "Here is my plan: write app.py."


async def test_sdk_answers_questions_and_approves_the_plan_through_can_use_tool(tmp_path):
    sdk = pytest.importorskip("claude_agent_sdk")
    import shutil

    beside = Path(sys.executable).with_name("codeloop")   # this interpreter's own install first
    exe = str(beside) if beside.exists() else shutil.which("codeloop")
    if exe is None:
        pytest.skip("the codeloop entry point is not installed")
    api = ScriptedAPI(sse(tool_use("AskUserQuestion", {"questions": QUESTIONS[:1]}, id="q")),
                      sse(tool_use("ExitPlanMode", {"plan": "1. Use SQLite"}, id="p")),
                      sse(tool_use("Write", {"file_path": str(tmp_path / "db.txt"), "content": "sqlite"}, id="w")),
                      sse(text("Done with SQLite.")))
    asked = []

    async def can_use_tool(name, inp, ctx):
        asked.append(name)
        if name == "AskUserQuestion":
            q = inp["questions"][0]["question"]
            return sdk.PermissionResultAllow(updated_input={**inp, "answers": {q: "SQLite"}})
        return sdk.PermissionResultAllow()

    async def prompt():
        yield {"type": "user", "message": {"role": "user", "content": "set up a db"}, "parent_tool_use_id": None,
               "session_id": ""}

    env = {"ANTHROPIC_BASE_URL": "", "ANTHROPIC_API_KEY": "k", "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"),
           "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1", "HOME": str(tmp_path / "home")}
    with api.serve() as url:
        env["ANTHROPIC_BASE_URL"] = url
        opts = sdk.ClaudeAgentOptions(cli_path=exe, env=env, cwd=str(tmp_path), can_use_tool=can_use_tool,
                                      permission_mode="plan")
        messages = [m async for m in sdk.query(prompt=prompt(), options=opts)]
    assert asked[:2] == ["AskUserQuestion", "ExitPlanMode"]
    answered = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert '"Which database should we use?"="SQLite"' in str(answered["content"])
    approved = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "User has approved your plan" in str(approved["content"])
    assert (tmp_path / "db.txt").read_text() == "sqlite"          # plan mode was left: the write ran
    assert messages[-1].result == "Done with SQLite." and messages[-1].permission_denials == []


def test_cli_permission_prompt_tool_answers_questions(tmp_path):
    pytest.importorskip("mcp")
    server = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "question_answerer.py"
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"answerer": {"command": sys.executable, "args": [str(server)]}}}))
    api = ScriptedAPI(sse(tool_use("AskUserQuestion", {"questions": QUESTIONS[:1]}, id="q")),
                      sse(text("Going with PostgreSQL.")))
    with api.serve() as url:
        r = codeloop(["-p", "pick a db", "--output-format", "json", "--mcp-config", str(cfg),
                      "--permission-prompt-tool", "mcp__answerer__answer"], cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    answered = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert '"Which database should we use?"="PostgreSQL (Recommended)"' in str(answered["content"])
    assert json.loads(r.stdout)["permission_denials"] == []
