"""Tools, their registry and agent definitions (layer 3, beside permissions and mcp). Imports
providers/config/hooks and core types; a capability a tool needs from above (subagents) comes on
the ToolContext.
"""
