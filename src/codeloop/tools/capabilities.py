"""The protocols of the session capabilities tools receive on their ToolContext, for the type
checker only (imported under TYPE_CHECKING: creating Protocol classes costs start-up time).

The permission policy and the sandbox are built on the tools layer, so tools cannot name their
classes without an import cycle; these protocols say what tools may use of them.
"""

from __future__ import annotations

from typing import Any, Protocol


class SessionPolicy(Protocol):
    """The session's permission policy as tools use it (`permissions.policy.PermissionPolicy`,
    which is built on this module: a protocol keeps the import one way)."""
    mode: Any                                  # permissions.modes.PermissionMode
    allow: list[str]

    def set_mode(self, mode: Any) -> None: ...
    def allow_rules(self, rules: list[str]) -> list[str]: ...


class SessionSandbox(Protocol):
    """The OS sandbox Bash runs in, as the tool uses it (`sandbox.runtime.Sandbox`)."""
    @property
    def enabled(self) -> bool: ...

    def use_for(self, command: str) -> tuple[Any, str]: ...
    def prepare(self, cwd: str, keep_writable: list[str]) -> Any: ...
