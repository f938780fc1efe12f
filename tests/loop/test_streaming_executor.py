"""StreamingToolExecutor: parallel safe tools, exclusive unsafe ones, Bash sibling cascade,
abort and discard — with small sleeping test tools and the real Bash tool.

Ordering is asserted from the event log the test tools write (start/end in the order they
happened), never from wall-clock thresholds; asyncio.wait_for only guards against hangs.
"""

import asyncio
from typing import ClassVar

from pydantic import BaseModel

from codeloop.loop.streaming import StreamingToolExecutor, ToolUpdate
from codeloop.messages import INTERRUPT_MESSAGE_FOR_TOOL_USE
from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.read import ReadTool

GUARD_S = 15


class ProbeInput(BaseModel):
    label: str
    delay: float = 0.0
    fail: bool = False


class Probe(Tool):
    """Concurrency-safe: sleeps `delay`, logging ("start"/"end", label) around the sleep."""
    name: ClassVar[str] = "Probe"
    description: ClassVar[str] = "test tool"
    input_model: ClassVar[type[BaseModel]] = ProbeInput
    safe: ClassVar[bool] = True

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return self.safe

    async def call(self, inp: ProbeInput, ctx: ToolContext) -> ToolResult:
        self.log.append(("start", inp.label))
        await asyncio.sleep(inp.delay)
        self.log.append(("end", inp.label))
        if inp.fail:
            raise ToolError(f"{inp.label} failed")
        return ToolResult(f"done {inp.label}")


class Mutate(Probe):
    """The same, but not concurrency-safe (like Edit/Write)."""
    name: ClassVar[str] = "Mutate"
    safe: ClassVar[bool] = False


class ParallelBash(BashTool):
    """The real Bash tool, but concurrency-safe, so a sibling Bash can be running when one fails."""

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True


async def allow(tool, inp, block, ctx):
    return PermissionDecision(PermissionBehavior.ALLOW)


_ids = iter(range(10_000))


