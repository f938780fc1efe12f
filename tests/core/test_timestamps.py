"""messages.now_iso: the transcript timestamp, written without datetime, reads as datetime's own
`isoformat(timespec="milliseconds")` text of the same instant."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from codeloop import messages


@pytest.mark.parametrize("ns", [0, 1_700_000_000_123_456_789, 1_700_000_000_999_999_999, 1_709_164_800_000_000_000,
                                4_102_444_799_001_000_000])
def test_now_iso_is_datetimes_millisecond_text(monkeypatch, ns):
    monkeypatch.setattr(messages.time, "time_ns", lambda: ns)
    expected = datetime.fromtimestamp(ns // 1000 / 1e6, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert messages.now_iso() == expected


def test_now_iso_is_now():
    before = datetime.now(UTC)
    stamp = datetime.fromisoformat(messages.now_iso().replace("Z", "+00:00"))
    after = datetime.now(UTC)
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= stamp <= after
    assert time.gmtime(stamp.timestamp()).tm_year == after.year
