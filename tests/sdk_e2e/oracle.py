"""The scripted model behind the Agent SDK's e2e tests: it answers each of their prompts the way a
cooperative model would (call the tool the prompt names, then say it is done), so the suite checks
codeloop's side of the protocol rather than a model's mood.

One rule per prompt family, chosen from the turn's first human prompt and from what already
happened in the turn (the tool results so far). Anything else gets a short text answer.
"""

from __future__ import annotations

import re
from typing import Any

from fakeapi import Request, Response, ScriptedAPI, error, sse, text, thinking, tool_use

BAD_MODEL = "claude-nonexistent-model-for-sdk-e2e"
SUBAGENT_MARK = "Reply with one short friendly sentence"
_RUN = re.compile(r"^(?:Run: |Run this bash command: |Run the command: )(.+)$", re.S)
_WRITE = re.compile(r"Use the Write tool to create the file (\S+) containing exactly the text (\w+)")
_REPLY = re.compile(r"Reply with exactly: (\w+)")

# What each structured-output prompt's answer is (keyed by a phrase of the prompt).
_STRUCTURED = {
    "Count how many Python files": {"file_count": 3, "has_tests": True, "test_file_count": 1},
    "Analyze this text: 'Hello world'": {"analysis": {"word_count": 2, "character_count": 11},
                                         "words": ["Hello", "world"]},
    "Search for test files": {"has_tests": True, "test_framework": "pytest", "test_count": 2},
    "Count how many files are in the current directory": {"file_count": 4, "has_readme": False},
}


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def _is_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                             for b in content)


def _turn(req: Request) -> tuple[str, list[str]]:
    """The turn's human prompt and the names of the tools already called in this turn."""
    messages = req.messages
    start = len(messages) - 1
    while start > 0 and _is_tool_result(messages[start]):
        start -= 2
    prompt = "\n".join(t for t in _texts(messages[start].get("content", "")) if not t.startswith("<"))
    called = [b.get("name", "") for m in messages[start + 1:] if m.get("role") == "assistant"
              for b in m.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"]
    return prompt.strip(), called


def _slow_text(words: list[str], pause: float) -> Response:
    resp = sse(text(" ".join(words), chunks=len(words)))
    resp.chunks = [(pause if b"text_delta" in chunk else delay, chunk) for delay, chunk in resp.chunks]
    return resp


def answer(req: Request) -> Response:  # noqa: C901 - one rule per prompt family, read top to bottom
    if req.body.get("model") == BAD_MODEL:
        return error(404, "not_found_error", f"model: {BAD_MODEL}")
    if SUBAGENT_MARK in req.system_text:
        return sse(text("Hi there, nice to meet you!"))
    prompt, called = _turn(req)
    if "StructuredOutput" in req.tool_names:
        for phrase, value in _STRUCTURED.items():
            if phrase in prompt:
                if "Use tools" in prompt and not called:
                    return sse(tool_use("Glob", {"pattern": "*"}))
                return sse(tool_use("StructuredOutput", value))
    if "Use the Agent tool exactly once" in prompt:
        if not called:
            agent = "Agent" if "Agent" in req.tool_names else "Task"
            return sse(tool_use(agent, {"subagent_type": "greeter", "prompt": "say hi",
                                        "description": "Greet", "run_in_background": False}))
        return sse(text("DONE"))
    if m := _RUN.match(prompt):
        return sse(tool_use("Bash", {"command": m.group(1)})) if not called else sse(text("Done."))
    if m := _WRITE.search(prompt):
        if not called:
            return sse(tool_use("Write", {"file_path": m.group(1).rstrip("."), "content": m.group(2)}))
        return sse(text("Written."))
    if "greet 'Alice'" in prompt:
        steps = [("mcp__test__greet", {"name": "Alice"}), ("mcp__test__echo", {"text": "test"})]
        if len(called) < len(steps):
            name, inp = steps[len(called)]
            return sse(tool_use(name, inp))
        return sse(text("Both steps are done."))
    if "mcp__multi__echo" in prompt:
        if not called:
            return sse(tool_use("mcp__multi__echo", {"text": "test"}), tool_use("mcp__multi__greet", {"name": "Bob"}))
        return sse(text("Both tools ran."))
    if m := re.search(r"(mcp__\w+__echo)", prompt):
        return sse(tool_use(m.group(1), {"text": "hello"})) if not called else sse(text("Echoed."))
    if "thinking" in req.body and prompt.startswith("Think"):
        return sse(thinking("First, 2 + 2: two and two make 4. Then three jokes, pick one."),
                   text("Why did the function return early? It had 2 + 2 = 4 reasons."))
    if prompt.startswith("Count from 1 to 100"):
        return _slow_text([str(i) for i in range(1, 101)], 0.05)
    if m := _REPLY.search(prompt):
        return sse(text(m.group(1)))
    if m := re.search(r"What is (\d+) ?\+ ?(\d+)", prompt):
        return sse(text(str(int(m.group(1)) + int(m.group(2)))))
    return sse(text("Hello there friend"))


class OracleAPI(ScriptedAPI):
    """A ScriptedAPI that never runs dry: every request is answered by `answer`."""

    def __init__(self) -> None:
        super().__init__()

    def _next(self, req: Request) -> Response:
        if req.path.endswith("/count_tokens"):
            return super()._next(req)
        with self._lock:
            self.requests.append(req)
        return answer(req)
