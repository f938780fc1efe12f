"""Subcommands beside the session, each with its own parser.

    sessions.py   `codeloop sessions list|show|export`
    mcp.py        `codeloop mcp add|add-json|add-from-claude-desktop|list|get|remove|serve`
    mcp_desktop.py  reading and importing Claude Desktop's servers
    mcp_serve.py  `codeloop mcp serve`: codeloop's tools as an MCP server over stdio
    plugin.py     `codeloop plugin marketplace add|list|remove|update, install|enable|disable|uninstall|list|validate`
    batch/        `codeloop batch`: many headless sessions at once, locally or on Ray
"""
