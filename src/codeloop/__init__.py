"""codeloop: an agentic coding harness (package root; keeps imports lazy)."""

__version__ = "0.1.0"
