"""Claude Code compatible hooks: shell commands run at lifecycle events (see runner.py).

events.py — events, matchers, stdin JSON; outcome.py — exit codes and JSON answers, aggregated;
runner.py — running the processes; stop.py — the loop's StopHooks seam.
"""

from codeloop.hooks.events import CompactTrigger, HookCommand, HookEvent, SessionStartSource
from codeloop.hooks.outcome import HookOutcome, HookPermissionDecision
from codeloop.hooks.runner import HookRunner
from codeloop.hooks.stop import StopHookAdapter

__all__ = ["CompactTrigger", "HookCommand", "HookEvent", "HookOutcome", "HookPermissionDecision",
           "HookRunner", "SessionStartSource", "StopHookAdapter"]
