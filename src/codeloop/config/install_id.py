"""The anonymous per-install id sent as `metadata.user_id`, kept in the config dir.

Random (never derived from the user, host or key), created on first use and reused after, as
Claude Code keeps its `userID`. Claude Code's format joins it with the session:
`user_<id>_account__session_<session id>`. A config dir that cannot be written gives a
one-run id rather than an error: the id is a courtesy to the API, not something a run needs.
"""

from __future__ import annotations

import json
import os

from codeloop.config.paths import config_dir

_FILE = "install.json"


def install_id() -> str:
    path = config_dir() / _FILE
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("userID")
        if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return value
    except (OSError, ValueError, AttributeError):
        pass
    import secrets   # only for a new id: random, hashlib and hmac stay off the common start-up

    value = secrets.token_hex(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{_FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"userID": value}, fh)
        os.replace(tmp, path)   # two first runs at once: the last writer wins, both ids are valid
    except OSError:
        pass
    return value


def metadata_user_id(session_id: str) -> str:
    return f"user_{install_id()}_account__session_{session_id}"
