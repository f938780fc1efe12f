"""A real `codeloop` run ended as its Nth request leaves (the bench's launcher), after a report on
the process's state written to stderr as one `REPORT <json>` line: for the tests that check what
start-up loaded, replayed or built on the way to a request."""

from __future__ import annotations

import json
import os
import textwrap

_LAUNCHER = """
import sys
AT_START = set(sys.modules)   # what the interpreter loaded before codeloop ran (site, .pth files)
import json, os, runpy, socket
_send = socket.socket.send
_left = [int(os.environ.get("STOP_AT", "1"))]
def _report():
{report}
def send(self, data, *a):
    if self.family != socket.AF_UNIX and bytes(data[:5]) == b"POST ":
        _left[0] -= 1
        if not _left[0]:
            sys.stderr.write("REPORT " + json.dumps(_report()) + "\\n")
            sys.stderr.flush()
            os._exit(0)
    return _send(self, data, *a)
socket.socket.send = send
sys.argv = ["codeloop", *sys.argv[1:]]
runpy.run_module("codeloop", run_name="__main__")
"""


def launcher(report: str) -> str:
    """`python -c` code running codeloop with the command line it is given; `report` is the body
    of a function returning what to report (JSON-able), run as the request leaves."""
    return _LAUNCHER.format(report=textwrap.indent(textwrap.dedent(report).strip(), "    "))


def cli_env(home: os.PathLike[str] | str, url: str) -> dict[str, str]:
    """This environment without the API, codeloop and Claude settings and with bytecode written
    (an installed codeloop's is), pointed at `url` with `home` as the config folder and home."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url, CODELOOP_CONFIG_DIR=str(home), HOME=str(home))
    return env


def report(stderr: str) -> object:
    """The report a launcher run wrote."""
    [line] = [ln for ln in stderr.splitlines() if ln.startswith("REPORT ")]
    return json.loads(line[len("REPORT "):])
