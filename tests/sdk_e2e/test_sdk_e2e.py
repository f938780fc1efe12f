"""Acceptance: the official `claude-agent-sdk`'s own end-to-end suite (all 42 tests, kept unmodified
in tests/fixtures/sdk_e2e) passes with codeloop as the SDK's CLI, the model scripted by oracle.py.

The suite runs in a child pytest with its own HOME, so the SDK's session readers look in a
throwaway `~/.claude` and the tests that write under `~` write there. The SDK version is the one
pinned in pyproject's test extra.
"""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")

from oracle import OracleAPI  # noqa: E402

HERE = Path(__file__).parent
SUITE = HERE.parent / "fixtures" / "sdk_e2e"
EXPECTED = 42


def _codeloop(tmp: Path) -> str:
    exe = tmp / "codeloop"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m codeloop \"$@\"\n")
    exe.chmod(0o755)
    return str(exe)


def run_suite(tmp_path: Path, *select: str) -> dict[str, str]:
    """Run the SDK's e2e tests (all, or the `-k` selection); map each test id to its outcome."""
    work = tmp_path / "e2e"
    work.mkdir()
    for f in SUITE.glob("test_*.py"):
        shutil.copy(f, work / f.name)
    (work / "pytest.ini").write_text("[pytest]\nmarkers =\n    e2e: the SDK's e2e marker\n")
    # As the SDK's own e2e conftest does: asyncio only. anyio >= 4.16 otherwise runs every test once
    # per installed backend (twice where trio is installed); a plugin's fixture cannot override it.
    (work / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n")
    home = tmp_path / "home"
    home.mkdir()
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE", "CODELOOP", "ANTHROPIC")) and k != "PYTEST_CURRENT_TEST"}
    with OracleAPI().serve() as url:
        env.update(HOME=str(home), ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-fake",
                   CODELOOP_SDK_E2E_CLI=_codeloop(tmp_path),
                   PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parent)]))
        args = [sys.executable, "-m", "pytest", "-q", "-p", "sdk_cli_plugin", "-p", "no:cacheprovider",
                "-c", str(work / "pytest.ini"), "--rootdir", str(work), f"--junitxml={report}", str(work)]
        if select:
            args += ["-k", " or ".join(select)]
        run = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    if not report.exists():
        pytest.fail(f"the SDK suite did not run:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}")
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        bad = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        outcomes[name] = bad[0] if bad else "passed"
    run_suite.last_output = run.stdout  # type: ignore[attr-defined]
    return outcomes


def test_the_sdk_e2e_suite_passes_with_codeloop_as_its_cli(tmp_path):
    outcomes = run_suite(tmp_path)
    failed = sorted(name for name, outcome in outcomes.items() if outcome != "passed")
    assert len(outcomes) == EXPECTED, sorted(outcomes)
    assert not failed, f"{len(outcomes) - len(failed)} of {len(outcomes)} passed; failed: {failed}\n" + \
        run_suite.last_output[-12000:]  # type: ignore[attr-defined]
