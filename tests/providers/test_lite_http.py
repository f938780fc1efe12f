"""providers.lite_http against real loopback servers: body framings, keep-alive, failures, and
when it stands in for httpx."""

from __future__ import annotations

import asyncio
import gzip
import socket

import pytest

from codeloop.providers import lite_http
from codeloop.providers.errors import APIConnectionError, transport_errors
from codeloop.providers.lite_http import LiteClient, use_lite


class RawServer:
    """A loopback server answering each request with the next scripted raw bytes (then closing
    the connection if the script says so); records every request head and body."""

    def __init__(self, *answers: tuple[bytes, bool]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, bytes]] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next((int(ln.split(":", 1)[1]) for ln in head.split("\r\n")
                               if ln.lower().startswith("content-length:")), 0)
                self.requests.append((head, await reader.readexactly(length)))
                raw, close = self.answers.pop(0)
                writer.write(raw)
                await writer.drain()
                if close:
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.server.close()


def chunked(*parts: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    body = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"
    return f"HTTP/1.1 {status}\r\ntransfer-encoding: chunked\r\n{extra}\r\n".encode() + body


async def post(client: LiteClient, body: bytes = b"{}", headers: dict | None = None) -> tuple[int, bytes, object]:
    resp = await client.send(client.build_request("POST", "/v1/messages", content=body, headers=headers))
    try:
        return resp.status_code, await resp.aread(), resp.headers
    finally:
        await resp.aclose()


async def test_chunked_body_headers_and_request_shape():
    srv = RawServer((chunked(b"event: a\n", b"data: 1\n\n", extra="X-Request-Id: r1\r\n"), False))
    async with srv as url:
        client = LiteClient(url + "/prefix/", {"X-Api-Key": "k"}, connect_s=5)
        status, body, headers = await post(client, b'{"a":1}', {"anthropic-beta": "b1"})
        await client.aclose()
    assert (status, body) == (200, b"event: a\ndata: 1\n\n")
    assert (headers.get("x-request-id"), headers["X-REQUEST-ID"]) == ("r1", "r1")
    head, sent = srv.requests[0]
    assert head.startswith("POST /prefix/v1/messages HTTP/1.1\r\n") and sent == b'{"a":1}'
    lines = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in head.split("\r\n")[1:] if ln}
    assert lines["host"] == url.removeprefix("http://") and lines["x-api-key"] == "k"
    assert lines["anthropic-beta"] == "b1" and lines["content-length"] == "7"


async def test_keep_alive_reuses_the_connection_and_content_length_bodies():
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"
    srv = RawServer((ok, False), (ok, False))
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        assert (await post(client))[1] == b"hi" and (await post(client))[1] == b"hi"
        await client.aclose()
    assert srv.connections == 1 and len(srv.requests) == 2


async def test_a_stale_idle_connection_is_replaced_once():
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"
    srv = RawServer((ok, True), (ok, True))   # the server closes after each answer without saying so
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        assert (await post(client))[1] == b"hi"
        await asyncio.sleep(0.05)
        assert (await post(client))[1] == b"hi"
        await client.aclose()
    assert srv.connections == 2


async def test_body_until_close_gzip_and_interim_responses():
    packed = gzip.compress(b"hello world")
    srv = RawServer((b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n"
                     b"connection: close\r\n\r\n" + packed, True))
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        status, body, _ = await post(client)
        await client.aclose()
    assert (status, body) == (200, b"hello world")


async def test_error_status_body_is_read():
    srv = RawServer((b'HTTP/1.1 529 Overloaded\r\ncontent-length: 13\r\n\r\n{"error":{}}\n', False))
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        status, body, _ = await post(client)
        await client.aclose()
    assert (status, body) == (529, b'{"error":{}}\n')


