"""Issue 24 part 5: the autocompact breaker's notice reaches every front end — a `system` line in
stream-json (the CLI as a subprocess against the loopback fake API), a warning line in the REPL."""

from fakeapi import ScriptedAPI, sse, text, tool_use
from test_print_mode import codeloop, jsonl
from codeloop.cli.repl.render import Renderer
from codeloop.events import SystemEvent

BIG = 9_500   # input tokens a response reports: over the threshold of a 30,000-token window


def test_stream_json_prints_the_breaker_tripping(tmp_path):
    (tmp_path / "notes.txt").write_text("some notes\n")
    read = {"file_path": str(tmp_path / "notes.txt")}
    # every turn after the first is preceded by an automatic compaction whose summary comes back empty
    api = ScriptedAPI(sse(tool_use("Read", read), input_tokens=BIG),
                      sse(text("")), sse(tool_use("Read", read), input_tokens=BIG),
                      sse(text("")), sse(tool_use("Read", read), input_tokens=BIG),
                      sse(text("")), sse(text("done"), input_tokens=BIG))
    with api.serve() as url:
        r = codeloop(["-p", "read it thrice", "--output-format", "stream-json", "--verbose"], cwd=tmp_path,
                     base_url=url, env={"CODELOOP_CONTEXT_WINDOW": "30000"})
    assert r.returncode == 0, r.stderr
    lines = jsonl(r.stdout)
    [off] = [x for x in lines if x["type"] == "system" and x.get("subtype") == "autocompact_disabled"]
    assert off["failures"] == 3 and off["last_error"] == "the model returned an empty summary"
    assert "Autocompact is off" in off["message"] and off["session_id"] == lines[-1]["session_id"]
    assert lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success" and len(api.requests) == 7


def test_the_repl_shows_the_breaker_as_a_warning_line():
    out: list[str] = []
    r = Renderer(out.append, color=False)
    r.event(SystemEvent("autocompact_disabled", "Autocompact is off after 3 failed attempts in a row.", "warning"))
    r.event(SystemEvent("autocompact_enabled", "Autocompact is back on: a compaction succeeded.", "info"))
    printed = "".join(out)
    assert "⚠ Autocompact is off after 3 failed attempts in a row." in printed
    assert "Autocompact is back on" in printed
