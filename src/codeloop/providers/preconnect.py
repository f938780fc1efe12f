"""The slow parts of an https connection, off the event loop: `TlsContext` and `Preconnect`.

`TlsContext` makes the client's TLS context once (`ssl_context`: verification as httpx does it).
Loading the CA bundle is 15-25 ms of work OpenSSL does with the GIL released, so it runs on a
worker thread, started at once: the loop's own work goes on meanwhile.

Before the first byte of a request can go over https, a client resolves the host, connects TCP and
makes its TLS context (loading the CA bundle); each costs milliseconds to round trips. `LiteClient.
preconnect` starts them at once on worker threads — a blocking resolve and connect, and OpenSSL's
bundle loading, all of which release the GIL — so they run while the caller's own code holds the
event loop (the session's assembly, in every front end). The first request then takes the
connected socket and makes the TLS handshake on the loop, under its connect deadline, as a fresh
connection would. Nothing is sent before that request.

A preconnect only ever helps: one that failed, or whose socket has waited longer than
`MAX_IDLE_S` (a server or a NAT may have dropped it without a word), is dropped and the request
connects on its own; one still in progress when the request comes is waited for at most
`WAIT_S` (the happy-eyeballs delay: a blocking connect tries addresses one at a time, so a dead
route must not hold the request), then left to close itself.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import Any

from codeloop.daemon import on_daemon_thread

MAX_IDLE_S = 60.0
WAIT_S = 0.25


def ssl_context() -> Any:
    """Verification as httpx does it by default: SSL_CERT_FILE, else SSL_CERT_DIR, else certifi."""
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _close(opened: tuple[socket.socket, float]) -> None:
    opened[0].close()   # (`_open`'s result: its socket)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read a finished future's outcome, so a failure nobody awaited is never logged as "never retrieved"."""
    if not future.cancelled():
        future.exception()


class TlsContext:
    """The TLS context, made once on a worker thread (a failure is not kept: tried again next time)."""

    def __init__(self) -> None:
        self._future = self._start()

    @staticmethod
    def _start() -> asyncio.Future[Any]:
        future = on_daemon_thread(ssl_context, name="codeloop-preconnect")
        future.add_done_callback(_retrieved)
        return future

    async def get(self) -> Any:
        if self._future.done() and (self._future.cancelled() or self._future.exception() is not None):
            self._future = self._start()
        # shielded: a cancelled connect leaves the context for the next one
        return await asyncio.shield(self._future)


def _open(host: str, port: int, timeout: float) -> tuple[socket.socket, float]:
    sock = socket.create_connection((host, port), timeout=timeout)
    return sock, time.monotonic()


def _close_result(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is None:
        _close(future.result())


class Preconnect:
    """One TCP connection being opened on a worker thread, for the first request to take."""

    def __init__(self, host: str, port: int, connect_s: float) -> None:
        self._future = on_daemon_thread(_open, host, port, connect_s, name="codeloop-preconnect",
                                        orphan=_close)
        self._future.add_done_callback(_retrieved)

    def discard(self) -> None:
        """Never to be taken: its socket is closed now, or when the thread hands it over."""
        if self._future.done():
            _close_result(self._future)
        else:
            self._future.add_done_callback(_close_result)

    async def take(self) -> socket.socket | None:
        """The connected socket, or None: connect as if there had been no preconnect."""
        future = self._future
        if not future.done():
            try:
                await asyncio.wait_for(asyncio.shield(future), WAIT_S)
            except TimeoutError:
                self.discard()
                return None
            except asyncio.CancelledError:
                self.discard()   # the request was cancelled while it waited: nothing may leak
                raise
            except OSError:
                return None
        if future.cancelled() or future.exception() is not None:
            return None
        sock, connected_at = future.result()
        if time.monotonic() - connected_at > MAX_IDLE_S:
            sock.close()
            return None
        return sock
