"""The Ray backend: each batch task is a Ray task running the same `runner.run_task`.

`pip install 'codeloop[ray]'`. Without --ray-address a local Ray instance is started (small
object store: results are a few kB; services on loopback only); with it, the driver joins that
cluster, and every node must have codeloop installed. Each task asks Ray for its CPU and memory
share and is retried by Ray when its worker process or node is lost (max_retries); results come
back as they finish (`ray.wait`). The interrupt flag, the rate-limit backoff and the spend
ledger live in a small actor that workers poll and bump, so a 429 seen on one node slows new task
starts everywhere, and the live cost of tasks on every node counts against --max-total-usd.

Where a task's files go: on a local instance, the driver's batch folder (same machine); on a
cluster, the --shared-dir when given, else a temp folder on the node that runs it. Either way the
result, diff, transcript and stderr log come back through Ray's object store in the task's
return value and the driver writes them under its batch folder; a task retried on another node
after its node was lost returns one result, so the results file gets one line for it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Any

from codeloop.cli.commands.batch.budget import Ledger
from codeloop.cli.commands.batch.local import lost_record
from codeloop.cli.commands.batch.resume import ResumePlan
from codeloop.cli.commands.batch.runner import RunContext
from codeloop.cli.commands.batch.tasks import TaskSpec

LOCAL_OBJECT_STORE_MB = 128
LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_STATE_CACHE_S = 0.5
HEAD_RESOURCE = "node:__internal_head__"  # a resource only the head node has
# What a worker's loop needs from the driver's environment (model endpoint, keys, config dir).
FORWARD_ENV_PREFIXES = ("ANTHROPIC_", "CODELOOP_", "OPENAI_", "OPENROUTER_", "OLLAMA_", "AWS_", "CLAUDE_")


class RayMissing(RuntimeError):
    pass


def _ray():
    try:
        import ray
    except ImportError:
        raise RayMissing("the ray backend needs Ray, which is not installed: pip install 'codeloop[ray]'") from None
    return ray


class _ControlActor:
    """Held by one actor: the batch's interrupt flag, backoff deadline (wall clock) and ledger."""

    def __init__(self, max_total_usd: float | None = None) -> None:
        self.stop, self.until = False, 0.0
        self.ledger = Ledger(max_total_usd)

    def spend(self, key: str, usd: float) -> None:
        self.ledger.spend(key, usd)

    def backoff(self, seconds: float) -> None:
        self.until = max(self.until, time.time() + seconds)

    def interrupt(self) -> None:
        self.stop = True

    def state(self) -> tuple[bool, float, bool, float]:
        return self.stop, self.until, self.ledger.reached, self.ledger.total()


class RayWorkerControl:
    """watch.Control on a Ray worker: polls the actor at most twice a second."""

    def __init__(self, actor) -> None:
        self.actor = actor
        self._stop = self._over = False
        self._checked = 0.0

    def _refresh(self) -> None:
        now = time.monotonic()
        if not (self._stop or self._over) and now - self._checked >= _STATE_CACHE_S:
            self._checked = now
            try:
                self._stop, _, self._over, _ = _ray().get(self.actor.state.remote(), timeout=10)
            except Exception:  # the actor is gone with the driver: nobody to report to, stop
                self._stop = True

    def interrupted(self) -> bool:
        self._refresh()
        return self._stop

    def over_budget(self) -> bool:
        self._refresh()
        return self._over

    def backoff(self, seconds: float) -> None:
        self.actor.backoff.remote(seconds)

    def spend(self, key: str, usd: float) -> None:
        self.actor.spend.remote(key, usd)
        self._checked = 0.0  # this cost may be the one that crosses the line: look at once


