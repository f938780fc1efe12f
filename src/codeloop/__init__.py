"""codeloop: an agentic coding harness (package root; keeps imports lazy).

`from codeloop import QueryEngine, QueryEngineConfig, TurnResult` loads the library API on first
use, so `import codeloop` (and `codeloop --version`) stays cheap.
"""

from codeloop.version import __version__  # noqa: F401 (the package's public version)

_LAZY = {"QueryEngine", "QueryEngineConfig", "TurnResult"}


def __getattr__(name: str):
    if name in _LAZY:
        from codeloop.session import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'codeloop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
