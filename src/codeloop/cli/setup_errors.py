"""The errors of turning flags into a Conversation: each carries a message meant for the user.

Apart from `setup.py` so the modules it delegates to (`setup_provider`) can raise them without
importing `setup` back.
"""

from __future__ import annotations


class SetupError(Exception):
    """A problem with the user's flags, environment or session files."""


class NoKeyError(SetupError):
    """No API key for the chosen hosted provider (the REPL offers the local model instead)."""


class BrokenSettingsError(SetupError):
    """Settings files that cannot be used: the run stops rather than drop the rules they hold."""

    def __init__(self, problems: list) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(f"broken settings file: {p} (fix it; codeloop will not run without "
                                    "the rules it may hold)" for p in self.problems))
