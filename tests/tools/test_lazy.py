"""Lazy built-in tools: schemas from the on-disk cache, real tools loaded on first real use."""

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_schema_cache_keys_cover_each_tool_and_its_input_module(tmp_path, monkeypatch):
    """The built-ins' key names every tool's source and every `*_input.py` beside one (an edited
    input model must not be served a stale schema); the Agent tool's key is that key, task.py's
    and the agent listing."""
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    folder = Path(builtin_tools.__code__.co_filename).parent / "builtin"
    tools = builtin_tools(lazy=True, agent_definitions={})
    key = next(t for t in tools if t.name == "Bash")._cache.key
    parts = {p.split(":")[0] for p in key.split("|")[1:]}
    inputs = {f.name for f in folder.glob("*_input.py")}
    assert inputs and inputs <= parts and {"bash.py", "read.py", "edit.py"} <= parts
    for name in inputs:   # each part is that file's size and modification time
        st = (folder / name).stat()
        assert f"{name}:{st.st_size}:{st.st_mtime_ns}" in key.split("|")
    agent_key = next(t for t in tools if t.name == "Agent")._cache.key
    task = (folder / "task.py").stat()
    assert agent_key.startswith(key + f"|task.py:{task.st_size}:{task.st_mtime_ns}|")


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
            "import codeloop.cli.startup.options, codeloop.session.assembly, codeloop.cli.headless.print_mode\n"
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
        ctx.feature_flags = flags
        if runtime:
            ctx.spawn_subagent = object()  # the session's capability; only its presence is gated on
        ctxs.append(ctx)
    real = {t.name: t for t in builtin_tools(agent_definitions={})}
    for lazy in builtin_tools(lazy=True, agent_definitions={}):
        for ctx in ctxs:
            assert lazy.is_enabled(ctx) == real[lazy.name].is_enabled(ctx), (lazy.name, ctx.model, ctx.agent_id)


def _join_warm_thread() -> None:
    import threading

    for t in threading.enumerate():
        if t.name == "codeloop-warm":
            t.join(60)


def test_warm_up_loads_the_common_tools_once_while_the_model_thinks(tmp_path, monkeypatch):
    from codeloop.tools import lazy as lazy_mod

    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    monkeypatch.setitem(lazy_mod._warm, "state", "idle")
    tools = builtin_tools(lazy=True)
    arm = lazy_mod.warm_later(tools, lambda: True)   # no tool call yet: the model is thinking
    assert arm is not None
    arm()
    _join_warm_thread()
    loaded = {t.name for t in tools if t._tool is not None}
    assert loaded == set(lazy_mod.WARM_FIRST)        # the rarely used tools stay unloaded
    assert lazy_mod.warm_later(builtin_tools(lazy=True), lambda: True) is None   # once per process
    bash = next(t for t in tools if t.name == "Bash")
    real = bash._tool
    assert bash.real is real                         # the loop then uses the warmed instance


def test_warm_up_also_loads_what_the_first_bash_check_needs(tmp_path):
    import os
    import subprocess
    import sys

    from codeloop.tools import lazy as lazy_mod

    code = ("import sys, threading\n"
            "from codeloop.tools import lazy\n"
            "from codeloop.tools.registry import builtin_tools\n"
            "before = set(sys.modules)\n"
            "lazy.warm_later(builtin_tools(lazy=True), lambda: True)()\n"
            "[t.join(60) for t in threading.enumerate() if t.name == 'codeloop-warm']\n"
            "print(sorted(m for m in lazy.WARM_MODULES if m not in before and m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CODELOOP_CONFIG_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr(sorted(lazy_mod.WARM_MODULES))   # none loaded before, every one after


def test_warm_up_stands_down_when_a_tool_call_already_arrived(tmp_path, monkeypatch):
    from codeloop.tools import lazy as lazy_mod

    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    monkeypatch.setitem(lazy_mod._warm, "state", "idle")
    monkeypatch.setattr(lazy_mod, "WARM_DELAY_S", 0.0)
    tools = builtin_tools(lazy=True)
    arm = lazy_mod.warm_later(tools, lambda: False)  # the answer (a tool call) is already here
    assert arm is not None
    arm()
    _join_warm_thread()
    assert all(t._tool is None for t in tools)       # imports would only compete with the tool call
    assert lazy_mod.warm_later(tools, lambda: True) is not None   # the next request may warm


def test_streaming_executor_arms_the_warm_up_for_when_the_request_is_out(tmp_path, monkeypatch):
    from codeloop.tools import lazy as lazy_mod
    from codeloop.loop.streaming import StreamingToolExecutor
    from codeloop.providers import transport

    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    armed, fired = [], []
    monkeypatch.setattr(lazy_mod, "warm_later",
                        lambda tools, waiting: armed.append(([t.name for t in tools], waiting()))
                        or (lambda: fired.append("warm")))
    monkeypatch.setattr(transport, "_sent_hooks", [])
    tools = builtin_tools(lazy=True)
    StreamingToolExecutor(tools, None, None)  # type: ignore[arg-type]
    assert armed == [([t.name for t in tools], True)]
    assert fired == []
    transport._request_sent()   # open_stream calls it once the response headers are in
    transport._request_sent()
    assert fired == ["warm"] and transport._sent_hooks == []   # once


def test_pydantic_plugin_scan_is_skipped_unless_configured(monkeypatch):
    from pydantic.plugin import _loader

    from codeloop.tools.lazy import skip_pydantic_plugin_scan

    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(_loader, "_plugins", None)
    skip_pydantic_plugin_scan()
    assert _loader._plugins == {}
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ   # commands the tools run keep their plugins
    monkeypatch.setattr(_loader, "_plugins", None)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some_plugin")   # the user's choice: pydantic decides
    skip_pydantic_plugin_scan()
    assert _loader._plugins is None


async def test_on_a_running_loop_the_request_path_starts_no_thread(tmp_path, monkeypatch):
    """The delay is the loop's timer: arming starts nothing; a tool call that arrives within the
    delay means no thread ever; a model still thinking after it gets the warm-up thread."""
    import asyncio
    import threading

    from codeloop.tools import lazy as lazy_mod

    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path))
    monkeypatch.setattr(lazy_mod, "WARM_DELAY_S", 0.01)
    started: list[str] = []
    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), real_start(self))[1])

    async def fired() -> None:   # the loop's timer has run: the state left "armed"
        while lazy_mod._warm["state"] == "armed":
            await asyncio.sleep(0.005)

    monkeypatch.setitem(lazy_mod._warm, "state", "idle")
    call_here = [False]
    arm = lazy_mod.warm_later(builtin_tools(lazy=True), lambda: not call_here[0])
    assert arm is not None
    arm()
    assert started == [] and lazy_mod._warm["state"] == "armed"
    call_here[0] = True                      # the answer (a tool call) came within the delay
    await asyncio.wait_for(fired(), 60)
    assert started == [] and lazy_mod._warm["state"] == "idle"

    tools = builtin_tools(lazy=True)
    arm = lazy_mod.warm_later(tools, lambda: True)   # the next request: the model thinks
    assert arm is not None
    arm()
    assert started == []
    await asyncio.wait_for(fired(), 60)
    assert started == ["codeloop-warm"]
    _join_warm_thread()
    assert {t.name for t in tools if t._tool is not None} == set(lazy_mod.WARM_FIRST)
