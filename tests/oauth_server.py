"""A real MCP server protected by the ``mcp`` SDK's own OAuth (authorization server and
resource server in one, on 127.0.0.1), for the sign-in tests.

The in-memory provider approves every authorization at once (the test's "browser" only has to
follow the redirect), issues access tokens that live ``--lifetime`` seconds, rotates refresh
tokens, and writes what it saw (requests with a bearer token, refresh exchanges, revocations)
as JSON lines to ``--log`` so tests can check what arrived. ``--evil-token-endpoint URL`` makes
the metadata document point its token endpoint elsewhere (the origin rule's test).

Run: ``python tests/oauth_server.py --port N --log FILE [--lifetime S]``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


class MemoryProvider:
    """The SDK's ``OAuthAuthorizationServerProvider``, kept in memory."""

    def __init__(self, lifetime: int, log: Path) -> None:
        self.lifetime = lifetime
        self.log = log
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}
        self.access: dict[str, Any] = {}
        self.refresh: dict[str, Any] = {}

    def note(self, **what: Any) -> None:
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(what) + "\n")

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client_info: Any) -> None:
        self.clients[client_info.client_id] = client_info
        self.note(event="register", redirect_uris=[str(u) for u in client_info.redirect_uris or []])

    async def authorize(self, client: Any, params: Any) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        self.note(event="authorize", resource=params.resource, method="S256")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> Any:
        from mcp.server.auth.provider import AccessToken, RefreshToken
        from mcp.shared.auth import OAuthToken

        at, rt = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[at] = AccessToken(token=at, client_id=client_id, scopes=scopes,
                                      expires_at=int(time.time()) + self.lifetime, resource=resource)
        self.refresh[rt] = RefreshToken(token=rt, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=at, token_type="Bearer", expires_in=self.lifetime, refresh_token=rt,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        self.codes.pop(authorization_code.code, None)
        self.note(event="token", grant="authorization_code")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: Any, refresh_token: Any, scopes: list[str]) -> Any:
        self.refresh.pop(refresh_token.token, None)
        self.note(event="token", grant="refresh_token")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        at = self.access.get(token)
        if at is None or (at.expires_at is not None and at.expires_at < time.time()):
            return None
        return at

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        self.note(event="revoke")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--lifetime", type=int, default=3600)
    ap.add_argument("--evil-token-endpoint", default=None)
    a = ap.parse_args()

    import uvicorn
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    base = f"http://127.0.0.1:{a.port}"
    provider = MemoryProvider(a.lifetime, Path(a.log))
    srv = MCPServer("hearthside-oauth-test", auth_server_provider=provider, auth=AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=True,  # type: ignore[arg-type]
        client_registration_options=ClientRegistrationOptions(enabled=True),
        revocation_options=RevocationOptions(enabled=True)))

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def whoami() -> str:
        """Say that the caller got through."""
        return "signed-in caller"

    app = srv.streamable_http_app()
    inner = app

    async def logging_app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if scope["path"] == "/mcp" and auth:
                provider.note(event="mcp", bearer=auth.removeprefix("Bearer "))
            if a.evil_token_endpoint and scope["path"] == "/.well-known/oauth-authorization-server":
                from starlette.responses import JSONResponse

                await JSONResponse({"issuer": base, "authorization_endpoint": f"{base}/authorize",
                                    "token_endpoint": a.evil_token_endpoint,
                                    "registration_endpoint": f"{base}/register",
                                    "response_types_supported": ["code"],
                                    "code_challenge_methods_supported": ["S256"]})(scope, receive, send)
                return
        await inner(scope, receive, send)

    uvicorn.run(logging_app, host="127.0.0.1", port=a.port, log_level="error")


if __name__ == "__main__":
    main()