def use(name: str, **inp) -> dict:
    return {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": inp}


def make(tmp_path, log, *extra: Tool, can_use_tool=allow, ctx=None, **kw) -> StreamingToolExecutor:
    tools = [Probe(log), Mutate(log), *extra]
    ctx = ctx or ToolContext(cwd=tmp_path, project_dir=tmp_path)
    return StreamingToolExecutor(tools, can_use_tool, ctx, **kw)


async def remaining(ex: StreamingToolExecutor) -> list[ToolUpdate]:
    async def drain():
        return [u async for u in ex.get_remaining_results()]
    return await asyncio.wait_for(drain(), GUARD_S)


def by_id(updates: list[ToolUpdate]) -> dict[str, ToolUpdate]:
    assert len({u.tool_use_id for u in updates}) == len(updates), "a tool was answered twice"
    return {u.tool_use_id: u for u in updates}


def result(u: ToolUpdate) -> dict:
    [block] = u.message.content
    assert block["type"] == "tool_result" and block["tool_use_id"] == u.tool_use_id
    return block


def assert_exclusive(log, label):
    """Nothing else starts or ends while `label` runs."""
    i, j = log.index(("start", label)), log.index(("end", label))
    assert j == i + 1, f"{label} overlapped with {log[i + 1:j]}"


async def test_safe_tools_added_one_by_one_run_in_parallel(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    for label in "abc":
        ex.add_tool(use("Probe", label=label, delay=1.0))
        await asyncio.sleep(0.01)  # the model still streaming the next block
    updates = await remaining(ex)
    starts = [i for i, (ev, _) in enumerate(log) if ev == "start"]
    first_end = min(i for i, (ev, _) in enumerate(log) if ev == "end")
    assert len(starts) == 3 and max(starts) < first_end
    assert sorted(result(u)["content"] for u in updates) == ["done a", "done b", "done c"]


async def test_tool_starts_while_the_stream_is_still_going(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    ex.add_tool(use("Probe", label="early", delay=0.3))
    await asyncio.sleep(0.05)
    assert log == [("start", "early")]
    assert ex.get_completed_results() == []
    [u] = await remaining(ex)
    assert result(u)["content"] == "done early" and log[-1] == ("end", "early")


async def test_unsafe_tools_run_alone_and_in_add_order(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    for name, label in [("Probe", "a"), ("Mutate", "m1"), ("Probe", "b"), ("Probe", "c"),
                        ("Mutate", "m2"), ("Probe", "d")]:
        ex.add_tool(use(name, label=label, delay=0.1))
    updates = await remaining(ex)
    assert len(updates) == 6
    assert_exclusive(log, "m1")
    assert_exclusive(log, "m2")
    assert log.index(("start", "m1")) < log.index(("start", "m2"))
    # b and c were free to share the gap between m1 and m2.
    assert log.index(("start", "b")) < log.index(("end", "c"))
    assert log.index(("start", "c")) < log.index(("end", "b"))


async def test_safe_tool_does_not_jump_a_waiting_unsafe_tool(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    ex.add_tool(use("Probe", label="running", delay=0.2))
    ex.add_tool(use("Mutate", label="waiting", delay=0.05))
    ex.add_tool(use("Probe", label="later", delay=0.05))
    await asyncio.sleep(0.05)
    assert log == [("start", "running")]  # "later" could run beside "running", but must wait
    await remaining(ex)
    assert log == [("start", "running"), ("end", "running"), ("start", "waiting"), ("end", "waiting"),
                   ("start", "later"), ("end", "later")]


async def test_completed_results_are_handed_out_once(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    ids = []
    for label, delay in [("fast", 0.01), ("slow", 0.2)]:
        b = use("Probe", label=label, delay=delay)
        ids.append(b["id"])
        ex.add_tool(b)

    async def poll():
        got = []
        while len(got) < 2:
            got += ex.get_completed_results()
            await asyncio.sleep(0.01)
        return got

    got = await asyncio.wait_for(poll(), GUARD_S)
    assert [u.tool_use_id for u in got] == ids  # completion order; fast first
    assert ex.get_completed_results() == []
    assert await remaining(ex) == []


async def test_bash_failure_cancels_running_and_queued_siblings(tmp_path):
    log: list = []
    ex = make(tmp_path, log, ParallelBash())
    marker, pidfile = tmp_path / "marker", tmp_path / "pid"
    sleeper = use("Bash", command=f"echo $$ > {pidfile}; sleep 0.5; touch {marker}")
    probe = use("Probe", label="running", delay=5)
    failing_cmd = f"while [ ! -f {pidfile} ]; do sleep 0.01; done; echo boom; exit 3"
    failing = use("Bash", command=failing_cmd)
    queued = use("Mutate", label="queued")
    for b in (sleeper, probe, failing, queued):
        ex.add_tool(b)

    async def until_failed():
        got = []
        while not any(u.tool_use_id == failing["id"] for u in got):
            got += ex.get_completed_results()
            await asyncio.sleep(0.01)
        return got

    updates = await asyncio.wait_for(until_failed(), GUARD_S)
    late = use("Probe", label="late")
    ex.add_tool(late)  # added after the failure: answered at once
    updates += ex.get_completed_results()
    updates += await remaining(ex)

    results = by_id(updates)
    assert set(results) == {b["id"] for b in (sleeper, probe, failing, queued, late)}
    bad = result(results[failing["id"]])
    assert bad.get("is_error") and "boom" in bad["content"] and "Exit code 3" in bad["content"]
    cancelled = (f"<tool_use_error>Cancelled: parallel tool call Bash({failing_cmd[:40]}…) errored"
                 "</tool_use_error>")
    for b in (sleeper, probe, queued, late):
        assert result(results[b["id"]]) == {"type": "tool_result", "tool_use_id": b["id"],
                                             "content": cancelled, "is_error": True}
    assert log == [("start", "running")]  # the probe was cut off, the Mutate and late Probe never ran
    await asyncio.sleep(1.0)  # well past the sleeper's `sleep 0.5`
    assert not marker.exists()  # its process group was killed


async def test_read_error_does_not_cascade(tmp_path):
    log: list = []
    ex = make(tmp_path, log, ReadTool())
    probe = use("Probe", label="sibling", delay=0.2)
    read = use("Read", file_path=str(tmp_path / "missing.txt"))
    failing_probe = use("Probe", label="boom", fail=True)
    ex.add_tool(probe)
    ex.add_tool(read)
    ex.add_tool(failing_probe)
    after = use("Mutate", label="after")
    ex.add_tool(after)
    results = by_id(await remaining(ex))
    assert result(results[read["id"]]).get("is_error")
    assert result(results[failing_probe["id"]]).get("is_error")
    assert result(results[probe["id"]]) == {"type": "tool_result", "tool_use_id": probe["id"],
                                            "content": "done sibling"}
    assert result(results[after["id"]])["content"] == "done after"


async def test_abort_interrupts_queued_tools_and_yields_killed_bash_result(tmp_path):
    log: list = []
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path)
    ex = make(tmp_path, log, BashTool(), ctx=ctx)
    marker, pidfile = tmp_path / "marker", tmp_path / "pid"
    bash = use("Bash", command=f"echo $$ > {pidfile}; sleep 5; touch {marker}")
    queued = [use("Probe", label="p"), use("Mutate", label="m")]
    for b in (bash, *queued):
        ex.add_tool(b)
    collector = asyncio.create_task(remaining(ex))

    async def until_started():
        while not pidfile.exists():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(until_started(), GUARD_S)
    ctx.abort.abort()
    results = by_id(await collector)

    killed = result(results[bash["id"]])
    assert killed.get("is_error") and "Command was aborted" in killed["content"]
    assert results[bash["id"]].message.tool_use_result["interrupted"] is True
    for b in queued:
        assert result(results[b["id"]]) == {"type": "tool_result", "tool_use_id": b["id"],
                                            "content": INTERRUPT_MESSAGE_FOR_TOOL_USE, "is_error": True}
    assert log == []  # queued tools never started

    late = use("Probe", label="late")
    ex.add_tool(late)
    [u] = ex.get_completed_results()
    assert u.tool_use_id == late["id"] and result(u)["content"] == INTERRUPT_MESSAGE_FOR_TOOL_USE
    assert log == [] and not marker.exists()


async def test_discard_cancels_running_tools_and_yields_nothing(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    ex.add_tool(use("Probe", label="instant"))
    ex.add_tool(use("Probe", label="slow", delay=0.3))
    ex.add_tool(use("Mutate", label="queued"))
    await asyncio.sleep(0.05)  # "instant" has finished but was never collected
    assert ("end", "instant") in log
    ex.discard()
    assert ex.get_completed_results() == []
    assert await remaining(ex) == []
    ex.add_tool(use("Probe", label="after"))
    await asyncio.sleep(0.4)  # past the point where "slow" would have ended
    assert ex.get_completed_results() == [] and await remaining(ex) == []
    assert ("end", "slow") not in log and ("start", "queued") not in log and ("start", "after") not in log


async def test_every_tool_gets_exactly_one_result(tmp_path):
    log: list = []
    ex = make(tmp_path, log)
    blocks = [use("Probe", label="ok", delay=0.05), use("NoSuchTool"), use("Probe", label="x", delay="slow"),
              use("Probe", label="bad-json"), use("Probe", label="err", fail=True), use("Mutate", label="m"),
              use("Probe", label="tail")]
    for b in blocks:
        ex.add_tool(b, invalid_json='{"label": ' if b["input"].get("label") == "bad-json" else None)
    results = by_id(await remaining(ex))
    assert set(results) == {b["id"] for b in blocks}
    errors = {tid for tid, u in results.items() if result(u).get("is_error")}
    assert errors == {blocks[i]["id"] for i in (1, 2, 3, 4)}
    assert_exclusive(log, "m")


async def test_denied_and_input_are_copied_and_crashes_become_error_results(tmp_path):
    async def deny(tool, inp, block, ctx):
        return PermissionDecision(PermissionBehavior.DENY, "nope")

    log: list = []
    ex = make(tmp_path, log, can_use_tool=deny)
    b = use("Mutate", label="denied")
    ex.add_tool(b)
    [u] = await remaining(ex)
    assert u.denied and u.tool_name == "Mutate" and u.tool_input == {"label": "denied"}
    assert result(u)["content"] == "<tool_use_error>nope</tool_use_error>" and log == []

    async def crash(*args, **kw):
        raise RuntimeError("executor bug")

    ex = make(tmp_path, log, run=crash)
    b = use("Probe", label="crash")
    ex.add_tool(b)
    [u] = await remaining(ex)
    assert not u.denied and u.tool_input == {"label": "crash"}
    assert result(u)["is_error"] and "RuntimeError: executor bug" in result(u)["content"]


class Skim(Probe):
    """Like a Read or a Grep: declares that cancelling it loses nothing."""
    name: ClassVar[str] = "Skim"
    interruptible: ClassVar[bool] = True


async def _abort_while_running(tmp_path, reason):
    from codeloop.abort import AbortController

    log: list = []
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, abort=AbortController())
    ex = make(tmp_path, log, Skim(log), ctx=ctx)
    skim, probe = use("Skim", label="skim", delay=0.6), use("Probe", label="probe", delay=0.6)
    for b in (skim, probe):
        ex.add_tool(b)
    while ("start", "probe") not in log or ("start", "skim") not in log:
        await asyncio.sleep(0.01)
    ctx.abort.abort(reason)
    return log, by_id(await remaining(ex)), skim, probe


async def test_typing_cancels_running_interruptible_tools_only(tmp_path):
    from codeloop.abort import AbortReason

    log, results, skim, probe = await _abort_while_running(tmp_path, AbortReason.INTERRUPT)
    assert result(results[skim["id"]])["content"] == INTERRUPT_MESSAGE_FOR_TOOL_USE
    assert ("end", "skim") not in log                      # really cancelled, not waited for
    assert result(results[probe["id"]])["content"] == "done probe"   # the other one finished


async def test_other_aborts_let_interruptible_tools_finish(tmp_path):
    from codeloop.abort import AbortReason

    log, results, skim, probe = await _abort_while_running(tmp_path, AbortReason.USER)
    assert result(results[skim["id"]])["content"] == "done skim" and ("end", "skim") in log
