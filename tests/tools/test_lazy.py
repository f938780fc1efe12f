"""Lazy built-in tools: schemas from the on-disk cache, real tools loaded on first real use."""

import json
import subprocess
import sys

from codeloop.tools.lazy import LazyTool, SchemaCache
from codeloop.tools.registry import builtin_tools


def test_lazy_tools_match_real_ones_and_fill_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    real = {t.name: t.api_schema() for t in builtin_tools()}
    lazy = builtin_tools(lazy=True)
    assert [t.name for t in lazy] == list(real)
    assert {t.name: t.api_schema() for t in lazy} == real
    cache = json.loads((tmp_path / "cache" / "tool-schemas.json").read_text())
    assert cache["schemas"] == real
    # a second process reads schemas from the cache without importing any tool module
    again = builtin_tools(lazy=True)
    assert {t.name: t.api_schema() for t in again} == real
    assert all(t._tool is None for t in again)
    # anything beyond name/schema loads the real tool
    read = next(t for t in again if t.name == "Read")
    assert read.is_read_only(None) is True and read._tool is not None


def test_stale_or_corrupt_cache_is_rebuilt(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"v": 1, "key": "old-version", "schemas": {"Read": {"name": "Read", "stale": True}}}))
    tool = LazyTool("Read", "codeloop.tools.builtin.read", "ReadTool", SchemaCache(path, "new-version"))
    assert "stale" not in tool.api_schema()
    assert json.loads(path.read_text())["key"] == "new-version"
    path.write_text("{not json")
    tool2 = LazyTool("Read", "codeloop.tools.builtin.read", "ReadTool", SchemaCache(path, "new-version"))
    assert tool2.api_schema()["name"] == "Read"


def test_cli_first_request_path_does_not_import_pydantic(tmp_path):
    code = ("import sys; sys.modules['trio'] = None\n"
            "import codeloop.cli.setup, codeloop.cli.print_mode\n"
            "print('pydantic' in sys.modules, any('.builtin.' in m for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_static_facts_match_the_real_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    real = {t.name: t for t in builtin_tools()}
    for lazy in builtin_tools(lazy=True):
        assert lazy.max_result_chars == real[lazy.name].max_result_chars, lazy.name
        assert lazy.should_defer == real[lazy.name].should_defer, lazy.name
        assert lazy.interruptible == real[lazy.name].interruptible, lazy.name
        assert lazy._tool is None   # reading those facts loaded nothing


def test_registry_gates_agree_with_the_tools_is_enabled(tmp_path, monkeypatch):
    from codeloop.tools.base import ToolContext
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    ctxs = []
    for model, flags, agent, runtime in [("claude-opus-4-8", {"end_conversation": True}, None, True),
                                         ("claude-opus-4-7", {"end_conversation": True}, None, False),
                                         ("claude-opus-4-8", {}, "a1", True)]:
        ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, model=model, agent_id=agent)
        ctx.extra["feature_flags"] = flags
        if runtime:
            ctx.spawn_subagent = object()  # the session's capability; only its presence is gated on
        ctxs.append(ctx)
    real = {t.name: t for t in builtin_tools(agent_definitions={})}
    for lazy in builtin_tools(lazy=True, agent_definitions={}):
        for ctx in ctxs:
            assert lazy.is_enabled(ctx) == real[lazy.name].is_enabled(ctx), (lazy.name, ctx.model, ctx.agent_id)
