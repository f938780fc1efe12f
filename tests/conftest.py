"""Shared test set-up: the scripted fake API is importable as `fakeapi`; no test touches ~/."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    cfg = tmp_path_factory.mktemp("codeloop-config")
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(cfg))
    # The CLI processes the tests start share one import cache (cli.startup.importcache) instead of
    # writing one per config dir: every later process of the run is served from it.
    monkeypatch.setenv("CODELOOP_IMPORT_CACHE", str(tmp_path_factory.getbasetemp() / "import-cache"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    # sessions follow CLAUDE_CONFIG_DIR when it is set: a machine's own must not receive test sessions
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return cfg
