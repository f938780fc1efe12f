"""Task lines of `codeloop batch`: parsing, validation and SWE-bench instances.

A task line is one JSON object. Plain tasks carry `id` and `prompt` plus an optional workspace
(`repo` path or git URL with `ref`, or `workdir`), `setup`, `model`, `max_turns`,
`max_budget_usd`, `allowed_tools`, `disallowed_tools`, `permission_mode` and `json_schema`.
SWE-bench instances (`instance_id`, `repo` "owner/name", `base_commit`, `problem_statement`)
are recognised as they come from the dataset and turned into plain tasks. A bad line becomes
one error string naming the file and line; the other lines still load.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal, overload

PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
_SLUG_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@)", re.IGNORECASE)

SWE_PROMPT = """\
You are working in a checkout of the repository {repo} at commit {base_commit}.
Resolve the issue below by editing the source files in the current directory.
Do not commit; your working-tree changes are taken as the patch.

<issue>
{problem_statement}
</issue>
"""


class TaskKind(str, Enum):
    PLAIN = "plain"
    SWEBENCH = "swebench"


class TaskLineError(ValueError):
    """One task line that cannot run; its message is the whole user-facing explanation."""


@dataclass
class TaskDefaults:
    """Batch-wide values a task line may leave out (the CLI flags of `codeloop batch`)."""
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    allowed_tools: list[str] = field(default_factory=list)
    permission_mode: str | None = None
    swe_repos: str | None = None  # folder holding local clones of SWE-bench repos (owner__name)


@dataclass
class TaskSpec:
    """One runnable task: plain data only, so it pickles to a Ray worker unchanged."""
    id: str
    prompt: str
    kind: TaskKind = TaskKind.PLAIN
    repo: str | None = None
    ref: str | None = None
    workdir: str | None = None
    setup: str | None = None
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    permission_mode: str | None = None
    json_schema: str | None = None
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["kind"] = self.kind.value
        return d


@overload
def _str(obj: dict[str, Any], key: str, *, required: Literal[True]) -> str: ...
@overload
def _str(obj: dict[str, Any], key: str, *, required: bool = False) -> str | None: ...
def _str(obj: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise TaskLineError(f'missing "{key}"')
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TaskLineError(f'"{key}" must be a string, not {type(value).__name__}')
    value = str(value)
    if required and not value.strip():
        raise TaskLineError(f'"{key}" is empty')
    return value


def _positive(obj: dict[str, Any], key: str, kind: type) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        ok = ok and float(value).is_integer()
    if not ok or value <= 0:
        raise TaskLineError(f'"{key}" must be a positive {"integer" if kind is int else "number"}, got {value!r}')
    return kind(value)


def _tools(obj: dict[str, Any], key: str) -> list[str] | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskLineError(f'"{key}" must be a list of tool names or a comma-separated string')
    from codeloop.cli.startup.tool_lists import tool_list as _tool_list
    return _tool_list(value) or []


def _resolve_path(value: str, base: Path) -> str:
    """Paths in a tasks file are relative to the file's folder, so the file can move with its repos."""
    if _URL_RE.match(value):
        return value
    return str((base / os.path.expanduser(value)).resolve())


def _swe_repo(slug: str, defaults: TaskDefaults, base: Path) -> str:
    """A local clone when one is at hand (--swe-repos DIR/owner__name or DIR/owner/name), else GitHub."""
    if defaults.swe_repos and _SLUG_RE.match(slug):
        root = Path(defaults.swe_repos)
        for cand in (root / slug.replace("/", "__"), root / slug):
            if cand.is_dir():
                return str(cand.resolve())
    if _SLUG_RE.match(slug) and not (base / slug).exists():
        return f"https://github.com/{slug}.git"
    return _resolve_path(slug, base)


def parse_task(obj: Any, *, base: Path, defaults: TaskDefaults, line: int = 0) -> TaskSpec:
    """One decoded task line → TaskSpec; TaskLineError says what is wrong with it."""
    if not isinstance(obj, dict):
        raise TaskLineError(f"a task line must be a JSON object, not {type(obj).__name__}")
    if "instance_id" in obj and "problem_statement" in obj:
        iid = _str(obj, "instance_id", required=True)
        slug = _str(obj, "repo", required=True)
        commit = _str(obj, "base_commit", required=True)
        problem = _str(obj, "problem_statement", required=True)
        spec = TaskSpec(id=iid, kind=TaskKind.SWEBENCH, repo=_swe_repo(slug, defaults, base), ref=commit,
                        prompt=SWE_PROMPT.format(repo=slug, base_commit=commit, problem_statement=problem))
    else:
        spec = TaskSpec(id=_str(obj, "id", required=True), prompt=_str(obj, "prompt", required=True))
        repo, workdir = _str(obj, "repo"), _str(obj, "workdir")
        if repo and workdir:
            raise TaskLineError('give either "repo" or "workdir", not both')
        spec.repo = _resolve_path(repo, base) if repo else None
        spec.workdir = _resolve_path(workdir, base) if workdir else None
        spec.ref = _str(obj, "ref")
        if spec.ref and not repo:
            raise TaskLineError('"ref" needs a "repo"')
    spec.id = spec.id.strip()
    spec.setup = _str(obj, "setup")
    spec.model = _str(obj, "model") or defaults.model
    spec.max_turns = _positive(obj, "max_turns", int) or defaults.max_turns
    spec.max_budget_usd = _positive(obj, "max_budget_usd", float) or defaults.max_budget_usd
    allowed = _tools(obj, "allowed_tools")
    spec.allowed_tools = list(defaults.allowed_tools) if allowed is None else allowed
    spec.disallowed_tools = _tools(obj, "disallowed_tools") or []
    spec.permission_mode = _str(obj, "permission_mode") or defaults.permission_mode
    if spec.permission_mode is not None and spec.permission_mode not in PERMISSION_MODES:
        raise TaskLineError(f'"permission_mode" must be one of {", ".join(PERMISSION_MODES)}, '
                            f"got {spec.permission_mode!r}")
    schema = obj.get("json_schema")
    if schema is not None:
        if isinstance(schema, dict):
            schema = json.dumps(schema)
        elif not isinstance(schema, str):
            raise TaskLineError('"json_schema" must be a JSON object or a string')
        spec.json_schema = schema
    spec.line = line
    return spec


def load_tasks(path: Path, defaults: TaskDefaults) -> tuple[list[TaskSpec], list[str]]:
    """All good tasks of a JSONL file and one error line per bad one (a duplicate id is bad too)."""
    tasks: list[TaskSpec] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    base = path.resolve().parent
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            try:
                spec = parse_task(obj, base=base, defaults=defaults, line=lineno)
            except TaskLineError as exc:
                errors.append(f"{where}: {exc}")
                continue
            if spec.id in seen:
                errors.append(f"{where}: duplicate id {spec.id!r} (first on line {seen[spec.id]}); skipped")
                continue
            seen[spec.id] = lineno
            tasks.append(spec)
    return tasks, errors
