"""Subcommands beside the session, each with its own parser.

    sessions.py   `codeloop sessions list|show|export`
    mcp.py        `codeloop mcp add|add-json|list|get|remove`
    plugin.py     `codeloop plugin marketplace add|list|remove|update, install|enable|disable|uninstall|list|validate`
    batch/        `codeloop batch`: many headless sessions at once, locally or on Ray
"""
