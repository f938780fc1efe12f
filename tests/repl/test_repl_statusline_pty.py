"""Issue 27 item 2 in a real pty, judged on the screen: settings `statusLine` runs its command
with Claude Code's JSON on stdin and shows its first line under the input; it follows changes; a
slow command never holds up typing; an untrusted folder's statusLine never runs."""

import json
import sys
import time

from fakeapi import ScriptedAPI, sse, text
from ptyterm import Term
from screen import Screen

SCRIPT = """\
import json, os, sys
data = json.load(sys.stdin)
with open(os.environ["STATUS_DUMP"], "a") as f:
    f.write(json.dumps(data) + "\\n")
cost = data["cost"]["total_cost_usd"]
print(f"\\x1b[32m[{data['model']['display_name']}]\\x1b[0m {os.path.basename(data['workspace']['current_dir'])}"
      f" cost={cost:.4f} msgs-seen vim={data.get('vim', {}).get('mode', '-')}")
print("second line is never shown")
"""


def _status_setup(tmp_path, command=None, **block):
    script = tmp_path / "status.py"
    script.write_text(SCRIPT)
    dump = tmp_path / "status-dump.jsonl"
    cfg = tmp_path / ".cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "settings.json").write_text(json.dumps(
        {"statusLine": {"type": "command", "command": command or f"{sys.executable} {script}", **block}}))
    return dump


def test_status_line_shows_the_commands_first_line_under_the_input(tmp_path, screen):
    dump = _status_setup(tmp_path, padding=2)
    api = ScriptedAPI(sse(text("Hello there."), input_tokens=5000))
    with api.serve() as url:
        s = screen(url, env={"STATUS_DUMP": str(dump)})
        shown = s.wait_text("[Sonnet 4.5]")
        lines = shown.splitlines()
        status = next(i for i, ln in enumerate(lines) if "[Sonnet 4.5]" in ln)
        assert lines[status] == f"  [Sonnet 4.5] {tmp_path.name} cost=0.0000 msgs-seen vim=-"   # padding 2
        prompt = max(i for i, ln in enumerate(lines) if ln.startswith(">"))
        assert prompt < status and "shift+tab to cycle" in lines[status + 1]   # under the input, over the modes
        assert "second line" not in shown
        s.term.send("hi\r")
        s.wait_text("Hello there.")
        s.wait_for(lambda scr: "cost=0.0000" not in scr and "[Sonnet 4.5]" in scr)   # re-run: cost changed
    first = json.loads(dump.read_text().splitlines()[0])
    assert first["hook_event_name"] == "Status" and first["session_id"]
    assert first["model"]["id"].startswith("claude-sonnet-4-5")
    assert first["workspace"] == {"current_dir": str(tmp_path.resolve()), "project_dir": str(tmp_path.resolve())}
    assert first["cwd"] == str(tmp_path.resolve()) and first["version"] and first["output_style"]["name"]
    assert set(first["cost"]) >= {"total_cost_usd", "total_duration_ms", "total_api_duration_ms",
                                  "total_lines_added", "total_lines_removed"}
    assert first["transcript_path"].endswith(".jsonl") and "vim" not in first
    last = json.loads(dump.read_text().splitlines()[-1])
    assert last["cost"]["total_cost_usd"] > 0 and last["context_window"]["current_usage"]["input_tokens"] == 5000


def test_a_slow_status_command_never_holds_up_typing(tmp_path, screen):
    marker = tmp_path / "finished"
    _status_setup(tmp_path, command=f"sleep 3; touch {marker}; echo slow-status-line")
    with ScriptedAPI().serve() as url:
        s = screen(url)
        s.term.send("typed while it runs")
        s.wait_text("> typed while it runs")
        assert not marker.exists()                  # the command was still running as the keys echoed
        s.wait_text("slow-status-line")             # and its line still arrives


def test_an_untrusted_folders_status_line_never_runs(tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    home.mkdir()
    marker = tmp_path / "status-ran"
    (proj / ".claude" / "settings.json").write_text(json.dumps(
        {"statusLine": {"type": "command", "command": f"touch {marker}; echo project-status"}}))
    with ScriptedAPI().serve() as url:
        t = Term(proj, url, env={"HOME": str(home), "CODELOOP_CONFIG_DIR": str(tmp_path / "cfg")})
        try:
            s = Screen(t)
            s.wait_text("Trust this folder?")
            t.send("2")                              # no: go on without its configuration
            t.send("\r")
            shown = s.wait_text("shift+tab to cycle")
            time.sleep(1.0)                          # a status line would have run by now (300 ms)
            s.pump(0.3)
            assert "project-status" not in s.text() and not marker.exists(), shown
        finally:
            t.close()
