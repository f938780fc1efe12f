"""What `/init` asks (`INIT_PROMPT`) and finds in the repository before asking the model for a CLAUDE.md: the layout and
the build/test/lint commands its build files declare (pyproject.toml, package.json, Makefile,
Cargo.toml, go.mod, tox.ini, noxfile.py) — facts the model would otherwise have to dig for, so
the file it writes names real commands. Build files that lead out of the repository (a link to a
secret) are not read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", ".tox", ".mypy_cache",
             ".pytest_cache", "target", ".claude", ".idea", ".vscode"}
MAX_TOP = 25

INIT_PROMPT = """Please analyze this codebase and create a CLAUDE.md file in the repository root. It will be \
given to future instances of the coding agent that work in this repository.

Include:
1. The commands used to build, lint and test — including how to run a single test.
2. The high-level architecture: the big-picture structure that takes reading several files to understand.

Survey the repository first (README, build files, the main source folders, existing CLAUDE.md or \
.cursorrules / .github/copilot-instructions.md). Keep it concise; do not list every file or repeat \
generic advice. If a CLAUDE.md already exists, suggest improvements to it instead. Start the file with:

# CLAUDE.md

This file provides guidance to coding agents when working with code in this repository."""


def _read(path: Path, limit: int = 200_000) -> str:
    # a build file is the repository's: read only if it stays inside it, is a regular file (a FIFO
    # named Makefile must not hang /init) and within the bound
    from codeloop.permissions.project_files import ProjectFiles

    return ProjectFiles(path.parent).read_text(path, "build file", limit=limit, warn_cut=False) or ""


def commands_found(root: Path) -> list[str]:
    """`command — where it comes from` lines, in a useful order."""
    out: list[str] = []
    py = _read(root / "pyproject.toml")
    if py:
        if "pytest" in py or (root / "tests").is_dir():
            out.append("python -m pytest -q  (one test: python -m pytest tests/test_x.py::test_name)"
                       "  — pyproject.toml")
        if "[tool.ruff" in py or "ruff" in py:
            out.append("ruff check .  — pyproject.toml (ruff)")
        if "[tool.mypy" in py:
            out.append("mypy .  — pyproject.toml (mypy)")
        if "[project.optional-dependencies]" in py:
            extras = re.findall(r"^(\w[\w-]*)\s*=\s*\[", py.split("[project.optional-dependencies]", 1)[1], re.M)
            if extras:
                out.append(f"pip install -e '.[{','.join(extras[:3])}]'  — pyproject.toml extras")
    pkg = _read(root / "package.json")
    if pkg:
        try:
            scripts = json.loads(pkg).get("scripts") or {}
        except ValueError:
            scripts = {}
        runner = "pnpm" if (root / "pnpm-lock.yaml").exists() else "yarn" if (root / "yarn.lock").exists() else "npm"
        for name in ("build", "test", "lint", "dev", "start", "typecheck", "format"):
            if name in scripts:
                out.append(f"{runner} run {name}  ({scripts[name]}) — package.json")
    make = _read(root / "Makefile")
    targets = [t for t in re.findall(r"^([A-Za-z][\w-]*):", make, re.M) if t != "PHONY"]
    for t in dict.fromkeys(targets):
        if t in ("all", "build", "test", "check", "lint", "install", "fmt", "format", "dev", "run", "clean"):
            out.append(f"make {t}  — Makefile")
    if (root / "Cargo.toml").exists():
        out += ["cargo build  — Cargo.toml", "cargo test  — Cargo.toml", "cargo clippy  — Cargo.toml"]
    if (root / "go.mod").exists():
        out += ["go build ./...  — go.mod", "go test ./...  — go.mod"]
    if (root / "tox.ini").exists():
        out.append("tox  — tox.ini")
    if (root / "noxfile.py").exists():
        out.append("nox  — noxfile.py")
    return out


def layout(root: Path) -> list[str]:
    try:
        entries = sorted(root.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return []
    out = []
    for p in entries:
        if p.name in SKIP_DIRS or (p.name.startswith(".") and p.name not in (".github",)):
            continue
        if p.is_dir():
            try:
                n = sum(1 for _ in p.iterdir())
            except OSError:
                n = 0
            out.append(f"{p.name}/  ({n} entries)")
        else:
            out.append(p.name)
        if len(out) >= MAX_TOP:
            out.append("…")
            break
    return out


def existing_guidance(root: Path) -> list[str]:
    names = ["CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md", "README.md",
             "CONTRIBUTING.md"]
    return [n for n in names if (root / n).is_file()]


def survey(root: Path) -> str:
    """A short facts section appended to the /init prompt."""
    parts = ["Facts gathered from the repository (verify them; use what is useful):"]
    cmds = commands_found(root)
    parts.append("Build/test/lint commands declared:\n" + ("\n".join(f"- {c}" for c in cmds) if cmds
                                                          else "- (none found in build files)"))
    top = layout(root)
    if top:
        parts.append("Top-level layout:\n" + "\n".join(f"- {e}" for e in top))
    docs = existing_guidance(root)
    if docs:
        parts.append("Existing docs to read first: " + ", ".join(docs))
    return "\n\n".join(parts)
