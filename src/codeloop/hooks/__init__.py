"""Claude Code compatible hooks: shell commands run at lifecycle events (see runner.py).

events.py — events, matchers, stdin JSON; outcome.py — exit codes and JSON answers, aggregated;
runner.py — running the processes; stop.py — the loop's StopHooks seam (and `StopHookOutcome`,
which the loop imports: so this package root imports nothing until a name is asked for);
lifecycle.py — one firing function per newer event (PostToolBatch, PermissionDenied, MessageDisplay,
tasks, worktrees…); watch.py — CwdChanged and FileChanged at turn boundaries.
"""

_EXPORTS = {"CompactTrigger": "events", "HookCommand": "events", "HookEvent": "events",
            "SessionStartSource": "events", "HookOutcome": "outcome", "HookPermissionDecision": "outcome",
            "HookRunner": "runner", "StopHookAdapter": "stop", "LifecycleHooks": "lifecycle"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codeloop.hooks' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"codeloop.hooks.{module}"), name)
