"""The scheduling tools' gate (CronCreate, CronDelete, CronList, ScheduleWakeup), apart from
`tools.scheduler` so that judging it at every request imports no scheduler and makes none: the
session's scheduler is made on first use (`tools.made_on_use`)."""

from __future__ import annotations

import os
from typing import Any

from codeloop.tools.made_on_use import available


def scheduling_enabled(ctx: Any) -> bool:
    """The session gave a scheduler (made or waiting to be), the main thread, not turned off."""
    return available(ctx, "scheduler") and ctx.agent_id is None and not os.environ.get("CLAUDE_CODE_DISABLE_CRON")
