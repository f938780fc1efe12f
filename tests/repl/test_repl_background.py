"""Background shells in the REPL (issue 16 item 3), in a real pseudo-terminal: /tasks lists them
and leaving the REPL kills every one still running."""

import sys
import time
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text, tool_use
from ptyterm import Term

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from test_background import alive, marker_sleep  # noqa: E402


def test_tasks_listing_and_exit_kills_background_shells(tmp_path):
    command, marker = marker_sleep()
    api = ScriptedAPI(sse(tool_use("Bash", {"command": command, "run_in_background": True}, id="bg")),
                      sse(text("Started the server in the background.")))
    with api.serve() as url:
        t = Term(tmp_path, url, "--allowedTools", "Bash")
        try:
            t.ready()
            t.line("start the server")
            t.expect("Started the server in the background")
            t.ready()
            assert alive(marker)
            t.line("/tasks")
            t.expect("Background tasks:")
            t.expect("running")
            t.ready()
            t.line("/exit")
            assert t.wait_exit() == 0
        finally:
            t.close()
    for _ in range(100):
        if not alive(marker):
            break
        time.sleep(0.05)
    assert not alive(marker)
