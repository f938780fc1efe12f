"""A real MCP server with resources and prompts (and one tool), written with the SDK's server API.

Usage: python content_server.py stdio | http PORT
Resources: docs://readme (text), docs://broken (fails when read), img://dot (a 1x1 PNG).
Prompts: greet(name, mood="cheerful") and review(path) — their text names the arguments —, and
refuse(topic), which always fails.
"""

import base64

from sdkserver import from_argv, run

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

server, mode, port = from_argv("content")


@server.resource("docs://readme", name="readme", description="The project readme", mime_type="text/markdown")
def readme() -> str:
    return "# Readme\nThe secret word is PELICAN."


@server.resource("docs://broken", name="broken", description="Always fails")
def broken() -> str:
    raise RuntimeError("the disk is on fire")


@server.resource("img://dot", name="dot", mime_type="image/png")
def dot() -> bytes:
    return PNG


@server.prompt(description="Greet someone")
def greet(name: str, mood: str = "cheerful") -> str:
    return f"Say hello to {name} in a {mood} way."


@server.prompt(description="Review a file")
def review(path: str) -> str:
    return f"Please review the file {path} carefully."


@server.prompt(description="Always refused")
def refuse(topic: str) -> str:
    raise ValueError(f"will not talk about {topic}")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


if __name__ == "__main__":
    run(server, mode, port)
