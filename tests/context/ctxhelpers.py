"""Builders for crafted histories used by the context tests and the context benchmark."""

from __future__ import annotations

from codeloop.messages import Message, tool_result_message, user_message


def call(name: str, inp: dict, tid: str, *, text: str | None = None, rid: str | None = None,
         usage: dict | None = None) -> Message:
    content = ([{"type": "text", "text": text}] if text else []) + [
        {"type": "tool_use", "id": tid, "name": name, "input": inp}]
    return Message(role="assistant", content=content, id=rid or f"msg_{tid}", usage=usage)


def exchange(name: str, inp: dict, tid: str, result: str, *, is_error: bool = False) -> list[Message]:
    return [call(name, inp, tid), tool_result_message(tid, result, is_error=is_error)]


def reply(text: str, *, usage: dict | None = None) -> Message:
    return Message(role="assistant", content=[{"type": "text", "text": text}], id=f"msg_r_{text[:8]}",
                   usage=usage)


def history(n_exchanges: int, *, result_chars: int = 100, name: str = "Read") -> list[Message]:
    msgs = [user_message("please work on the project")]
    for i in range(n_exchanges):
        msgs += exchange(name, {"file_path": f"src/f{i}.py"}, f"t{i}", f"line {i}\n" + "x" * result_chars)
    return msgs


def result_content(messages: list[Message], tid: str):
    for m in messages:
        for b in m.content:
            if b.get("type") == "tool_result" and b.get("tool_use_id") == tid:
                return b["content"]
    raise KeyError(tid)
