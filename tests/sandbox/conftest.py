"""Fixtures for the real-sandbox tests."""

import shutil
import uuid
from pathlib import Path

import pytest


@pytest.fixture
def outside():
    """A folder outside every writable root and outside /tmp (the sandbox's /tmp is private)."""
    path = Path("/var/tmp") / f"codeloop-sandbox-test-{uuid.uuid4().hex}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
