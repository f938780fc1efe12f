"""Fixtures of the parity matrix: an isolated trusted project per cell, the REPL helpers of
tests/repl importable, and clean skips when this machine has no pty or no working bubblewrap."""

import os
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "repl"))   # ptyterm, screen

from paritykit import Project  # noqa: E402
from parity_frontends import pty_problem, sandbox_problem  # noqa: E402

_PTY = pty_problem()


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


@pytest.fixture
def need_pty():
    if _PTY is not None:
        pytest.skip(_PTY)


@pytest.fixture
def need_sandbox():
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(f"bubblewrap cannot sandbox here: {problem}")


@pytest.fixture
def need_sdk():
    pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed")
