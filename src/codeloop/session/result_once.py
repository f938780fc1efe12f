"""Each tool result stored once in a transcript record.

A `toolUseResult` often repeats the tool_result's text — whole, or as one field (Bash's stdout,
Grep's content). The text is kept once, in the message; `toolUseResultFromContent` says which part
it also is (True: all of it; or the field names), and loading puts it back. Records written
without the key load unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.messages import Message


# toolUseResult often repeats the tool_result's text (whole, or as Bash's stdout, Grep's content):
# the text is stored once, in the message; this key names the part it also is (True: all; or keys).
RESULT_FROM_CONTENT = "toolUseResultFromContent"


def _sole_result_text(content: Any) -> str | None:
    block = content[0] if isinstance(content, list) and len(content) == 1 else None
    ok = isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("content"), str)
    return (block["content"] or None) if ok else None  # type: ignore[index]


def store_result_once(entry: dict[str, Any], msg: Message) -> None:
    data, text = msg.tool_use_result, _sole_result_text(msg.content)
    shared = [k for k, v in data.items() if v == text] if text is not None and isinstance(data, dict) else []
    if text is not None and data == text:
        entry[RESULT_FROM_CONTENT] = True
    elif shared:
        entry["toolUseResult"], entry[RESULT_FROM_CONTENT] = {k: v for k, v in data.items() if k not in shared}, shared
    else:
        entry["toolUseResult"] = data


def tool_use_result(entry: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    data, shared = entry.get("toolUseResult"), entry.get(RESULT_FROM_CONTENT)
    text = _sole_result_text(content) if shared else None
    if text is not None and shared is True:
        return text
    if text is not None and isinstance(shared, list) and isinstance(data, dict):
        return {**data, **{k: text for k in shared if isinstance(k, str)}}
    return data
