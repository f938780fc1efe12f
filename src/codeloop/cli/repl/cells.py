"""Tool calls as a person reads them: each call's cell title, its body, and a short line in place
of a result that was written for the model.

A tool's input is JSON for the model and its result is often an instruction to it ("User has
approved your plan. Plan mode is now off…", "Todos have been modified successfully. Ensure
that…"). The screen shows neither verbatim: a call is `Name(key argument)` — the command for
Bash, the path for Read/Edit/Write, the pattern for Grep/Glob, `key: value` pairs for anything
else, never raw JSON — ExitPlanMode's plan is drawn as markdown, and a result addressed to the
model becomes the line Claude Code shows for it (`Done (3 turns · 4.1k tokens)`, `Found 12
files`, `User approved Claude's plan`). Results that are the tool's output for people (a
command's output, a file list, an MCP server's answer) are shown as they are, cut by the
renderer. `<system-reminder>` blocks are never shown.
"""

from __future__ import annotations

import re
from typing import Any

_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)
# The one argument that says most about a call, by tool; others fall back to _MAIN_ARG.
_KEY_ARG = {"Bash": "command", "Read": "file_path", "Edit": "file_path", "Write": "file_path",
            "MultiEdit": "file_path", "NotebookEdit": "notebook_path", "Glob": "pattern", "WebFetch": "url",
            "WebSearch": "query", "Task": "description", "Agent": "description", "Skill": "skill",
            "ToolSearch": "query", "TaskCreate": "subject", "SendMessage": "to", "TaskOutput": "task_id",
            "TaskStop": "task_id", "KillShell": "shell_id", "CronDelete": "id", "TaskGet": "taskId"}
_MAIN_ARG = ("command", "file_path", "notebook_path", "pattern", "url", "query", "description", "path", "prompt")
_TITLES = {"TodoWrite": "Update Todos", "ExitPlanMode": "Plan", "EnterPlanMode": "Enter plan mode",
           "AskUserQuestion": "Questions", "TaskList": "List tasks", "CronList": "List scheduled jobs",
           "EndConversation": "End conversation", "StructuredOutput": "Structured output"}
ARG_CHARS = 100
PLAN_APPROVED = "User approved Claude's plan"
PLAN_REJECTED = "User rejected Claude's plan · still planning"


def _one_line(value: Any, limit: int = ARG_CHARS) -> str:
    s = " ".join(str(value).split())
    return s[:limit] + "…" if len(s) > limit else s


def _pairs(inp: dict[str, Any]) -> str:
    """`key: value, …` for a call without a telling argument (MCP tools and the like)."""
    parts = []
    for key, value in inp.items():
        shown = f'"{_one_line(value, 40)}"' if isinstance(value, str) else _one_line(
            value if isinstance(value, (int, float, bool)) or value is None else "…", 40)
        parts.append(f"{key}: {shown}")
    return _one_line(", ".join(parts))


def tool_label(name: str, inp: dict[str, Any]) -> str:
    """`Bash(ls -la)`: the tool and its most telling argument, on one line, never raw JSON."""
    if name in _TITLES:
        return _TITLES[name]
    if name.startswith("mcp__"):
        _, server, tool = (name.split("__", 2) + ["", ""])[:3]
        name = f"{server} - {tool} (MCP)"
    arg: Any = None
    if name == "Grep" and isinstance(inp.get("pattern"), str):
        arg = f'"{inp["pattern"]}"' + (f" in {inp['path']}" if isinstance(inp.get("path"), str) and inp["path"]
                                       else "")
    elif name == "TaskUpdate":
        arg = f"#{inp.get('taskId', '?')}" + (f" {inp['status']}" if inp.get("status") else "")
    elif name in ("CronCreate", "ScheduleWakeup"):
        arg = inp.get("cron") or (f"in {inp['delaySeconds']}s" if inp.get("delaySeconds") is not None else "")
        arg = f"{arg} · {inp.get('prompt') or inp.get('reason') or ''}".strip(" ·")
    else:
        key = _KEY_ARG.get(name)
        arg = inp.get(key) if key else None
        if not isinstance(arg, str) or not arg:
            arg = next((inp[k] for k in _MAIN_ARG if isinstance(inp.get(k), str) and inp.get(k)), None)
    if arg is None and inp:
        arg = _pairs(inp)
    text = _one_line(arg or "")
    return f"{name}({text})" if text else name


def call_body(name: str, inp: dict[str, Any]) -> str | None:
    """Markdown drawn under a call's title: ExitPlanMode's plan, AskUserQuestion's questions."""
    if name == "ExitPlanMode":
        plan = str(inp.get("plan") or "").strip()
        return plan or None
    if name == "AskUserQuestion":
        qs = [q for q in inp.get("questions") or [] if isinstance(q, dict)]
        return "\n".join(f"- {q.get('question', '')}" for q in qs) or None
    return None


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('ch') else 's'}"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def strip_reminders(text: str) -> str:
    return _REMINDER.sub("\n", text).strip() if "<system-reminder>" in text else text