def _cpu_s() -> float:
    import resource
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _remote_run(spec: TaskSpec, ctx: RunContext, actor, resume: ResumePlan | None) -> dict[str, Any]:
    from codeloop.cli.commands.batch.runner import run_task
    try:
        node = _ray().get_runtime_context().get_node_id()
    except Exception:
        node = None
    cpu0 = _cpu_s()
    rec = run_task(spec, ctx, RayWorkerControl(actor), resume, node)
    # a Ray worker runs one task at a time: its CPU (and its children's: the loop, git) is this task's
    rec["cpu_ms"] = int((_cpu_s() - cpu0) * 1000)
    return rec


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith(FORWARD_ENV_PREFIXES)}


class RayBackend:
    name = "ray"

    def __init__(self, ctx: RunContext, workers: int, *, address: str | None, task_cpus: float,
                 task_memory_mb: int, max_retries: int, max_total_usd: float | None = None,
                 shared_dir: str | None = None) -> None:
        address = address or os.environ.get("RAY_ADDRESS") or None
        if not address:
            # A local instance serves this machine only: keep it on loopback. On Linux Ray binds its
            # services to the host's routable address unless told it is not a cluster (read at import).
            os.environ.setdefault(LOOPBACK_ONLY_ENV, "0")
        ray = _ray()
        self._ray = ray
        common = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True,
                  "configure_logging": False}
        if address:
            ray.init(address=address, **common)
        else:
            ray.init(num_cpus=max(os.cpu_count() or 1, math.ceil(workers * task_cpus)),
                     object_store_memory=LOCAL_OBJECT_STORE_MB * 2**20, **common)
        ctx.env = {**forwarded_env(), **ctx.env}
        # a local instance shares this machine's disk; on a cluster, a node's own temp folder
        ctx.work_dir = shared_dir or (ctx.work_dir if not address else None)
        self.ctx = ctx
        # the control actor lives on the head node (the cluster ends with it anyway): losing a worker
        # node must not lose the batch's state, or tasks elsewhere would take it for a stop
        self._actor = ray.remote(num_cpus=0, resources={HEAD_RESOURCE: 0.001})(_ControlActor).remote(max_total_usd)
        self._task = ray.remote(num_cpus=task_cpus, memory=task_memory_mb * 2**20, max_retries=max_retries,
                                retry_exceptions=False)(_remote_run)
        self.max_retries = max_retries
        self._pending: dict[Any, TaskSpec] = {}
        self._state: tuple[bool, float, bool, float] = (False, 0.0, False, 0.0)
        self._state_at = 0.0

    def submit(self, spec: TaskSpec, resume: ResumePlan | None = None) -> None:
        self._pending[self._task.remote(spec, self.ctx, self._actor, resume)] = spec

    def running(self) -> int:
        return len(self._pending)

    def poll(self, timeout: float) -> list[tuple[TaskSpec, dict[str, Any]]]:
        if not self._pending:
            time.sleep(timeout)
            return []
        ray = self._ray
        refs = list(self._pending)
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:  # sweep whatever else finished meanwhile, without waiting
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        out = []
        for ref in ready:
            spec = self._pending.pop(ref)
            try:
                out.append((spec, ray.get(ref)))
            except Exception as exc:  # worker or node lost beyond max_retries, or the task was killed
                out.append((spec, lost_record(spec, f"Ray task failed after {self.max_retries} retries: "
                                                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")))
        return out

    def _actor_state(self) -> tuple[bool, float, bool, float]:
        now = time.monotonic()
        if now - self._state_at >= 0.5:
            self._state_at = now
            try:
                self._state = self._ray.get(self._actor.state.remote(), timeout=10)
            except Exception:
                pass
        return self._state

    def interrupt(self) -> None:
        self._ray.get(self._actor.interrupt.remote())
        self._state_at = 0.0

    def backoff_until(self) -> float:
        return self._actor_state()[1]

    def budget(self) -> tuple[bool, float]:
        """Whether the batch's budget is reached, and what this run has spent so far."""
        state = self._actor_state()
        return state[2], state[3]

    def close(self) -> None:
        try:
            self._ray.shutdown()
        except Exception:
            pass
