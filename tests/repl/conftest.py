import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def _can_spawn() -> str | None:
    try:
        import pexpect
    except ImportError:
        return "pexpect is not installed (pip install pexpect)"
    try:
        child = pexpect.spawn(sys.executable, ["-c", "print('ok')"], timeout=10, encoding="utf-8")
        child.expect("ok")
        child.close()
    except Exception as exc:  # no /dev/ptmx, sandboxed pty, …
        return f"cannot spawn a pseudo-terminal: {exc}"
    return None


_REASON = _can_spawn()


def pytest_collection_modifyitems(config, items):
    if _REASON is None:
        return
    for item in items:
        if "tests/repl" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.skip(reason=_REASON))


@pytest.fixture
def run(tmp_path):
    """Start codeloop's REPL in a pty (ptyterm.Term) against a fake API; every one started is closed."""
    from ptyterm import Term

    terms = []

    def start(api_url, *args, **kw):
        t = Term(tmp_path, api_url, *args, **kw)
        terms.append(t)
        t.ready()
        return t
    yield start
    for t in terms:
        t.close()


@pytest.fixture
def screen(tmp_path):
    """Like `run`, but returns the rendered screen (screen.Screen) once the prompt's footer shows."""
    from ptyterm import Term
    from screen import Screen

    terms = []

    def start(api_url, *args, rows=30, cols=100, env=None):
        t = Term(tmp_path, api_url, *args, rows=rows, cols=cols, env=env)
        terms.append(t)
        s = Screen(t, rows=rows, cols=cols)
        s.wait_text("shift+tab to cycle")
        return s
    yield start
    for t in terms:
        t.close()