def result_line(name: str, inp: dict[str, Any], text: str, data: Any, error: bool) -> str | None:
    """The line shown in place of a result written for the model; None: show the result itself."""
    d = data if isinstance(data, dict) else {}
    if error:
        if name == "ExitPlanMode" and "keep planning" in text:
            return PLAN_REJECTED
        return None
    if name == "ExitPlanMode":
        mode = {"acceptEdits": " · auto-accepting edits", "default": " · edits need approval"}.get(
            str(d.get("mode") or ""), "")
        return PLAN_APPROVED + mode
    if name == "AskUserQuestion":
        answers = d.get("answers") or {}
        return "User answered Claude's questions:" + "".join(f"\n· {q} → {a}" for q, a in answers.items())
    if name in ("Task", "Agent"):
        if d.get("status") == "async_launched":
            return f"Running in the background (agent {str(d.get('agentId', ''))[:8]})"
        tokens = f"{_tokens(int(d.get('total_tokens') or 0))} tokens"
        done = [_count(int(d["toolUses"]), "tool use"), tokens] if "toolUses" in d else [
            _count(int(d.get("num_turns") or 0), "turn"), tokens]
        if "durationS" in d:
            done.append(f"{float(d['durationS']):.0f}s")
        return f"Done ({' · '.join(done)}) · ctrl+o for the answer"
    if name == "Bash" and d.get("backgroundTaskId"):
        return f"Running in the background (ID: {d['backgroundTaskId']})"
    if name == "Read":
        return _read_line(text, d)
    if name == "Write" and not d.get("structuredPatch"):
        return f"Wrote {_count(str(inp.get('content') or '').count(chr(10)) + 1, 'line')}"
    if name == "Glob":
        n = int(d.get("numFiles") or 0) if "numFiles" in d else len([ln for ln in text.splitlines() if ln.strip()])
        more = " (the first ones; more matched)" if d.get("truncated") else ""
        return "No files found" if text.strip() == "No files found" else f"Found {_count(n, 'file')}{more}"
    if name == "Grep":
        return _grep_line(text, d)
    if name == "WebFetch":
        if "bytes" not in d:
            return f"Redirected ({d.get('code', '?')})"
        size = int(d.get("bytes") or 0)
        shown = f"{size / 1024:.1f}KB" if size >= 1024 else f"{size} bytes"
        return f"Received {shown} ({d.get('code', '?')} {d.get('codeText', '')})".replace(" )", ")")
    if name == "WebSearch":
        n = int(d.get("searchCount") or 1)
        return f"Did {_count(n, 'search')} in {float(d.get('durationSeconds') or 0):.0f}s"
    if name == "Skill":
        return f"Loaded skill {d.get('commandName', inp.get('skill', ''))}"
    if name == "ToolSearch":
        found = list(d.get("matches") or [])
        return f"Loaded {_count(len(found), 'tool')}: {', '.join(found)}" if found else "No matching tools"
    if name == "StructuredOutput":
        return "Structured output returned"
    if name == "EndConversation":
        return "Conversation ended" if d.get("ended") else "The conversation goes on"
    if name == "EnterWorktree":
        return f"Working in the worktree {d.get('worktreePath', '')}"
    if name == "ExitWorktree":
        return f"Back in {d['originalCwd']}" if d.get("originalCwd") else "No worktree to leave"
    if name == "CronCreate":
        kind = "recurring job" if d.get("recurring") else "one-shot task"
        return f"Scheduled {kind} {d.get('id', '')} ({d.get('humanSchedule', '')})"
    if name == "ScheduleWakeup" and "clampedDelaySeconds" in d:
        return f"Next wakeup in {float(d['clampedDelaySeconds']):g}s"
    if name == "NotebookEdit":
        verb = {"insert": "Inserted", "delete": "Deleted"}.get(str(d.get("edit_mode")), "Replaced")
        return f"{verb} cell {d.get('cell_id', '')}"
    if name == "TaskOutput":
        body = text.split("<output>", 1)[-1].rsplit("</output>", 1)[0].strip("\n")
        code = f" (exit {d['exit_code']})" if d.get("exit_code") is not None else ""
        return f"{d.get('status', '')}{code}" + (f"\n{body}" if body else "")
    return None


def _read_line(text: str, d: dict[str, Any]) -> str:
    kind = d.get("type")
    f: dict[str, Any] = d["file"] if isinstance(d.get("file"), dict) else {}
    if kind == "image":
        return f"Read image ({int(d.get('originalSize') or 0) / 1024:.1f}KB)"
    if kind == "notebook":
        return f"Read {_count(int(f.get('cells') or 0), 'cell')}"
    if kind == "pdf":
        return f"Read {_count(len(f.get('pages') or []), 'page')}"
    shown = strip_reminders(text)
    if text.startswith("<system-reminder>"):
        return shown.replace("Warning: ", "") or "Read 0 lines"
    return f"Read {_count(max(1, shown.count(chr(10)) + 1) if shown else 0, 'line')}"


def _grep_line(text: str, d: dict[str, Any]) -> str:
    if text.strip() in ("No files found", "No matches found"):
        return text.strip()
    if "numMatches" in d:
        return f"Found {_count(int(d['numMatches']), 'match')} across {_count(int(d.get('numFiles') or 0), 'file')}"
    if "content" in d:
        return f"Found {_count(len(str(d['content']).splitlines()), 'line')}"
    head = text.splitlines()[0] if text else ""
    return head if head.startswith("Found ") else f"Found {_count(len(text.splitlines()), 'line')}"
