"""What the test MCP servers here share: the SDK's server class under mcp 1.x and 2.x, their
command line (`stdio | http PORT | sse PORT`), and running over the transport it names."""

import sys

try:  # mcp 2.x
    from mcp.server.mcpserver import Image, MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server, Image

__all__ = ["Image", "Server", "from_argv", "run"]


def from_argv(name: str) -> tuple[Server, str, int]:
    """(server named `name`, mode, port) from `sys.argv`."""
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    try:
        server = Server(name, host="127.0.0.1", port=port)  # 1.x takes transport settings here
    except TypeError:
        server = Server(name)
    return server, mode, port


def run(server: Server, mode: str, port: int) -> None:
    if mode == "stdio":
        server.run()
        return
    transport = "streamable-http" if mode == "http" else "sse"
    try:
        server.run(transport, host="127.0.0.1", port=port)
    except TypeError:
        server.run(transport)
