"""What a bash command line will run, for the permission layer.

Owns: the public API of the shell analysis, in one import: the scanner (`split_command`,
`SplitResult`, `SimpleCommand`, `Redirect`, implemented in `shell_scan.py`) and the redirect targets
of one part (`write_targets`). Re-exports the wrappers, launchers and
dangerous environment of `shell_cmd.py`, the write analysis (`shell_writes.py`) and the built-in
read-only set (`readonly.py`). Pure functions, no I/O.
"""

from __future__ import annotations

from codeloop.permissions.shell_scan import split_command
from codeloop.permissions.readonly import is_read_only, is_read_only_command
from codeloop.permissions.shell_cmd import (_FIND_ACTIONS, LAUNCHERS, SHELLS, Unwrapped,  # noqa: F401
                                            command_name, dangerous_env, inner_commands, launcher_name,
                                            strip_wrappers, unwrap)
from codeloop.permissions.shell_writes import write_targets as _write_targets
from codeloop.permissions.shell_writes import writes_file
from codeloop.permissions.shell_words import (Redirect, SimpleCommand, SplitResult,
                                              decode_ansi_c)

__all__ = ["Redirect", "SimpleCommand", "SplitResult", "split_command", "decode_ansi_c",
           "Unwrapped", "unwrap", "strip_wrappers", "command_name", "launcher_name",
           "inner_commands", "dangerous_env", "writes_file", "write_targets",
           "is_read_only_command", "is_read_only", "LAUNCHERS"]

def write_targets(sc: SimpleCommand, cwd: str) -> list[str | None]:
    """Absolute, normalised paths one part writes through redirects (None: not knowable).
    The full analysis (commands, `cd`) is `shell_writes.write_targets`."""
    return [t.path for t in _write_targets(SplitResult([SimpleCommand([], sc.raw, {}, sc.redirects)]), cwd)]
