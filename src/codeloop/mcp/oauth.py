"""OAuth for remote MCP servers (http and sse), as the MCP authorization spec and the SDK do it.

The SDK's `OAuthClientProvider` runs the protocol on the server's 401: protected-resource and
authorization-server discovery, dynamic client registration, the authorization code grant with
PKCE, and token refresh before a request once the access token has expired. This module gives it
what is codeloop's:

* storage — one file per server under `<config dir>/mcp-oauth/` (mode 0600, folder 0700): the
  tokens with their absolute expiry, the registered client, and the loopback port its redirect
  URI names (kept, so the registration stays valid from one session to the next); a server's
  `oauth: {clientId, callbackPort}` names a pre-registered client and its port instead;
* the browser step — a one-shot listener on `http://127.0.0.1:<port>/callback`; the authorization
  URL is always printed (`on_url`), and opened in a browser only where one can open (a display,
  or macOS; never with CODELOOP_NO_BROWSER set);
* the status the `/mcp` command shows (`AuthStatus`).

Tokens live only in that file and in the HTTP client's Authorization header: never in a message,
an event or an error text, so never in a transcript. A server that needs no authorization never
sees any of this (the provider waits for a 401).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


class AuthStatus(str, Enum):
    NOT_REQUIRED = "not-required"     # stdio, a server that never asked, or one with its own header
    NEEDS_AUTH = "needs-auth"         # waiting for the browser step
    AUTHENTICATED = "authenticated"   # tokens held (refreshed as they expire)
    FAILED = "failed"                 # the authorization was refused or broke


def token_path(server: str, url: str) -> Path:
    from codeloop.config.paths import config_dir
    from codeloop.mcp.tools import sanitize

    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return config_dir() / "mcp-oauth" / f"{sanitize(server)}-{digest}.json"


class FileTokenStorage:
    """The SDK's TokenStorage on one 0600 file; expiry kept as a time, not a duration."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.callback_port: int | None = None   # saved with the registration its redirect URI names
        self.client_id: str | None = None       # a pre-registered client (config `oauth.clientId`)
        self.redirect_uri = ""

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        from codeloop.fsutil import atomic_write

        atomic_write(self.path, json.dumps(data, indent=2).encode(), mode=0o600, dir_mode=0o700)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        data = self.read()
        if not isinstance(data.get("tokens"), dict):
            return None
        tokens = OAuthToken.model_validate(data["tokens"])
        if isinstance(data.get("expires_at"), (int, float)):   # what is left of it now (may be < 0)
            tokens.expires_in = int(data["expires_at"] - time.time())
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        data = self.read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self.write(data)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        data = self.read()
        info = data.get("client_info")
        if self.client_id and (not isinstance(info, dict) or info.get("client_id") != self.client_id):
            return OAuthClientInformationFull(client_id=self.client_id, redirect_uris=[self.redirect_uri],  # type: ignore[list-item]
                                              token_endpoint_auth_method="none")
        return OAuthClientInformationFull.model_validate(info) if isinstance(info, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        data = self.read()
        data["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        data["callback_port"] = self.callback_port
        self.write(data)


def _free_port(preferred: int | None) -> int:
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the listener binds: TIME_WAIT is no conflict
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free loopback port for the OAuth callback")


class Callback:
    """A one-shot HTTP listener for the authorization server's redirect back to us."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.result: asyncio.Future[dict[str, str]] | None = None
        self.server: asyncio.Server | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        await self.stop()
        self.result = asyncio.get_running_loop().create_future()
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 30)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 30)).strip():
                pass   # the headers: nothing in them matters
            target = line.split(" ")[1] if line.count(" ") >= 2 else ""
            parts = urlsplit(target)
            found = parts.path == "/callback"
            if found and self.result is not None and not self.result.done():
                self.result.set_result({k: v[0] for k, v in parse_qs(parts.query).items()})
            body = (b"<html><body><h3>codeloop: authorization received.</h3>You can close this window.</body></html>"
                    if found else b"not found")
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                         % (200 if found else 404, b"OK" if found else b"Not Found", len(body)) + body)
            await writer.drain()
        except (TimeoutError, OSError, IndexError):
            pass
        finally:
            writer.close()

    async def wait(self) -> dict[str, str]:
        assert self.result is not None
        try:
            return await self.result
        finally:
            await self.stop()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None


def _can_open_browser() -> bool:
    if os.environ.get("CODELOOP_NO_BROWSER"):
        return False
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class ServerAuth:
    """One server's OAuth: the SDK provider, its storage and callback, and the status."""

    def __init__(self, server: str, url: str, *, on_url: Callable[[str, str], None],
                 on_browser_step: Callable[[], None] | None = None, sign_in: bool = True,
                 client_id: str | None = None, callback_port: int | None = None) -> None:
        self.server, self.url, self.on_url = server, url, on_url
        self.on_browser_step = on_browser_step      # the connection lifts its start timeout
        self.sign_in = sign_in                      # False: a server that needs the browser step is left unsigned
        self.declined = False
        self.storage = FileTokenStorage(token_path(server, url))
        stored = self.storage.read()   # nothing is written for a server that never asks for OAuth
        self.status = AuthStatus.AUTHENTICATED if stored.get("tokens") else AuthStatus.NOT_REQUIRED
        port = self.storage.callback_port = callback_port or _free_port(stored.get("callback_port"))
        if stored.get("client_info") and port != stored.get("callback_port"):
            stored.pop("client_info")   # its redirect URI names a port we cannot have: register again
            self.storage.write(stored)
        self.callback = Callback(port)
        self.storage.client_id, self.storage.redirect_uri = client_id, self.callback.redirect_uri

    def provider(self) -> Any:
        import logging

        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata

        # The SDK logs a failed flow with its traceback; the server's status line says it in one
        logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)

        auth = self

        class Provider(OAuthClientProvider):
            async def _initialize(self) -> None:
                await super()._initialize()
                # the SDK keeps expiry in memory only: tokens read back from the file carry theirs
                if self.context.current_tokens is not None and self.context.current_tokens.expires_in is not None:
                    self.context.update_token_expiry(self.context.current_tokens)

            async def _handle_token_response(self, response: Any) -> None:
                await super()._handle_token_response(response)
                auth.status = AuthStatus.AUTHENTICATED

        metadata = OAuthClientMetadata(client_name="codeloop", redirect_uris=[self.callback.redirect_uri],  # type: ignore[list-item]
                                       grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                       token_endpoint_auth_method="none")
        return Provider(self.url, metadata, self.storage, redirect_handler=self._redirect,
                        callback_handler=self._callback)

    async def _redirect(self, url: str) -> None:
        self.status = AuthStatus.NEEDS_AUTH
        if not self.sign_in:
            from mcp.client.auth import OAuthFlowError

            self.declined = True
            raise OAuthFlowError("needs authorization: sign in from an interactive codeloop session")
        if self.on_browser_step is not None:
            self.on_browser_step()
        await self.callback.start()
        self.on_url(self.server, url)
        if _can_open_browser():
            import webbrowser

            await asyncio.to_thread(webbrowser.open, url)

    async def _callback(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        params = await self.callback.wait()
        if "error" in params or not params.get("code"):
            self.status = AuthStatus.FAILED
            why = params.get("error", "no authorization code")
            detail = params.get("error_description")
            raise OAuthFlowError(f"authorization refused: {why}" + (f" ({detail})" if detail else ""))
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    def failed(self) -> None:
        if self.status is AuthStatus.NEEDS_AUTH and not self.declined:
            self.status = AuthStatus.FAILED

    def logout(self) -> None:
        """Forget the tokens and the registration (the next connection authorizes afresh)."""
        self.storage.clear()
        self.status = AuthStatus.NOT_REQUIRED


def print_url(server: str, url: str) -> None:
    """The default `on_url`: the authorization URL on stderr, one line of its own."""
    sys.stderr.write(f"MCP server {server} needs authorization. Open this URL in a browser to sign in:\n{url}\n")
    sys.stderr.flush()
