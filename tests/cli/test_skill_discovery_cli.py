"""Spec 004 §13.2 step 4, the skill discovery prefetch, through the real CLI against the loopback
fake API: between turns, a skill relevant to the latest tool results is attached to the next
request (its matching rules: tests/loop/test_skill_prefetch.py)."""

import json
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop
from codeloop.loop.skill_prefetch import HEADER


def write_skill(root: Path, name: str, description: str) -> None:
    folder = root / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nThe steps.\n")


def reminders(req) -> list[str]:
    return [b["text"] for m in req.messages if m["role"] == "user" for b in m["content"]
            if b.get("type") == "text" and HEADER in b.get("text", "")]


def test_a_skill_relevant_to_the_tool_results_is_attached_to_the_next_request(tmp_path):
    write_skill(tmp_path, "pdf-forms", "Fill in PDF form fields, checkboxes and signatures with pypdf.")
    write_skill(tmp_path, "release-notes", "Write release notes from the changelog and merged pull requests.")
    (tmp_path / "task.txt").write_text("The customer sent a PDF with forms to complete: name fields and a "
                                       "signature box.\n")
    (tmp_path / "more.txt").write_text("Another PDF, more forms.\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "task.txt")})),
                      sse(tool_use("Read", {"file_path": str(tmp_path / "more.txt")})),
                      sse(text("Done.")))
    with api.serve() as url:
        r = codeloop(["-p", "what does the customer need?", "--output-format", "stream-json", "--verbose"],
                     cwd=tmp_path, base_url=url)
    assert r.returncode == 0, r.stderr
    assert "Skill" in api.requests[0].tool_names and reminders(api.requests[0]) == []   # before any tool ran
    [attached] = reminders(api.requests[1])
    assert "- pdf-forms: Fill in PDF form fields" in attached and "release-notes" not in attached
    # it came after the tool results of the batch it was drawn from, in the same user turn
    last = api.requests[1].messages[-1]["content"]
    assert last[0]["type"] == "tool_result" and any(HEADER in b.get("text", "") for b in last[1:])
    # once per session: the next batch mentions PDF forms again, nothing new is attached
    assert reminders(api.requests[2]) == [attached]
    # the transcript keeps it as the meta message the model saw
    entries = [json.loads(line) for f in (tmp_path / ".cfg" / "projects").rglob("*.jsonl")
               for line in f.read_text().splitlines()]
    assert any(e.get("isMeta") and HEADER in json.dumps(e) for e in entries)


def test_no_attachment_without_a_match_or_without_the_skill_tool(tmp_path):
    write_skill(tmp_path, "pdf-forms", "Fill in PDF form fields, checkboxes and signatures with pypdf.")
    (tmp_path / "task.txt").write_text("PDF forms everywhere.\n")
    (tmp_path / "plain.txt").write_text("Nothing to see here.\n")
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "plain.txt")})), sse(text("ok")),
                      sse(tool_use("Read", {"file_path": str(tmp_path / "task.txt")})), sse(text("ok")))
    with api.serve() as url:
        r1 = codeloop(["-p", "look"], cwd=tmp_path, base_url=url)
        r2 = codeloop(["-p", "look", "--disallowedTools", "Skill"], cwd=tmp_path, base_url=url)
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    assert reminders(api.requests[1]) == []       # the results say nothing about the skill
    assert reminders(api.requests[3]) == []       # they do, but no Skill tool could load it
