"""A loopback HTTP server for the WebFetch tests: serves real HTML pages saved under
tests/fixtures/web (a rustdoc book page, Debian's users-and-groups guide, libffi's manual) plus
redirects (fixed ones, and `/redirect?to=URL` to anywhere), errors, a slow page and a large one, and
counts the hits per path."""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "web"
PAGES = {"/rustdoc.html": "rustdoc-what-is-rustdoc.html", "/debian.html": "debian-users-and-groups.html",
         "/libffi.html": "libffi-the-basics.html"}


class PageServer:
    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                server.hits[path] += 1
                port = server.port
                if path in PAGES:
                    self._send(200, (FIXTURES / PAGES[path]).read_bytes())
                elif path == "/notes.md":
                    self._send(200, b"# Notes\n\nPlain markdown, served as is.\n", "text/markdown")
                elif path == "/same-host-redirect":
                    self._send(302, b"", headers={"location": "/rustdoc.html"})
                elif path == "/redirect":
                    [to] = parse_qs(urlsplit(self.path).query)["to"]
                    self._send(302, b"", headers={"location": to})
                elif path == "/other-host-redirect":
                    self._send(301, b"", headers={"location": f"http://localhost:{port}/rustdoc.html"})
                elif path == "/big":
                    self._send(200, b"<p>" + b"x" * 200_000 + b"</p>")
                elif path == "/slow":
                    time.sleep(3)
                    self._send(200, b"<p>late</p>")
                elif path == "/image.png":
                    self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png")
                else:
                    self._send(404, b"<h1>Not Found</h1>")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> PageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
