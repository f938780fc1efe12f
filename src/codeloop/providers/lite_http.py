"""A small HTTP/1.1 client on asyncio streams, for the model request path.

Importing httpx, building its AsyncClient and its first connection (httpcore, h11, anyio's
asyncio backend) cost about a third of codeloop's start-up before the first request could
leave. This client speaks just what a model request needs: POST a body, read the status and
headers, then stream the body (chunked, Content-Length or until close; gzip/deflate decoded),
over plain TCP or TLS, reusing idle connections. Its surface is the slice of httpx's that
`providers.transport` uses (`build_request`, `send(stream=True)`, `status_code`, `headers.get`,
`aiter_bytes`, `aclose`), so the deadlines, SSE parsing, retries and error hints are shared.

`use_lite(base_url)` says when it may stand in for httpx: no injected transport (tests' mock
transports go through httpx), an http(s) URL, and no proxy variable that applies to the host
(proxies, NO_PROXY rules and the rest stay httpx's job), unless CODELOOP_HTTP=httpx.
Failures raise this module's `TransportError` subclasses, named as httpx's, which
`providers.errors.transport_errors` turns into the same `APIConnectionError`s.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

READ_SIZE = 65536
HEAD_LIMIT = 1 << 20   # status line + headers
_PROXY_VARS = ("all_proxy", "ALL_PROXY")


class TransportError(Exception):
    """A failure below HTTP semantics (the names mirror httpx's exception classes)."""
    # True when the request surely never reached the server: a reused connection may retry it.
    before_response: bool = False


class ConnectError(TransportError):
    pass


class ConnectTimeout(TransportError):
    pass


class ReadError(TransportError):
    pass


class WriteError(TransportError):
    pass


class RemoteProtocolError(TransportError):
    pass


def _proxy_applies(scheme: str, host: str) -> bool:
    """True when a proxy variable may apply to `host`: then httpx (which implements proxies and
    every NO_PROXY form) carries the request. Only the plain NO_PROXY forms are decided here."""
    names = (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", *_PROXY_VARS)
    if not any(os.environ.get(n, "").strip() for n in names):
        return False
    no_proxy = (os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or "").strip()
    if no_proxy == "*":
        return False
    host = host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry and "://" not in entry and "/" not in entry and ":" not in entry and entry.lstrip("*.") \
                and (host == entry.lstrip("*.") or host.endswith("." + entry.lstrip("*."))):
            return False
    return True


def use_lite(base_url: str, transport: Any = None) -> bool:
    if transport is not None or os.environ.get("CODELOOP_HTTP", "").strip().lower() == "httpx":
        return False
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    return not _proxy_applies(parts.scheme, parts.hostname)


class Headers:
    """Case-insensitive response headers (repeated ones joined with ", ", as httpx reads them)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._d: dict[str, str] = {}
        for k, v in pairs:
            k = k.lower()
            self._d[k] = f"{self._d[k]}, {v}" if k in self._d else v

    def get(self, name: str, default: Any = None) -> Any:
        return self._d.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._d[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._d

    def items(self) -> list[tuple[str, str]]:
        return list(self._d.items())


class Request:
    def __init__(self, method: str, target: str, headers: dict[str, str], content: bytes) -> None:
        self.method, self.target, self.headers, self.content = method, target, headers, content


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        try:
            self.writer.close()
        except (OSError, RuntimeError):   # RuntimeError: its event loop is already closed
            pass


class Response:
    def __init__(self, client: LiteClient, conn: _Conn, status: int, headers: Headers, keep: bool,
                 method: str) -> None:
        self.status_code, self.headers = status, headers
        self._client, self._keep = client, keep
        self._conn: _Conn | None = conn   # None once closed
        self._done = method == "HEAD" or status in (204, 304)

    @property
    def reason_phrase(self) -> str:
        from http import HTTPStatus

        try:
            return HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        enc = (self.headers.get("content-encoding") or "").strip().lower()
        decoder = None
        if enc in ("gzip", "deflate", "x-gzip"):
            import zlib
            decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)   # gzip or zlib header, auto-detected
        async for raw in self._raw():
            data = decoder.decompress(raw) if decoder is not None else raw
            if data:
                yield data
        if decoder is not None and (tail := decoder.flush()):
            yield tail

    async def _raw(self) -> AsyncIterator[bytes]:
        if self._done:
            return
        assert self._conn is not None, "read after aclose()"
        reader = self._conn.reader
        try:
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                while True:
                    line = await reader.readuntil(b"\r\n")
                    try:
                        size = int(line.split(b";", 1)[0].strip(), 16)
                    except ValueError:
                        raise RemoteProtocolError("malformed chunk size in the response body") from None
                    if size == 0:
                        while (await reader.readuntil(b"\r\n")) != b"\r\n":   # trailers
                            pass
                        break
                    while size:
                        piece = await reader.read(min(size, READ_SIZE))
                        if not piece:
                            raise asyncio.IncompleteReadError(b"", size)
                        size -= len(piece)
                        yield piece
                    if await reader.readexactly(2) != b"\r\n":
                        raise RemoteProtocolError("malformed chunk end in the response body")
            elif (length := self.headers.get("content-length")) is not None:
                left = int(length)
                while left > 0:
                    piece = await reader.read(min(left, READ_SIZE))
                    if not piece:
                        raise RemoteProtocolError("peer closed connection without sending complete message body: "
                                                  f"received {int(length) - left} bytes, expected {int(length)}")
                    left -= len(piece)
                    yield piece
            else:
                self._keep = False   # the body ends when the server closes
                while piece := await reader.read(READ_SIZE):
                    yield piece
        except asyncio.IncompleteReadError:
            raise RemoteProtocolError("peer closed connection without sending complete message body: "
                                      "incomplete chunked read") from None
        except asyncio.LimitOverrunError:
            raise RemoteProtocolError("malformed chunked response body") from None
        except ValueError:
            raise RemoteProtocolError("malformed Content-Length in the response") from None
        except OSError as exc:
            raise ReadError(str(exc) or type(exc).__name__) from None
        self._done = True

    async def aread(self) -> bytes:
        return b"".join([c async for c in self.aiter_bytes()])

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and self._keep and conn.usable():
            self._client._release(conn)
        else:
            conn.close()


def _is_address(host: str) -> bool:
    """Whether `host` is an IPv4 or IPv6 address rather than a name."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except OSError:
            pass
    return False


class LiteClient:
    """POSTs to one base URL (`base_url` + a path), with default headers and a connect deadline."""

    def __init__(self, base_url: str, headers: dict[str, str], *, connect_s: float) -> None:
        parts = urlsplit(base_url)
        self.scheme, self.host = parts.scheme, parts.hostname or ""
        self.port = parts.port or (443 if self.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = self.port == (443 if self.scheme == "https" else 80)
        self._host_header = host if default_port else f"{host}:{self.port}"
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.connect_s = connect_s
        self._idle: list[_Conn] = []
        self._ssl: Any = None     # a preconnect.TlsContext, made on first https use
        self._early: Any = None   # `preconnect`'s connection (a preconnect.Preconnect), until taken

    def build_request(self, method: str, path: str, *, content: bytes = b"",
                      headers: dict[str, str] | None = None) -> Request:
        merged = {"host": self._host_header, **self.headers,
                  **{k.lower(): v for k, v in (headers or {}).items()}}
        merged["content-length"] = str(len(content))
        for k, v in merged.items():   # what h11 refuses under httpx: no header may smuggle a line break
            if any(c in f"{k}{v}" for c in "\r\n\0") or not k or ":" in k:
                raise ValueError(f"invalid HTTP header {k!r}: names and values cannot hold line breaks")
        return Request(method, self._prefix + path, merged, content)

    async def send(self, request: Request, *, stream: bool = True) -> Response:
        head = f"{request.method} {request.target} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in request.headers.items()) + "\r\n"
        wire = head.encode("latin-1") + request.content
        while True:
            conn, reused = self._take()
            if conn is None and self._early is not None:
                early, self._early = self._early, None
                conn = await self._adopt(early)
            if conn is None:
                conn = await self._connect()
            try:
                return await self._exchange(conn, wire, request.method)
            except (ReadError, WriteError, RemoteProtocolError) as exc:
                conn.close()
                # An idle connection the server had already closed: once more on a fresh one.
                if not (reused and exc.before_response):
                    raise
            except BaseException:
                conn.close()
                raise

    async def _exchange(self, conn: _Conn, wire: bytes, method: str) -> Response:
        try:
            conn.writer.write(wire)
            await conn.writer.drain()
        except OSError as exc:
            err: TransportError = WriteError(str(exc) or type(exc).__name__)
            err.before_response = True
            raise err from None
        while True:
            try:
                head = await conn.reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                err = RemoteProtocolError("Server disconnected without sending a response.")
                err.before_response = not exc.partial
                raise err from None
            except asyncio.LimitOverrunError:
                raise RemoteProtocolError("response headers too large") from None
            except OSError as exc:
                err = ReadError(str(exc) or type(exc).__name__)
                err.before_response = True
                raise err from None
            lines = head.decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code = rest.partition(" ")[0]
            if not version.startswith("HTTP/") or not code.isdigit():
                raise RemoteProtocolError(f"malformed status line: {lines[0][:80]!r}")
            status = int(code)
            if 100 <= status < 200 and status != 101:
                continue   # an interim response (100 Continue): the real one follows
            pairs = [(k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)]
            headers = Headers(pairs)
            conn_hdr = (headers.get("connection") or "").lower()
            keep = version == "HTTP/1.1" and "close" not in conn_hdr
            return Response(self, conn, status, headers, keep, method)

    def preconnect(self) -> bool:
        """Start the first connection's work now (`providers.preconnect`): the TLS context, DNS and
        TCP on worker threads while the caller's code holds the loop; the first request takes it.
        Whether it started: https only (a plain-http endpoint is a local server, no round trip to
        save). Nothing is sent before that request."""
        if self.scheme != "https" or self._early is not None or self._idle:
            return False
        from codeloop.providers.preconnect import Preconnect

        self._tls_context()   # started at once, on its thread
        self._early = Preconnect(self.host, self.port, self.connect_s)
        return True

    async def _adopt(self, early: Any) -> _Conn | None:
        """`preconnect`'s socket with its TLS handshake made, or None (connect afresh): it failed,
        went stale, or its handshake failed (a server that closed it while it waited)."""
        sock = await early.take()
        if sock is None:
            return None
        try:
            return await self._connect(sock)
        except TransportError:
            return None   # (the socket is closed)
        except BaseException:
            sock.close()   # the TLS context failed, or the request was cancelled before its handshake
            raise

    def _take(self) -> tuple[_Conn | None, bool]:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn, True
            conn.close()
        return None, False

    def _release(self, conn: _Conn) -> None:
        self._idle.append(conn)

    def _tls_context(self) -> Any:
        """The client's `preconnect.TlsContext`, made (and so started) on first use."""
        if self._ssl is None:
            from codeloop.providers.preconnect import TlsContext

            self._ssl = TlsContext()
        return self._ssl

    async def _connect(self, sock: socket.socket | None = None) -> _Conn:
        ssl_ctx = await self._tls_context().get() if self.scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_s):
                if sock is not None:   # connected already (`preconnect`): the TLS handshake only
                    reader, writer = await asyncio.open_connection(
                        sock=sock, ssl=ssl_ctx, limit=HEAD_LIMIT,
                        server_hostname=self.host if ssl_ctx is not None else None)
                    return _Conn(reader, writer)
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=ssl_ctx, limit=HEAD_LIMIT,
                    server_hostname=self.host if ssl_ctx is not None else None,
                    # happy eyeballs (as httpx's anyio backend): a dead IPv6 route does not eat the
                    # deadline; an address given as such (a local model server) has no rival to race
                    happy_eyeballs_delay=None if _is_address(self.host) else 0.25)
        except TimeoutError:
            if sock is not None:
                sock.close()
            raise ConnectTimeout(f"no connection to {self.host}:{self.port} within {self.connect_s:g}s") from None
        except OSError as exc:   # refused, unreachable, DNS failure, TLS handshake failure
            if sock is not None:
                sock.close()
            raise ConnectError(str(exc) or type(exc).__name__) from None
        return _Conn(reader, writer)

    async def aclose(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            early.discard()
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
