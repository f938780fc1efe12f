"""Ways to make a code-cache file one codeloop must not trust (the start-up caches' tests share
them): writable by the group or by anyone, or a symlink to the real file."""

from __future__ import annotations

from pathlib import Path

UNTRUSTED = ("group-writable", "world-writable", "symlink")


def untrust(stored: Path, how: str, elsewhere: Path) -> None:
    """Spoil `stored` as `how` (one of UNTRUSTED) says; `elsewhere` is where a symlink points."""
    if how == "group-writable":
        stored.chmod(0o620)
    elif how == "world-writable":
        stored.chmod(0o602)
    elif how == "symlink":
        stored.rename(elsewhere)
        stored.symlink_to(elsewhere)
    else:
        raise ValueError(how)
