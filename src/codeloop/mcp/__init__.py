"""MCP (Model Context Protocol) client: servers from `.mcp.json`, settings and `--mcp-config`,
their tools exposed as `mcp__<server>__<tool>`.

`config` parses and merges the configuration (no SDK needed); `client.McpManager` runs the
connections and imports the `mcp` SDK lazily, only when servers are started; `tools` maps
server tools and their results onto codeloop's Tool protocol; `resources` holds the resource
tools and how resources and prompts read; `oauth` signs in to remote servers; `transports`
opens a connection. Importing this package imports neither the SDK nor the submodules.
"""
