"""An MCP server whose one tool answers codeloop's permission prompts (--permission-prompt-tool).

It allows Write and denies everything else, in Claude Code's protocol: the tool receives
{tool_name, input, tool_use_id} and answers JSON {"behavior": "allow"|"deny", ...}.
"""

import json

from sdkserver import Server

server = Server("approver")


@server.tool()
def approve(tool_name: str, input: dict, tool_use_id: str = "") -> str:
    if tool_name == "Write":
        return json.dumps({"behavior": "allow", "updatedInput": input})
    return json.dumps({"behavior": "deny", "message": f"the approver does not allow {tool_name}"})


if __name__ == "__main__":
    server.run()
