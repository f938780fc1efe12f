"""The first request's connection is opened while the session is still being assembled (https):
its round trips overlap the work before the request instead of following it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakeapi import ScriptedAPI, sse, text
from providers.test_lite_http import _self_signed

# A UserPromptSubmit hook runs after the session is assembled and before the first request is
# built: it waits (up to 60 s) for the server to have taken a connection, and says whether it did
# (the parity matrix's preconnect cells use it too).
WAIT_FOR_CONNECTION = ("import os, sys, time\n"
                       "marker, out = sys.argv[1], sys.argv[2]\n"
                       "end = time.monotonic() + 60\n"
                       "while not os.path.exists(marker) and time.monotonic() < end:\n"
                       "    time.sleep(0.01)\n"
                       "open(out, 'w').write('seen' if os.path.exists(marker) else 'absent')\n")


def test_the_first_https_connection_is_open_before_the_first_request_is_built(tmp_path: Path):
    cert, key = _self_signed(tmp_path)
    marker, seen, script = tmp_path / "connected", tmp_path / "seen", tmp_path / "wait.py"
    script.write_text(WAIT_FOR_CONNECTION)
    connections: list[int] = []

    def on_connect() -> None:
        connections.append(1)
        marker.touch()

    hooks = {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": f"'{sys.executable}' '{script}' '{marker}' '{seen}'"}]}]}}
    api = ScriptedAPI(sse(text("hello")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_", "SSL_"))}
    with api.serve(tls=(cert, key), on_connect=on_connect) as url:
        assert url.startswith("https://")
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "SSL_CERT_FILE": cert,
                    "CODELOOP_CONFIG_DIR": str(tmp_path / ".cfg"), "HOME": str(tmp_path)})
        r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "go", "--output-format", "json",
                            "--no-session-persistence", "--settings", json.dumps(hooks)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "hello"
    assert seen.read_text() == "seen"
    assert len(connections) == 1 and len(api.requests) == 1   # the request went on that connection
