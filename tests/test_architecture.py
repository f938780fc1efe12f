"""The architecture as a test: layers point one way, and no module takes part in an import cycle.

The contracts live in pyproject.toml (`[tool.importlinter]`); running them here keeps the
README's one test command the whole of CI. grimp reads every import — inside functions and
under TYPE_CHECKING too — so moving an import into a function does not hide it.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp  # with import-linter, in the test extra: a missing one must fail, not skip

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
# Entry points above every layer: the package root's lazy library exports and `python -m`.
ENTRY_POINTS = {"codeloop", "codeloop.__main__"}

LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True, no_logo=True))")


def _graph():
    return grimp.build_graph("codeloop", cache_dir=None)


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    adjacency = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(adjacency):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            children = adjacency[node]
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _lint(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # In a process of its own: import-linter reconfigures logging, which would leak into other tests.
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_layer_contracts_hold():
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_finder_sees_a_cycle():
    class Fake:
        modules = {"a", "b", "c", "d"}

        @staticmethod
        def find_modules_directly_imported_by(m):
            return {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}[m]

    assert _cycles(Fake()) == [["a", "b", "c"]]


def test_every_top_level_module_is_in_a_layer():
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["id"] == "layers"]
    named = {part.strip().strip("()") for layer in layers["layers"] for part in layer.replace("|", ":").split(":")}
    import codeloop

    present = {f"codeloop.{m.name}" for m in pkgutil.iter_modules(codeloop.__path__)}
    assert present - ENTRY_POINTS <= named, sorted(present - ENTRY_POINTS - named)


def test_a_back_pointing_import_inside_a_function_breaks_the_build(tmp_path):
    """The contracts are not decoration: a lower layer naming a higher one, even lazily, fails."""
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    state = tmp_path / "src" / "codeloop" / "loop" / "state.py"
    sneaky = "\n\ndef _sneaky():\n    from codeloop.cli.headless import output  # noqa: F401\n"
    state.write_text(state.read_text() + sneaky)
    run = _lint(tmp_path, {**os.environ, "PYTHONPATH": str(tmp_path / "src")})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "codeloop.loop.state -> codeloop.cli.headless.output" in run.stdout


# -- one way in (issue 24) ----------------------------------------------------------------------------
SRC = ROOT / "src" / "codeloop"
# Where the parsed command line may be seen: the entry point, start-up, and the subcommands' own parsers.
NAMESPACE_ALLOWED = ("cli/main.py", "cli/startup/", "cli/commands/")


def _sources():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), path.read_text(encoding="utf-8")


def test_only_start_up_code_sees_the_command_line():
    """Flags are resolved once into RunOptions; front ends, the session and below never see a Namespace."""
    leaks = [rel for rel, text in _sources()
             if ("argparse" in text or "Namespace" in text) and not rel.startswith(NAMESPACE_ALLOWED)]
    assert leaks == []


def test_no_guessed_flag_defaults():
    """`getattr(args, "flag", default)` guessed at a flag's presence; RunOptions fields are typed instead."""
    guesses = [rel for rel, text in _sources() if "getattr(args" in text or ".args, " in text and "getattr(" in text]
    assert guesses == []


def test_tools_get_typed_capabilities_not_a_dict_of_string_keys():
    from dataclasses import fields

    from codeloop.tools.base import ToolContext

    names = {f.name for f in fields(ToolContext)}
    assert "extra" not in names
    assert {"tool_pool", "policy", "sandbox", "side_provider", "background", "feature_flags"} <= names
    assert [rel for rel, text in _sources() if ".extra[" in text or ".extra.get(" in text] == []


def test_sessions_are_built_only_by_the_assembly():
    """Front ends and input commands never construct a Conversation themselves."""
    builders = [rel for rel, text in _sources() if "Conversation(" in text
                and not rel.startswith(("session/",)) and "class Conversation(" not in text]
    assert builders == []
