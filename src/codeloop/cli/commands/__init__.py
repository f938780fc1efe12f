"""Subcommands beside the session: `codeloop sessions`, `codeloop mcp`, `codeloop batch`."""
