"""Reading JSON fast where that is exact (a long transcript is thousands of JSON lines), and the
fast writer for request bodies (`fast_module`).

`loads` gives exactly what `json.loads` gives. It asks orjson (when installed: several times
faster) only for text orjson reads the same way: orjson turns an integer beyond 64 bits into a
float, so text with a run of 19 digits goes to `json`; and what orjson refuses but `json`
accepts (NaN, lone surrogates, a byte-order mark) is read by `json` too.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_state: dict[str, Any] = {}
_LONG_RUN = b"0" * 19   # 19 digits once every digit reads 0


def loads(data: bytes) -> Any:
    """`json.loads(data)`, faster: raises ValueError (or RecursionError) where it would."""
    fast = _state.get("orjson", False)
    if fast is False:
        fast = _load_orjson()
    # a run of 19 digits, found by two C passes (a regex scanning for it costs more than the parse)
    if fast is not None and _LONG_RUN not in data.translate(_state["zeros"]):
        try:
            return fast.loads(data)
        except fast.JSONDecodeError:
            pass   # what json alone accepts, or an error json will name
    return json.loads(data)


def _load_orjson() -> Any:
    fast: Any = None
    try:
        import orjson as fast
    except ImportError:
        pass
    _state.update(orjson=fast, zeros=bytes.maketrans(b"123456789", b"000000000"))
    return fast


def fast_module(*, if_loaded: bool = False) -> Any:
    """orjson, or None when it is not installed (`if_loaded`: or not imported yet — a small
    request body is not worth its import at start-up)."""
    fast = _state.get("orjson", False)
    if fast is False:
        if if_loaded and "orjson" not in sys.modules:
            return None
        return _load_orjson()
    return fast
