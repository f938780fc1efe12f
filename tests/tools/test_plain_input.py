"""Plain tool inputs (tools.plain_input): accepted only where pydantic gives the same values, so
the first tool call can skip importing pydantic without changing any outcome."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import BaseModel, Field, field_validator

from codeloop.tools.plain_input import check, spec_of
from codeloop.tools.registry import builtin_tools

# "keep": ExitWorktree's required `action` is an enum, so some sample must be one of its values
SAMPLES = [None, "", "x", "files_with_matches", "content", "keep", 0, 1, -1, 5, 2.0, True, False, [], {}, "5", "true"]


def _candidates(tool) -> list[dict]:
    """Inputs around the tool's schema: each property alone and with the required ones, with
    every sample value, plus an unknown key."""
    schema = tool.api_schema()["input_schema"]
    props, required = list(schema.get("properties", {})), schema.get("required", [])
    base = dict.fromkeys(required, "x")
    out = [{}, dict(base), {**base, "unknown_key": 1}]
    for p in props:
        for v in SAMPLES:
            out.append({**base, p: v})
            out.append({p: v})
    return out


def _pydantic_values(tool, raw: dict):
    """What the pydantic path makes of `raw`: the field values, or None when it refuses."""
    model = tool.input_model
    optional = {n for n, f in model.model_fields.items() if not f.is_required()}
    optional |= {f.alias for n, f in model.model_fields.items() if f.alias and n in optional}
    try:
        inp = model.model_validate({k: v for k, v in raw.items() if not (v is None and k in optional)})
    except Exception:  # noqa: BLE001 — any refusal
        return None
    return inp.model_dump()


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda t: t.name)
def test_a_plain_input_is_exactly_what_pydantic_makes_of_it(tool):
    spec = spec_of(tool.input_model)
    if spec is None:
        pytest.skip(f"{tool.name}'s input needs pydantic")
    spec = json.loads(json.dumps(spec))   # as read back from the cache file
    accepted = 0
    for raw in _candidates(tool):
        plain = check(spec, raw)
        if plain is not None:
            accepted += 1
            assert plain.model_dump() == _pydantic_values(tool, raw), (tool.name, raw)
    assert accepted >= 1, tool.name


def test_the_common_tools_have_plain_inputs():
    plain = {t.name for t in builtin_tools() if spec_of(t.input_model) is not None}
    assert {"Bash", "Read", "Glob", "Grep", "Write", "Edit"} <= plain


def test_doubtful_inputs_go_to_pydantic():
    spec = spec_of(next(t for t in builtin_tools() if t.name == "Bash").input_model)
    assert check(spec, {"command": "ls", "timeout": 5}).timeout == 5
    assert check(spec, {"command": "ls", "timeout": None}).timeout is None   # None: the default
    for raw in ({"command": ""}, {"command": "ls", "timeout": "5"}, {"command": "ls", "timeout": 0},
                {"command": "ls", "timeout": True}, {"command": "ls", "extra": 1}, {}, ["ls"]):
        assert check(spec, raw) is None, raw


def test_aliases_and_literals():
    grep = next(t for t in builtin_tools() if t.name == "Grep")
    spec = spec_of(grep.input_model)
    inp = check(spec, {"pattern": "x", "-i": True, "output_mode": "content"})
    assert inp.case_insensitive is True and inp.output_mode == "content"
    assert inp.model_dump(by_alias=True, exclude_none=True) == {"pattern": "x", "-i": True, "output_mode": "content"}
    assert check(spec, {"pattern": "x", "output_mode": "lines"}) is None
    assert check(spec, {"pattern": "x", "-i": True, "case_insensitive": True}) is None   # both spellings


def test_models_with_validators_or_rich_types_are_not_plain():
    class Validated(BaseModel):
        a: str

        @field_validator("a")
        @classmethod
        def upper(cls, v: str) -> str:
            return v.upper()

    class Listy(BaseModel):
        a: list[str] = Field(default_factory=list)

    class Floaty(BaseModel):
        a: float

    assert spec_of(Validated) is None and spec_of(Listy) is None and spec_of(Floaty) is None


def test_lazy_bash_parses_and_runs_a_plain_command_without_pydantic(tmp_path):
    env_dir = tmp_path / "cfg"
    code = f"""
import asyncio, os, sys
os.environ["CODELOOP_CONFIG_DIR"] = {str(env_dir)!r}
sys.modules["trio"] = None
from pathlib import Path
from codeloop.tools.base import ToolContext
from codeloop.tools.registry import builtin_tools, find_tool, parse_tool_input
tools = builtin_tools(lazy=True)
if sys.argv[1] == "fill":
    [t.api_schema() for t in tools]   # the first ever run builds the cache (with pydantic)
    raise SystemExit(0)
bash = find_tool(tools, "Bash")
inp = parse_tool_input(bash, {{"command": "echo hi"}})
safe = bash.is_concurrency_safe(inp)
res = asyncio.run(bash.call(inp, ToolContext(cwd=Path({str(tmp_path)!r}), project_dir=Path({str(tmp_path)!r}))))
print("pydantic" in sys.modules, safe, res.content.strip())
try:
    parse_tool_input(bash, {{"command": ""}})    # not plain: pydantic's own error
except Exception as exc:
    print(type(exc).__name__, "pydantic" in sys.modules)
"""
    subprocess.run([sys.executable, "-c", code, "fill"], check=True)
    out = subprocess.run([sys.executable, "-c", code, "run"], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["False True hi", "ToolError True"]
