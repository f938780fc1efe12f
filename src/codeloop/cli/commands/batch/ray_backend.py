"""The Ray backend: each batch task is a Ray task running the same `runner.run_task`.

`pip install 'codeloop[ray]'`. Without --ray-address a local Ray instance is started (small
object store: results are a few kB; services on loopback only); with it, the driver joins that
cluster, and every node must have codeloop installed. Each task asks Ray for its CPU and memory
share and is retried by Ray when its worker process or node is lost (max_retries); results come
back as they finish (`ray.wait`). The interrupt flag and the rate-limit backoff live in a small actor that workers
poll and bump, so a 429 seen on one node slows new task starts everywhere.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Any

from codeloop.cli.commands.batch.local import lost_record
from codeloop.cli.commands.batch.runner import RunContext
from codeloop.cli.commands.batch.tasks import TaskSpec

LOCAL_OBJECT_STORE_MB = 128
LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_STATE_CACHE_S = 1.0
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
    """Held by one actor: the batch's interrupt flag and backoff deadline (wall clock)."""

    def __init__(self) -> None:
        self.stop, self.until = False, 0.0

    def backoff(self, seconds: float) -> None:
        self.until = max(self.until, time.time() + seconds)

    def interrupt(self) -> None:
        self.stop = True

    def state(self) -> tuple[bool, float]:
        return self.stop, self.until


class RayWorkerControl:
    """runner.Control on a Ray worker: polls the actor at most once a second."""

    def __init__(self, actor) -> None:
        self.actor = actor
        self._stop, self._checked = False, 0.0

    def interrupted(self) -> bool:
        now = time.monotonic()
        if not self._stop and now - self._checked >= _STATE_CACHE_S:
            self._checked = now
            try:
                self._stop = bool(_ray().get(self.actor.state.remote(), timeout=10)[0])
            except Exception:  # the actor is gone with the driver: nobody to report to, stop
                self._stop = True
        return self._stop

    def backoff(self, seconds: float) -> None:
        self.actor.backoff.remote(seconds)


def _remote_run(spec: TaskSpec, ctx: RunContext, actor) -> dict[str, Any]:
    from codeloop.cli.commands.batch.runner import run_task
    return run_task(spec, ctx, RayWorkerControl(actor))


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith(FORWARD_ENV_PREFIXES)}


class RayBackend:
    name = "ray"

    def __init__(self, ctx: RunContext, workers: int, *, address: str | None, task_cpus: float,
                 task_memory_mb: int, max_retries: int) -> None:
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
        self.ctx = ctx
        self._actor = ray.remote(num_cpus=0)(_ControlActor).remote()
        self._task = ray.remote(num_cpus=task_cpus, memory=task_memory_mb * 2**20, max_retries=max_retries,
                                retry_exceptions=False)(_remote_run)
        self.max_retries = max_retries
        self._pending: dict[Any, TaskSpec] = {}
        self._state, self._state_at = (False, 0.0), 0.0

    def submit(self, spec: TaskSpec) -> None:
        self._pending[self._task.remote(spec, self.ctx, self._actor)] = spec

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

    def _actor_state(self) -> tuple[bool, float]:
        now = time.monotonic()
        if now - self._state_at >= 0.5:
            self._state_at = now
            try:
                self._state = tuple(self._ray.get(self._actor.state.remote(), timeout=10))
            except Exception:
                pass
        return self._state

    def interrupt(self) -> None:
        self._ray.get(self._actor.interrupt.remote())
        self._state_at = 0.0

    def backoff_until(self) -> float:
        return self._actor_state()[1]

    def close(self) -> None:
        try:
            self._ray.shutdown()
        except Exception:
            pass
