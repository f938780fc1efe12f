"""Issue 16 in a real pseudo-terminal: AskUserQuestion's selector and plan approval (ExitPlanMode)."""

import json
import time

from fakeapi import ScriptedAPI, sse, text, tool_use

QUESTIONS = [{"question": "Which format should the report use?", "header": "Format",
              "options": [{"label": "Markdown", "description": "Plain text"},
                          {"label": "HTML", "description": "For the browser"}], "multiSelect": False},
             {"question": "Which sections should it have?", "header": "Sections",
              "options": [{"label": "Summary", "description": "One paragraph"},
                          {"label": "Charts", "description": "Figures"},
                          {"label": "Appendix", "description": "Raw data"}], "multiSelect": True}]


def pick(t, key):
    time.sleep(0.3)   # the selector must be showing before the key arrives
    t.send(key)


def test_questions_then_plan_approval_switches_to_accept_edits(tmp_path, run):
    report = tmp_path / "report.md"
    api = ScriptedAPI(sse(tool_use("AskUserQuestion", {"questions": QUESTIONS}, id="q")),
                      sse(tool_use("ExitPlanMode", {"plan": "1. Write report.md with a summary"}, id="p")),
                      sse(tool_use("Write", {"file_path": str(report), "content": "# Report\n"}, id="w")),
                      sse(text("Report written.")))
    with api.serve() as url:
        t = run(url, "--permission-mode", "plan")
        t.line("write a report")
        t.expect(r"\[Format\] Which format should the report use\?")
        t.expect(r"2\) HTML")
        pick(t, "2")
        t.expect(r"\[Sections\] Which sections should it have\?")
        pick(t, "1")                      # Summary
        t.expect(r"4\) Done")             # Charts, Appendix, Other, Done
        pick(t, "2")                      # Appendix
        t.expect(r"3\) Done")             # Charts, Other, Done
        pick(t, "3")
        t.expect("Here is Claude's plan")
        t.expect(r"1\) Yes, and auto-accept edits")
        pick(t, "1")
        t.expect("Report written")
        t.line("/exit")
        assert t.wait_exit() == 0
    answered = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert ('"Which format should the report use?"="HTML", "Which sections should it have?"="Summary, Appendix"'
            in json.dumps(answered["content"]).replace('\\"', '"'))
    assert "Plan mode is active" in api.requests[0].system_text
    approved = next(b for b in api.requests[2].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "Plan mode is now off" in json.dumps(approved["content"])
    assert report.read_text() == "# Report\n"                          # acceptEdits: no prompt for Write


def test_webfetch_always_allow_remembers_the_domain(tmp_path, run):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from webpages import PageServer

    with PageServer() as pages:
        page = f"http://2130706433:{pages.port}/libffi.html"   # 127.0.0.1 spelled as one number
        api = ScriptedAPI(sse(tool_use("WebFetch", {"url": page, "prompt": "what is a cif?"}, id="f1")),
                          sse(text("A call interface."), model="claude-haiku-4-5"),
                          sse(tool_use("WebFetch", {"url": pages.url + "/debian.html", "prompt": "uids?"}, id="f2")),
                          sse(text("System uids are below 1000."), model="claude-haiku-4-5"),
                          sse(text("Both pages read.")))
        with api.serve() as url:
            t = run(url)
            t.line("read two pages")
            t.expect(r"It fetches from 127\.0\.0\.1 \(loopback")
            t.expect(r"don't ask again for WebFetch\(domain:127\.0\.0\.1\)")
            pick(t, "2")
            t.expect("Both pages read")                # the second page (127.0.0.1 as usual) did not ask
            t.line("/exit")
            assert t.wait_exit() == 0
    assert pages.hits["/libffi.html"] == 1 and pages.hits["/debian.html"] == 1
    second = next(b for b in api.requests[4].messages[-1]["content"] if b.get("type") == "tool_result")
    assert "System uids are below 1000." in json.dumps(second["content"])
