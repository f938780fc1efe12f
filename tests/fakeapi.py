"""A scripted fake of the Anthropic Messages API that speaks the real SSE wire format.

Responses are built from small helpers:

    sse(text("hi"), tool_use("Read", {"file_path": "x"}), stop="tool_use")

`ScriptedAPI` serves them in order, records every request (JSON body and headers), and is
usable in-process through `httpx.MockTransport` (`api.transport()`) or as a real loopback HTTP
server for subprocess tests (`with api.serve() as base_url: ...`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

_ids = itertools.count(1)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


@dataclass
class Block:
    """One content block's events, rendered when its index in the message is known."""
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    delay: float = 0.0  # seconds to wait before this block (for streaming-order tests)
    cut: bool = False   # drop the connection in the middle of this block

    def events(self, index: int) -> list[tuple[str, dict[str, Any]]]:
        evs = [("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": self.start})]
        evs += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                for d in self.deltas]
        evs.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        return evs


def text(s: str, *, chunks: int = 2, delay: float = 0.0) -> Block:
    size = max(1, -(-len(s) // chunks)) if s else 1
    parts = [s[i:i + size] for i in range(0, len(s), size)] or [""]
    return Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in parts], delay)


def tool_use(name: str, inp: dict[str, Any] | str, *, id: str | None = None, delay: float = 0.0,
             cut: bool = False) -> Block:
    raw = inp if isinstance(inp, str) else json.dumps(inp)
    half = len(raw) // 2
    deltas = [{"type": "input_json_delta", "partial_json": ""},
              {"type": "input_json_delta", "partial_json": raw[:half]},
              {"type": "input_json_delta", "partial_json": raw[half:]}]
    return Block({"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": {}},
                 deltas, delay, cut)


def thinking(s: str, signature: str = "sig-abc") -> Block:
    return Block({"type": "thinking", "thinking": "", "signature": ""},
                 [{"type": "thinking_delta", "thinking": s}, {"type": "signature_delta", "signature": signature}])


@dataclass
class Response:
    chunks: list[tuple[float, bytes]]  # (delay before, bytes)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream",
                                                             "request-id": "req_fake"})
    cut_after: int | None = None  # number of chunks after which the connection drops
    hold_headers: float = 0.0     # seconds to wait, connection open, before sending any header