async def test_a_cut_body_is_a_dropped_connection():
    srv = RawServer((b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab", True))
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        with pytest.raises(APIConnectionError, match=f"connection to {url} dropped: peer closed") as info:
            with transport_errors(url):
                await post(client)
        await client.aclose()
    assert info.value.mid_stream


async def test_refused_connection_names_the_url():
    srv = RawServer()
    async with srv as url:
        pass   # closed: nothing listens on that port any more
    client = LiteClient(url, {}, connect_s=5)
    with pytest.raises(APIConnectionError, match=f"could not connect to {url}") as info:
        with transport_errors(url):
            await post(client)
    assert not info.value.mid_stream


async def test_connect_deadline(monkeypatch):
    async def never(*a, **kw):
        await asyncio.sleep(3600)

    monkeypatch.setattr(lite_http.asyncio, "open_connection", never)
    client = LiteClient("http://127.0.0.1:1", {}, connect_s=0.05)
    with pytest.raises(APIConnectionError, match=r"timed out \(ConnectTimeout\)"):
        with transport_errors("http://127.0.0.1:1"):
            await post(client)


@pytest.mark.parametrize("url, delay", [("http://127.0.0.1:1", None), ("http://[::1]:1", None),
                                        ("http://localhost:1", 0.25), ("https://api.anthropic.com", 0.25)])
async def test_happy_eyeballs_races_the_addresses_of_a_name_only(monkeypatch, url, delay):
    seen = []

    async def record(host, port, **kw):
        seen.append((host, kw["happy_eyeballs_delay"]))
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(lite_http.asyncio, "open_connection", record)
    client = LiteClient(url, {}, connect_s=5)
    with pytest.raises(APIConnectionError):
        with transport_errors(url):
            await post(client)
    assert [d for _, d in seen] == [delay] and seen[0][0] in url


@pytest.mark.parametrize("env,url,lite", [
    ({}, "https://api.anthropic.com", True),
    ({}, "http://127.0.0.1:8080/x", True),
    ({"CODELOOP_HTTP": "httpx"}, "https://api.anthropic.com", False),
    ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.anthropic.com", False),
    ({"https_proxy": "http://proxy:3128"}, "http://127.0.0.1:8080", True),     # scheme-specific
    ({"ALL_PROXY": "http://proxy:3128"}, "http://127.0.0.1:8080", False),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "anthropic.com"}, "https://api.anthropic.com", True),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://api.anthropic.com", True),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://api.anthropic.com", False),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "https://api.anthropic.com", False),
    ({}, "ftp://host", False),
])
def test_when_the_lite_client_is_used(monkeypatch, env, url, lite):
    for name in ("CODELOOP_HTTP", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                 "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert use_lite(url) is lite
    assert use_lite(url, transport=object()) is False


def _self_signed(tmp_path) -> tuple[str, str]:
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory) -> tuple[str, str]:
    """One test certificate and key for the module's https servers (a key is slow to make)."""
    return _self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def trusted(tls_pair, monkeypatch) -> tuple[str, str]:
    """The test certificate, trusted by the client (SSL_CERT_FILE, as httpx reads it)."""
    monkeypatch.setenv("SSL_CERT_FILE", tls_pair[0])
    return tls_pair


async def test_https_verifies_the_server_against_the_configured_cas(tmp_path, monkeypatch):
    import ssl

    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    srv = RawServer((b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", True),
                    (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", True))
    server = await asyncio.start_server(srv.handle, "127.0.0.1", 0, ssl=server_ctx)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.setenv("SSL_CERT_FILE", cert)   # as httpx: SSL_CERT_FILE names the trusted CAs
        client = LiteClient(url, {}, connect_s=5)
        assert (await post(client))[:2] == (200, b"ok")
        await client.aclose()
        monkeypatch.delenv("SSL_CERT_FILE")          # certifi's CAs do not know this server
        client = LiteClient(url, {}, connect_s=5)
        with pytest.raises(APIConnectionError, match=f"could not connect to {url}: .*CERTIFICATE_VERIFY_FAILED"):
            with transport_errors(url):
                await post(client)
        await client.aclose()
    finally:
        server.close()


def test_a_header_cannot_smuggle_a_line_break():
    client = LiteClient("http://127.0.0.1:1", {"x-api-key": "k\r\nx-evil: 1"}, connect_s=5)
    with pytest.raises(ValueError, match="line breaks"):
        client.build_request("POST", "/v1/messages", content=b"{}")


class _TLSServer(RawServer):
    """RawServer over TLS, behind a TCP relay that counts the connections made to it (a TLS server
    sees a connection only once its handshake is done; the relay sees it when TCP connects)."""

    def __init__(self, cert: str, key: str, *answers: tuple[bytes, bool]) -> None:
        super().__init__(*answers)
        self.cert, self.key = cert, key
        self.tcp = 0
        self.tcp_seen = asyncio.Event()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tcp += 1
        self.tcp_seen.set()
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.tls_port)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except OSError:
                pass
            w.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def __aenter__(self) -> str:
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=ctx)
        self.tls_port = self.server.sockets[0].getsockname()[1]
        self.relay = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"https://127.0.0.1:{self.relay.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.relay.close()
        await super().__aexit__(*exc)


_OK = (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", True)


async def _preconnected(client: LiteClient) -> None:
    """Until the preconnect's thread has connected (or failed)."""
    await asyncio.wait([client._early._future], timeout=30)


async def _preconnected_socket(url: str) -> tuple[LiteClient, socket.socket]:
    """A client for `url` whose preconnect has connected, and that connection's socket."""
    client = LiteClient(url, {}, connect_s=5)
    client.preconnect()
    await _preconnected(client)
    return client, client._early._future.result()[0]


async def test_preconnect_connects_before_the_request_which_takes_the_connection(trusted):
    cert, key = trusted
    srv = _TLSServer(cert, key, _OK)
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        assert client.preconnect() is True
        assert client.preconnect() is False   # a second call opens nothing more
        # TCP is connected with no request made, without the loop doing anything for it
        await asyncio.wait_for(srv.tcp_seen.wait(), 30)
        await _preconnected(client)
        assert srv.requests == []
        assert (await post(client))[:2] == (200, b"ok")
        assert srv.tcp == 1   # the request went on the preconnected connection
        await client.aclose()


async def test_a_stale_preconnected_connection_is_not_used(trusted, monkeypatch):
    from codeloop.providers import preconnect

    cert, key = trusted
    monkeypatch.setattr(preconnect, "MAX_IDLE_S", -1.0)   # whatever waited is too old
    srv = _TLSServer(cert, key, _OK)
    async with srv as url:
        client, sock = await _preconnected_socket(url)
        assert (await post(client))[:2] == (200, b"ok")
        assert srv.tcp == 2 and len(srv.requests) == 1 and sock.fileno() == -1   # closed, not leaked
        await client.aclose()


async def test_a_failed_preconnect_is_dropped_and_the_request_connects_itself(trusted):
    import gc
    import socket
    import ssl

    cert, key = trusted
    loop = asyncio.get_running_loop()
    reported: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))   # bound, not listening yet: a connect is refused
    url = f"https://127.0.0.1:{listener.getsockname()[1]}"
    client = LiteClient(url, {}, connect_s=5)
    client.preconnect()
    await _preconnected(client)
    assert isinstance(client._early._future.exception(), ConnectionRefusedError)
    # the server comes up after the preconnect failed (codeloop started offline, say)
    listener.listen()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = RawServer(_OK)
    server = await asyncio.start_server(srv.handle, sock=listener, ssl=ctx)
    try:
        assert (await post(client))[:2] == (200, b"ok")
    finally:
        server.close()
    # a client closed with a failed preconnect it never used: nothing is logged either
    other = LiteClient("https://127.0.0.1:9", {}, connect_s=5)
    other.preconnect()
    await _preconnected(other)
    await other.aclose()
    await client.aclose()
    gc.collect()
    assert reported == []


