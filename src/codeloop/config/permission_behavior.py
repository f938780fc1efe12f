"""The three answers a permission rule or check can give: allow, ask, deny.

Settings files name them (`permissions.allow|ask|deny`), tools and the policy return them, so the
vocabulary lives in the config layer, below both (`tools.base` re-exports it).
"""

from __future__ import annotations

from enum import Enum


class PermissionBehavior(str, Enum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
