"""A protected MCP server with its own loopback OAuth authorization server, written with the SDK.

Usage: python oauth_server.py http|sse PORT
The authorization server does dynamic client registration, the authorization code grant with
PKCE (checked by the SDK's token handler) and refresh tokens; its /authorize approves at once by
redirecting to the client's redirect URI (the "browser step" a test completes with httpx).
Env: GRANT_LOG — a file each grant is appended to ("register", "authorize", "code", "refresh");
DENY=1 — /authorize answers access_denied; TOKEN_TTL — access token lifetime in seconds;
PRE_CLIENT=id PRE_REDIRECT=uri — a client registered in advance, and dynamic registration off.
Tool: whoami → the client id of the token used.
"""

import os
import secrets
import sys
import time

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizeError, RefreshToken,
                                      construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

mode, port = sys.argv[1], int(sys.argv[2])
TTL = int(os.environ.get("TOKEN_TTL", "3600"))
BASE = f"http://127.0.0.1:{port}"


def log(event: str) -> None:
    if os.environ.get("GRANT_LOG"):
        with open(os.environ["GRANT_LOG"], "a") as f:
            f.write(event + "\n")


class Provider:
    def __init__(self):
        self.clients, self.codes, self.access, self.refresh = {}, {}, {}, {}
        if os.environ.get("PRE_CLIENT"):   # registered in advance; dynamic registration is off
            self.clients[os.environ["PRE_CLIENT"]] = OAuthClientInformationFull(
                client_id=os.environ["PRE_CLIENT"], redirect_uris=[os.environ["PRE_REDIRECT"]],
                token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"])

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info
        log("register")

    async def authorize(self, client, params):
        log("authorize")
        if os.environ.get("DENY"):
            raise AuthorizeError("access_denied", "the user said no")
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
                                             client_id=client.client_id, code_challenge=params.code_challenge,
                                             redirect_uri=params.redirect_uri,
                                             redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                                             resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access, refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, resource=resource,
                                          expires_at=int(time.time()) + TTL)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=TTL, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        log("code")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        log("refresh")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        return self.access.get(token)

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", ""), None)


path = "/mcp" if mode == "http" else "/sse"
server = MCPServer("protected", auth_server_provider=Provider(),
                   auth=AuthSettings(issuer_url=BASE, resource_server_url=BASE + path, validate_token_resource=False,
                                     client_registration_options=ClientRegistrationOptions(
                                         enabled=not os.environ.get("PRE_CLIENT"))))


@server.tool()
def whoami(ctx: Context) -> str:
    """Says that the caller is signed in."""
    return "signed in"


if __name__ == "__main__":
    server.run("streamable-http" if mode == "http" else "sse", host="127.0.0.1", port=port)