async def test_a_client_closed_before_its_first_request_closes_the_preconnected_socket(trusted):
    cert, key = trusted
    srv = _TLSServer(cert, key, _OK)
    async with srv as url:
        client, sock = await _preconnected_socket(url)
        await client.aclose()
        assert sock.fileno() == -1


async def test_plain_http_is_not_preconnected():
    srv = RawServer(_OK)
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        assert client.preconnect() is False   # a local server: no round trip to save
        assert (await post(client))[:2] == (200, b"ok")
        assert srv.connections == 1
        await client.aclose()


async def test_the_tls_context_is_made_off_the_loop_and_a_failed_one_is_not_kept(tls_pair, tmp_path, monkeypatch):
    import threading

    cert, key = tls_pair
    made_on: list[str] = []
    from codeloop.providers import preconnect

    real = preconnect.ssl_context

    def recording():
        made_on.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(preconnect, "ssl_context", recording)
    srv = _TLSServer(cert, key, _OK, _OK)
    async with srv as url:
        client = LiteClient(url, {}, connect_s=5)
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        with pytest.raises(OSError):
            await post(client)
        monkeypatch.setenv("SSL_CERT_FILE", cert)   # fixed: the next request makes the context again
        assert (await post(client))[:2] == (200, b"ok")
        assert (await post(client))[:2] == (200, b"ok")   # made once, then kept
        await client.aclose()
    assert len(made_on) == 2 and threading.main_thread().name not in made_on


_HANGING_PRECONNECT = """
import asyncio, threading
from codeloop.providers import lite_http, preconnect

preconnect._open = lambda *a: threading.Event().wait()   # a connect that never ends (a black-holed route)
preconnect.ssl_context = lambda: threading.Event().wait()

async def main():
    client = lite_http.LiteClient("https://127.0.0.1:9", {}, connect_s=5)
    client.preconnect()
    await client.aclose()

asyncio.run(main())
print("returned")
"""


def test_a_hanging_preconnect_does_not_hold_asyncio_run_at_exit():
    """A library user's `asyncio.run` joins the loop's executor threads before it returns; the
    preconnect's threads are not the executor's, so a connect that hangs never holds the program."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _HANGING_PRECONNECT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "returned"


async def test_a_preconnected_socket_is_closed_when_its_tls_context_cannot_be_made(tls_pair, tmp_path, monkeypatch):
    cert, key = tls_pair
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    srv = _TLSServer(cert, key, _OK)
    async with srv as url:
        client, sock = await _preconnected_socket(url)
        with pytest.raises(OSError):
            await post(client)
        assert sock.fileno() == -1   # not left open behind the error
        await client.aclose()
