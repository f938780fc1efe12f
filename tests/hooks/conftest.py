"""The `lab` fixture: a tmp folder for hook scripts plus a runner factory (see hooklab.py)."""

import pytest
from hooklab import HookLab


@pytest.fixture
def lab(tmp_path) -> HookLab:
    return HookLab(tmp_path)
