"""Feature flags and the EndConversation gate (spec 000 "Gate").

Owns how a feature flag is read (settings `featureFlags`, overridden by the environment), the
model floor check against the data table in `model_floor.json`, and the four-part gate that
decides whether the EndConversation tool exists in a session at all:

    (a) an entrypoint is known and full-matches the flag's scope regex (default `cli`),
    (b) the canonical model id passes the model floor,
    (c) the `end_conversation` flag is enabled (`true`, or an object `{"scope": "<regex>"}`),
    (d) the fixed runtime blocker is off.

Every check fails closed: an unknown entrypoint, an unparseable model id, a malformed flag value
or a broken floor table switches the tool off; an invalid scope regex narrows to `cli` and never
opens the tool wider.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

END_CONVERSATION_FLAG = "end_conversation"
# Set by the local-model profile: prompts attach the files they name (input.process.named_files).
ATTACH_NAMED_FILES = "attach_named_files"
# A second, local master switch (Claude Code 2.1.235 ships the equivalent helper returning a fixed
# value). Flipping it to True removes EndConversation whatever the flag and scope say.
END_CONVERSATION_RUNTIME_BLOCKED = False
DEFAULT_SCOPE = "cli"
FLAG_ENV_PREFIX = "CODELOOP_FEATURE_"

_DEFAULT_SCOPE_RE = re.compile(rf"^(?:{DEFAULT_SCOPE})$", re.IGNORECASE)
# claude-<family>-<n>(-<n>)*, optionally followed by a -YYYYMMDD snapshot date. The date is a
# release stamp, not part of the version vector: claude-opus-4-8-20260101 is opus 4.8. Only the
# canonical lowercase shape is accepted; aliases ("opus"), provider deployment names
# ("anthropic.claude-…-v1:0", "…@20250101") and suffixes like "[1m]" must be canonicalised
# upstream, so they fail here rather than being guessed at.
_MODEL_RE = re.compile(r"claude-(?P<family>[a-z]+)-(?P<version>\d+(?:-\d+)*)")
_DATE_SEGMENT = re.compile(r"\d{8}")


# -- generic flags ----------------------------------------------------------------------------------

def flag_env_name(name: str) -> str:
    return FLAG_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def feature_flag(name: str, flags: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> Any:
    """The raw value of feature flag `name`, or None when it is not set anywhere.

    The environment (`CODELOOP_FEATURE_<NAME>`, parsed as JSON) wins over settings
    `featureFlags`. An env value that is not valid JSON is kept as the plain string, which no
    flag consumer treats as "on" — a typo must not enable anything.
    """
    env = os.environ if env is None else env
    raw = env.get(flag_env_name(name))
    if raw is not None and raw.strip() != "":
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if isinstance(flags, Mapping):
        return flags.get(name)
    return None


def scope_pattern(value: Any) -> re.Pattern[str] | None:
    """The entrypoint scope a flag value enables: None means the feature is off.

    `true` → the default `cli` scope; an object → its `scope` regex as `^(?:scope)$`, full match,
    case-insensitive, falling back to `cli` when the scope is missing, not a string or not a
    valid regex; anything else (false, numbers, strings such as "yes", lists, null) → off.
    """
    if value is True:
        return _DEFAULT_SCOPE_RE
    if isinstance(value, Mapping):
        scope = value.get("scope")
        if isinstance(scope, str) and scope:
            try:
                return re.compile(rf"^(?:{scope})$", re.IGNORECASE)
            except re.error:
                log.warning("feature flag scope %r is not a valid regex; using %r", scope, DEFAULT_SCOPE)
        return _DEFAULT_SCOPE_RE
    return None


# -- model floor ------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def model_floors() -> dict[str, tuple[int, ...]]:
    """family → minimum version vector, from the packaged data table (read once, on first use)."""
    try:
        from importlib import resources   # on first use: it imports tempfile, zipfile, …

        text = resources.files("codeloop.config").joinpath("model_floor.json").read_text("utf-8")
        data = json.loads(text).get("floors")
    except (OSError, ValueError, AttributeError) as exc:
        log.error("model floor table unreadable (%s); every model fails the floor", exc)
        return {}
    floors: dict[str, tuple[int, ...]] = {}
    for family, version in (data or {}).items() if isinstance(data, dict) else ():
        if (isinstance(family, str) and isinstance(version, list) and version
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in version)):
            floors[family] = tuple(version)
        else:
            log.error("model floor entry %r: %r is malformed; the family is left out", family, version)
    return floors


def parse_model_id(model: str | None) -> tuple[str, tuple[int, ...]] | None:
    """(family, version vector) of a canonical Claude model id, or None if it is not one."""
    if not isinstance(model, str):
        return None
    m = _MODEL_RE.fullmatch(model)
    if m is None:
        return None
    segments = m.group("version").split("-")
    if len(segments) > 1 and _DATE_SEGMENT.fullmatch(segments[-1]):
        segments = segments[:-1]
    elif _DATE_SEGMENT.fullmatch(segments[0]):
        return None  # claude-opus-20260101: a date with no version at all
    return m.group("family"), tuple(int(s) for s in segments)


def _at_least(version: tuple[int, ...], floor: tuple[int, ...]) -> bool:
    # Segment by segment; a missing segment counts as 0, so sonnet 5 == 5-0 and opus 5 > 4-8.
    width = max(len(version), len(floor))
    return version + (0,) * (width - len(version)) >= floor + (0,) * (width - len(floor))


def model_passes_floor(model: str | None) -> bool:
    parsed = parse_model_id(model)
    if parsed is None:
        return False
    family, version = parsed
    floor = model_floors().get(family)
    return floor is not None and _at_least(version, floor)


# -- the EndConversation gate ---------------------------------------------------------------------

def end_conversation_enabled(*, entrypoint: str | None, model: str | None, flags: Mapping[str, Any] | None,
                             env: Mapping[str, str] | None = None) -> bool:
    """Whether EndConversation exists for this entrypoint and model (spec 000 "Gate")."""
    if not entrypoint:
        return False
    # every part must hold; the flag is checked first so a session without it never reads the table
    scope = scope_pattern(feature_flag(END_CONVERSATION_FLAG, flags, env))
    if scope is None:
        return False
    if not model_passes_floor(model):
        return False
    if END_CONVERSATION_RUNTIME_BLOCKED:
        return False
    return scope.fullmatch(entrypoint) is not None
