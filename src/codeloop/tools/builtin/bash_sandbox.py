"""The sandbox side of one Bash call: the bubblewrap prefix, environment and descriptors it runs
with (`_sandboxed`, which also collects what the sandbox undid when the call ended), whether the
call asked to leave the sandbox (`_disable`), and the hint for a command that failed for want of
network inside it (`network_hint`). Kept apart from `bash.py` so the tool's own module stays about
running a shell."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codeloop.tools.base import ToolError


# Signs in a sandboxed command's output that it reached for the network the sandbox withholds
# (compiled on the first failed sandboxed call, not at start-up).
_NET_FAILURE = (r"could not resolve|temporary failure in name resolution|name or service not known|"
                r"network is unreachable|getaddrinfo|failed to establish a new connection|"
                r"no address associated with hostname|connect tunnel failed|failed to connect to|"
                r"could not connect to|connection refused|nodename nor servname")


def network_hint(sandbox: Any, output: str) -> str | None:
    """A note for the model when a sandboxed command failed for want of network: how to ask."""
    if not re.search(_NET_FAILURE, output[-8192:], re.I):
        return None
    where = "no network beyond the hosts in sandbox.network.allowedDomains"
    if not sandbox.settings.allow_unsandboxed:
        return f"(This command ran in the sandbox: {where}, and commands may not leave the sandbox here.)"
    return (f"(This command ran in the sandbox: {where}. If it needs the network, run it again with "
            f"dangerouslyDisableSandbox: true; the user will be asked to approve running it outside the sandbox.)")


@contextmanager
def _sandboxed(command: str, cwd: Path, cwd_file: str | None, sandbox: Any, disable: bool = False, *,
               gated: bool = False) -> Iterator[tuple[list[str], dict[str, str], tuple[int, ...], list[str],
                                                   Callable[[], None] | None]]:
    """The bwrap prefix, extra environment and descriptors to pass for this call (empty when it
    runs unsandboxed), a list the sandbox fills when the call ends with what it undid (planted
    configuration), and, for a `gated` call, the release to call right after the process started
    (the command waits for it; it raises ToolError when the call must be refused, and the caller
    then kills the process before leaving this block). `disable`: the call's
    dangerouslyDisableSandbox (the permission check allowed it already)."""
    if sandbox is None or not sandbox.enabled:
        yield [], {}, (), [], None
        return
    from codeloop.sandbox.layout import LayoutError
    from codeloop.sandbox.runtime import Use

    use, why = sandbox.use_for(command, disable=disable)
    if use is Use.REFUSED:
        raise ToolError(why)
    if use is Use.UNSANDBOXED:
        yield [], {}, (), [], None
        return
    try:
        prepared = sandbox.prepare(str(cwd), [cwd_file] if cwd_file else [], gated=gated)
        prefix = prepared.__enter__()
    except LayoutError as e:
        raise ToolError(f"Bash refused: the sandbox cannot start safely: {e}") from None
    release = None
    if prefix.release is not None:
        inner = prefix.release

        def release() -> None:
            try:
                inner()
            except LayoutError as e:
                raise ToolError(f"Bash refused: the sandbox cannot start safely: {e}") from None
    try:
        yield prefix.argv, prefix.env, prefix.pass_fds, prefix.notes, release
    finally:
        prepared.__exit__(None, None, None)


def _disable(inp: Any) -> bool:
    return getattr(inp, "dangerouslyDisableSandbox", None) is True
