"""Habits as a test: ruff's rule set and mypy's checks, as configured in pyproject.toml, hold.

Like the layer contracts (tests/test_architecture.py), they run inside the README's one test
command, so CI has no separate lint step to forget. Ruff covers src, tests and bench; mypy checks
src/codeloop at its default level, and strictly the modules the strict override names (the seams
of issue 24). Both run in processes of their own and print what they found on failure.

mypy keeps its cache in .mypy_cache at the root: a fresh clone pays one cold run (~20 s on CI's
machine), a developer's later runs take a second or two.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
RUFF_SCOPE = ("src", "tests", "bench")
MYPY_CACHE = ROOT / ".mypy_cache"


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(MYPY_CACHE), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_ruff_is_clean():
    run = _ruff(*RUFF_SCOPE)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_is_clean():
    run = _mypy()   # what and how strictly: [tool.mypy] in pyproject.toml
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout


def _strict_modules() -> list[str]:
    overrides = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"]["overrides"]
    return [m for o in overrides if o.get("disallow_untyped_defs") for m in o["module"]]


def test_the_strict_modules_exist():
    """mypy ignores an override for a module it never sees: a renamed seam would lose its strictness."""
    modules = _strict_modules()
    assert modules
    missing = [m for m in modules if not (ROOT / "src" / (m.replace(".", "/") + ".py")).is_file()]
    assert missing == []


def test_a_violation_fails_both_checks(tmp_path):
    """The checks are not decoration: an unused import fails ruff, a wrong type fails mypy."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f() -> int:\n    return 'not an int'\n")
    ruff = _ruff("--config", str(PYPROJECT), str(bad), cwd=tmp_path)
    assert ruff.returncode == 1, ruff.stdout + ruff.stderr
    assert "F401" in ruff.stdout
    mypy = _mypy("--config-file", str(PYPROJECT), str(bad), cwd=tmp_path)
    assert mypy.returncode == 1, mypy.stdout + mypy.stderr
    assert "[return-value]" in mypy.stdout


MAX_MODULE_LINES = 400


def _long_modules(root: Path) -> list[str]:
    return sorted(f"{p.relative_to(root)}: {n} lines" for p in root.rglob("*.py")
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES)


def test_modules_stay_within_400_lines():
    """A module over 400 lines owns more than one thing: split it along what it owns."""
    assert _long_modules(ROOT / "src" / "codeloop") == []


def test_the_module_length_check_sees_a_long_module(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert _long_modules(tmp_path) == [f"pkg/long.py: {MAX_MODULE_LINES + 1} lines"]


_DATACLASS = ("dataclass", "dataclasses.dataclass")


def _undocumented_dataclasses(root: Path) -> list[str]:
    import ast

    found = []
    for p in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or ast.get_docstring(node) is not None:
                continue
            if any(ast.unparse(d).split("(")[0] in _DATACLASS for d in node.decorator_list):
                found.append(f"{p.relative_to(root)}:{node.lineno} {node.name}")
    return found


def test_every_dataclass_says_what_it_is():
    """A docstring per dataclass: it says what the class holds, and without one `dataclasses` writes
    one at import time from `inspect.signature` (tens of microseconds each, on the way to the first
    request)."""
    assert _undocumented_dataclasses(ROOT / "src" / "codeloop") == []


def test_the_dataclass_docstring_check_sees_a_missing_one(tmp_path):
    (tmp_path / "m.py").write_text('from dataclasses import dataclass\n\n'
                                   '@dataclass(frozen=True)\nclass A:\n    x: int\n\n'
                                   '@dataclass\nclass B:\n    """B."""\n    x: int\n')
    assert _undocumented_dataclasses(tmp_path) == ["m.py:4 A"]