def sse(*blocks: Block, stop: str | None = None, model: str = "claude-sonnet-4-5-20250929",
        input_tokens: int = 100, output_tokens: int = 20, cache_read: int = 0, cache_write: int = 0,
        ping: bool = True, error: dict[str, Any] | None = None) -> Response:
    """A complete streamed response. `stop` defaults to tool_use if any block is a tool_use."""
    if stop is None:
        stop = "tool_use" if any(b.start["type"] == "tool_use" for b in blocks) else "end_turn"
    msg_id = f"msg_{next(_ids):04d}"
    chunks: list[tuple[float, bytes]] = [(0.0, _event("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write}}}))]
    if ping:
        chunks.append((0.0, _event("ping", {"type": "ping"})))
    cut_after = None
    for i, b in enumerate(blocks):
        evs = b.events(i)
        if b.cut:  # stop in the middle of this block's deltas
            evs = evs[:2]
        for j, (name, data) in enumerate(evs):
            chunks.append((b.delay if j == 0 else 0.0, _event(name, data)))
        if b.cut:
            cut_after = len(chunks)
            break
    if error is not None:
        chunks.append((0.0, _event("error", {"type": "error", "error": error})))
    elif cut_after is None:
        chunks.append((0.0, _event("message_delta", {"type": "message_delta",
                                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                                      "usage": {"output_tokens": output_tokens}})))
        chunks.append((0.0, _event("message_stop", {"type": "message_stop"})))
    return Response(chunks, cut_after=cut_after)


def stalled(*blocks: Block, after: int = 1, stall_s: float = 3600.0, **kw: Any) -> Response:
    """A response that sends its first `after` chunks, then stays open without a byte for `stall_s`."""
    resp = sse(*blocks, **kw)
    delay, chunk = resp.chunks[after]
    resp.chunks[after] = (delay + stall_s, chunk)
    return resp


def no_headers(hold_s: float = 3600.0) -> Response:
    """A server that accepts the request and never answers (within `hold_s`)."""
    return Response([(0.0, b"")], status=500, hold_headers=hold_s)


def plain(status: int, body: str, headers: dict[str, str] | None = None) -> Response:
    """A non-JSON error body, as a wrong endpoint (a web server, a proxy) answers."""
    return Response([(0.0, body.encode())], status=status,
                    headers={"content-type": "text/html", **(headers or {})})


def error(status: int, etype: str, message: str, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps({"type": "error", "error": {"type": etype, "message": message}}).encode()
    return Response([(0.0, body)], status=status,
                    headers={"content-type": "application/json", **(headers or {})})


@dataclass
class Request:
    body: dict[str, Any]
    headers: dict[str, str]
    path: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.body.get("tools", [])]

    def tool_result(self, tool_use_id: str) -> dict[str, Any]:
        """The tool_result block this request sends for `tool_use_id` (AssertionError if none)."""
        for m in self.messages:
            for b in m["content"] if isinstance(m["content"], list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                    return b
        raise AssertionError(f"no tool_result for {tool_use_id}")

    def tool_result_text(self, tool_use_id: str) -> str:
        """That block's content as text (its text blocks joined)."""
        c = self.tool_result(tool_use_id)["content"]
        return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)

    @property
    def system_text(self) -> str:
        sys_ = self.body.get("system", "")
        return sys_ if isinstance(sys_, str) else "\n".join(b.get("text", "") for b in sys_)


class ScriptedAPI:
    """Serves scripted responses in order; a callable entry is called with the Request."""

    def __init__(self, *responses: Response | Callable[[Request], Response],
                 count_tokens: Callable[[Request], int] | None = None) -> None:
        self.responses = list(responses)
        # /v1/messages/count_tokens: answered by this callable, or 404 (not offered) when None
        self.count_tokens = count_tokens
        self.count_requests: list[Request] = []
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def add(self, *responses: Response | Callable[[Request], Response]) -> None:
        self.responses.extend(responses)

    def _next(self, req: Request) -> Response:
        if req.path.endswith("/count_tokens"):
            self.count_requests.append(req)
            if self.count_tokens is None:
                return error(404, "not_found_error", "count_tokens is not offered here")
            return Response([(0.0, json.dumps({"input_tokens": self.count_tokens(req)}).encode())],
                            headers={"content-type": "application/json"})
        with self._lock:
            self.requests.append(req)
            if not self.responses:
                return error(500, "api_error", "fake API: no scripted response left")
            item = self.responses.pop(0)
        return item(req) if callable(item) else item

    # -- in-process ---------------------------------------------------------------------------
    def transport(self) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            req = Request(json.loads(request.content or b"{}"), dict(request.headers), request.url.path)
            resp = self._next(req)
            if resp.hold_headers:
                await asyncio.sleep(resp.hold_headers)
            return httpx.Response(resp.status, headers=resp.headers, stream=_AsyncChunks(resp))
        return httpx.MockTransport(handler)

    # -- loopback server ----------------------------------------------------------------------
    def serve(self, get: Callable[[BaseHTTPRequestHandler], None] | None = None, *,
              tls: tuple[str, str] | None = None, on_connect: Callable[[], None] | None = None) -> _Server:
        """A loopback server for the CLI; `get` answers GET requests (the Files API, say), 404 without it.
        `tls` = (certificate file, key file) serves https; `on_connect` runs as each connection is
        taken (TCP connected; before its TLS handshake), before anything is read from it."""
        return _Server(self, get, tls=tls, on_connect=on_connect)


class _AsyncChunks(httpx.AsyncByteStream):
    def __init__(self, resp: Response) -> None:
        self.resp = resp

    async def __aiter__(self):
        for i, (delay, chunk) in enumerate(self.resp.chunks):
            if self.resp.cut_after is not None and i >= self.resp.cut_after:
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
            if delay:
                await asyncio.sleep(delay)
            yield chunk
        if self.resp.cut_after is not None and self.resp.cut_after >= len(self.resp.chunks):
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


class _Server:
    def __init__(self, api: ScriptedAPI, get: Callable[[BaseHTTPRequestHandler], None] | None = None, *,
                 tls: tuple[str, str] | None = None, on_connect: Callable[[], None] | None = None) -> None:
        self.api = api
        api_ref = api

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: without it each small SSE write after the first waits on the client's
            # delayed ACK (Nagle), a ~40 ms stall per answer that would swamp any timing.
            disable_nagle_algorithm = True

            def setup(self) -> None:
                if on_connect is not None:
                    on_connect()
                if tls is not None:
                    self.request.do_handshake()   # here, not in accept: on_connect sees TCP connect
                super().setup()

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if get is not None:
                    get(self)
                    return
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                req = Request(json.loads(raw or b"{}"), {k.lower(): v for k, v in self.headers.items()},
                              self.path)
                resp = api_ref._next(req)
                if resp.hold_headers:
                    time.sleep(resp.hold_headers)
                self.send_response(resp.status)
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for i, (delay, chunk) in enumerate(resp.chunks):
                        if resp.cut_after is not None and i >= resp.cut_after:
                            break
                        if delay:
                            time.sleep(delay)
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    if resp.cut_after is None:
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        scheme = "http"
        if tls is not None:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return self.url

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def iter_chunks(resp: Response) -> Iterator[bytes]:
    return (c for _, c in resp.chunks)
