"""A real MCP server written with the SDK's own server API, for the client tests.

Usage: python tools_server.py stdio | http PORT | sse PORT   (NAME env var renames the server)
Tools: echo, add, image (a 1x1 PNG), fail (raises → isError), crash (exits mid-call),
peek (readOnlyHint), sleep, pid, big (n characters of text).
"""

import base64
import os
import sys

from mcp.types import ToolAnnotations
from sdkserver import Image, from_argv, run

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

server, mode, port = from_argv(os.environ.get("NAME", "tools"))


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def image() -> Image:
    """A tiny PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
def crash() -> str:
    """Kills the server process in the middle of the call."""
    sys.stderr.write("about to crash\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek() -> str:
    """Looks without touching."""
    return "nothing changed"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    import anyio

    await anyio.sleep(seconds)
    return "awake"


@server.tool()
def pid() -> str:
    """The server's process id (to check that shutdown leaves no process behind)."""
    return str(os.getpid())


@server.tool()
def big(n: int) -> str:
    """n characters of text."""
    return "x" * n


if __name__ == "__main__":
    run(server, mode, port)
