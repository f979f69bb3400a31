"""Signing in to remote MCP servers with OAuth, through the ``mcp`` SDK's own client.

The SDK's :class:`~mcp.client.auth.OAuthClientProvider` does the protocol (metadata discovery
from the 401's ``resource_metadata``, client ID metadata documents or dynamic registration,
authorization code with PKCE S256, the RFC 8707 ``resource`` parameter, refresh). This module
adds what Hearthside needs around it:

* :class:`KeyringTokenStorage` keeps tokens, the refresh token and the client registration
  only in the keyring (through the caller's :class:`OAuthRecords`, which binds them to the
  server's own references ``mcp/<server>/oauth/tokens`` and ``mcp/<server>/oauth/client``),
  registers every value with the redactor, and remembers when the access token expires and
  which token endpoint to use, so a new process refreshes silently instead of asking again.
* :class:`GuardedOAuthProvider` refuses endpoints on another site or on plain http (the SDK
  checks the issuer but not where the endpoints point), and, for a background connection,
  stops at the first 401 with :class:`SignInNeeded` instead of registering a client and
  opening a browser nobody asked for.
* :class:`LoopbackCallback` is the redirect listener: 127.0.0.1, an ephemeral port, exactly
  one callback with the right ``state``, closed after it or after its time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import ValidationError

from ..core.errors import ErrorKind, ServiceError
from ..core.loopback import is_loopback_host
from ..core.mcpconfig import SIGN_IN_TIMEOUT
from ..core.redact import register_secret

log = logging.getLogger(__name__)

#: The largest request the redirect listener reads (a callback URL is far smaller).
MAX_CALLBACK_BYTES = 16 * 1024
CLIENT_NAME = "Hearthside"


class SignInNeeded(ServiceError):
    """The server asks for an OAuth sign-in (``expired``: there was one, and it no longer works)."""

    def __init__(self, server: str, expired: bool) -> None:
        what = "its sign-in expired" if expired else "it needs you to sign in"
        super().__init__(f"{server} refused the connection: {what}",
                         ErrorKind.SIGN_IN_EXPIRED if expired else ErrorKind.SIGN_IN_NEEDED,
                         f"; sign in with 'hearthside mcp login {server}'")
        self.expired = expired


class SignInError(ServiceError):
    """A sign-in that could not go ahead, in one sentence."""


class OAuthRecords(Protocol):
    """Where one server's sign-in lives: ``what`` is ``tokens`` or ``client``; the caller binds
    each to the server's own keyring reference. Calls block (a D-Bus round trip)."""

    def read(self, what: str) -> str | None: ...

    def write(self, what: str, value: str) -> None: ...

    def delete(self, what: str) -> None: ...


def _remember(*values: str | None) -> None:
    for v in values:
        if v:
            register_secret(v)


class KeyringTokenStorage:
    """The SDK's ``TokenStorage`` over :class:`OAuthRecords` (the keyring), nothing on disk.

    ``tokens`` holds ``{"token": <OAuthToken>, "expires_at": <unix time or null>}``, or
    ``{"expired": true}`` once a refresh failed (so every process can say "sign-in expired");
    ``client`` holds ``{"client": <registration>, "metadata": <authorization server metadata>}``.
    """

    def __init__(self, records: OAuthRecords) -> None:
        self.records = records
        self.expires_at: float | None = None
        self.metadata: OAuthMetadata | None = None
        #: "needed" or "expired" when the tokens record says so instead of holding tokens
        self.marker = ""

    async def _read(self, what: str) -> dict[str, Any] | None:
        text = await asyncio.to_thread(self.records.read, what)
        if not text:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            log.warning("the stored sign-in (%s) is not readable; it is ignored", what)
            return None
        return doc if isinstance(doc, dict) else None

    async def _write(self, what: str, doc: dict[str, Any]) -> None:
        await asyncio.to_thread(self.records.write, what, json.dumps(doc))

    async def get_tokens(self) -> OAuthToken | None:
        doc = await self._read("tokens")
        self.marker = "expired" if doc and doc.get("expired") is True else "needed" if doc and doc.get("needed") else ""
        if not doc or "token" not in doc:
            return None
        try:
            token = OAuthToken.model_validate(doc["token"])
        except ValidationError:
            return None
        _remember(token.access_token, token.refresh_token)
        at = doc.get("expires_at")
        self.expires_at = float(at) if isinstance(at, int | float) else None
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _remember(tokens.access_token, tokens.refresh_token)
        self.expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        await self._write("tokens", {"token": tokens.model_dump(mode="json", exclude_none=True),
                                     "expires_at": self.expires_at})

    async def mark_expired(self) -> None:
        """Forget the tokens but remember that there was a sign-in (the row says "Sign in again")."""
        if self.marker != "expired":
            await self._write("tokens", {"expired": True})
            self.marker = "expired"

    async def mark_needed(self) -> None:
        """Remember that the server asks for a sign-in (so ``mcp list`` can say so without
        connecting). Holds no secret."""
        if self.marker not in ("expired", "needed"):
            await self._write("tokens", {"needed": True})
            self.marker = "needed"

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        doc = await self._read("client")
        if not doc or "client" not in doc:
            return None
        try:
            info = OAuthClientInformationFull.model_validate(doc["client"])
            meta = doc.get("metadata")
            self.metadata = OAuthMetadata.model_validate(meta) if isinstance(meta, dict) else None
        except ValidationError:
            return None
        _remember(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _remember(client_info.client_secret)
        await self._write("client", {"client": client_info.model_dump(mode="json", exclude_none=True),
                                     "metadata": None})

    async def set_metadata(self, metadata: OAuthMetadata) -> None:
        """Keep the authorization server's metadata with the registration, so a refresh in a
        later process goes to the token endpoint that issued the tokens."""
        doc = await self._read("client")
        if doc and "client" in doc:
            doc["metadata"] = metadata.model_dump(mode="json", exclude_none=True)
            await self._write("client", doc)
            self.metadata = metadata


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def check_endpoint(server: str, what: str, url: str, issuer: str | None) -> None:
    """Refuse an OAuth endpoint that is plain http on a non-loopback host, or (when ``issuer``
    is known) on another origin than the authorization server that names it."""
    scheme, host, _ = _origin(url)
    if scheme != "https" and not (scheme == "http" and is_loopback_host(host)):
        raise SignInError(f"the sign-in server of {server} puts its {what} at {url}, which is not https; "
                          "Hearthside refused it", ErrorKind.INVALID)
    if issuer is not None and _origin(url) != _origin(issuer):
        raise SignInError(f"the sign-in server of {server} ({issuer}) puts its {what} on another site ({url}); "
                          "Hearthside refused it", ErrorKind.INVALID)


class GuardedOAuthProvider(OAuthClientProvider):
    """The SDK's provider with Hearthside's endpoint rule and its two modes.

    ``interactive`` (``mcp login``, *Sign in…*): the full flow runs on a 401. Otherwise (every
    background connection) tokens are used and refreshed, but a 401 that asks for a sign-in
    ends the request with :class:`SignInNeeded`; a 401 without a ``resource_metadata``
    pointer is passed on as it is (a server that wants a static header, not OAuth).
    """

    def __init__(self, server: str, server_url: str, storage: KeyringTokenStorage, *,
                 redirect_uri: str = "http://127.0.0.1/callback",
                 redirect_handler: Callable[[str], Awaitable[None]] | None = None,
                 callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None) -> None:
        meta = OAuthClientMetadata(redirect_uris=[redirect_uri],  # type: ignore[list-item]
                                   client_name=CLIENT_NAME, grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none")
        super().__init__(server_url, meta, storage, redirect_handler, callback_handler)
        self.server = server
        self.storage = storage
        self.interactive = redirect_handler is not None
        self.had_tokens = False

    async def _initialize(self) -> None:
        await super()._initialize()
        self.had_tokens = self.context.current_tokens is not None
        self.context.token_expiry_time = self.storage.expires_at
        if self.storage.metadata is not None and self.context.oauth_metadata is None:
            self.context.oauth_metadata = self.storage.metadata
        if self.interactive and self.context.client_info is not None:
            registered = [str(u) for u in self.context.client_info.redirect_uris or []]
            if str(self.context.client_metadata.redirect_uris[0]) not in registered:  # type: ignore[index]
                # This sign-in listens on a new port: register again rather than send a
                # redirect the authorization server has never seen.
                self.context.client_info = None

    def _check(self, request: httpx2.Request) -> None:
        issuer = self.context.auth_server_url or None
        meta = self.context.oauth_metadata
        url = str(request.url)
        if issuer is not None:
            check_endpoint(self.server, "authorization server", issuer, None)
        if meta is not None:
            check_endpoint(self.server, "authorization endpoint", str(meta.authorization_endpoint), str(meta.issuer))
            check_endpoint(self.server, "token endpoint", str(meta.token_endpoint), str(meta.issuer))
            if meta.registration_endpoint is not None:
                check_endpoint(self.server, "registration endpoint", str(meta.registration_endpoint),
                               str(meta.issuer))
        if request.method == "POST":
            # registration and token requests: only to the authorization server's own site
            where = str(meta.issuer) if meta is not None else issuer
            check_endpoint(self.server, "token endpoint", url, where)
        else:
            check_endpoint(self.server, "metadata", url, None)

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        meta = self.context.oauth_metadata
        if meta is not None:
            check_endpoint(self.server, "authorization endpoint", str(meta.authorization_endpoint), str(meta.issuer))
        return await super()._perform_authorization_code_grant()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    self._check(outgoing)
                response = yield outgoing
                if (outgoing is request and response.status_code == 401 and not self.interactive):
                    # End the SDK's flow here, in this task (it holds a lock this task took).
                    await flow.aclose()
                    if extract_resource_metadata_from_www_auth(response) is None and not self.had_tokens:
                        return  # not an OAuth server: the caller explains the 401 itself
                    expired = self.had_tokens or self.storage.marker == "expired"
                    await (self.storage.mark_expired() if expired else self.storage.mark_needed())
                    raise SignInNeeded(self.server, expired=expired)
                outgoing = await flow.asend(response)
                meta = self.context.oauth_metadata
                if outgoing is request and meta is not None and meta is not self.storage.metadata:
                    await self.storage.set_metadata(meta)
        except StopAsyncIteration:
            return
        finally:
            # Close the SDK's flow in this task whatever ended ours (a request cancelled, a
            # stream closed): left to the garbage collector, asyncio would close it in a task of
            # its own, which then releases a lock it does not hold ("Task exception was never
            # retrieved: The current task is not holding this lock").
            await flow.aclose()


_PAGE = ("<!doctype html><meta charset=utf-8><title>Hearthside</title>"
         "<p>{}</p>")


class LoopbackCallback:
    """The redirect listener for one sign-in: 127.0.0.1, an ephemeral port, one callback.

    :meth:`expect` is given the authorization URL (the SDK chooses the ``state``); a request
    whose ``state`` is not that one (a wrong or replayed one) gets 400 and the listener keeps
    waiting. :meth:`wait` returns the code and closes the listener, or raises when the time
    limit passes first."""

    def __init__(self, timeout: float = SIGN_IN_TIMEOUT) -> None:
        self.timeout = timeout
        self._server: asyncio.Server | None = None
        self._state: str | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def expect(self, authorization_url: str) -> None:
        states = parse_qs(urlsplit(authorization_url).query).get("state") or [""]
        self._state = states[0]

    async def wait(self, server: str) -> AuthorizationCodeResult:
        assert self._result is not None
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(self._result)
        except TimeoutError:
            raise SignInError(f"the sign-in to {server} timed out: no answer came back from the browser "
                              f"within {self.timeout / 60:g} minutes", ErrorKind.TIMED_OUT) from None
        finally:
            await self.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _answer(self, writer: asyncio.StreamWriter, code: int, text: str) -> None:
        body = _PAGE.format(text).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[code]
        writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        with contextlib.suppress(Exception):
            await writer.drain()
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        if len(head) > MAX_CALLBACK_BYTES:
            await self._answer(writer, 400, "That request is too large.")
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET":
            await self._answer(writer, 400, "Not a sign-in answer.")
            return
        target = urlsplit(parts[1])
        if target.path != "/callback":
            await self._answer(writer, 404, "Not a sign-in answer.")
            return
        query = parse_qs(target.query)
        state = (query.get("state") or [""])[0]
        assert self._result is not None
        if self._state is None or self._result.done() or state != self._state:
            await self._answer(writer, 400, "This sign-in answer is not the one Hearthside is waiting for.")
            return
        if "error" in query:
            await self._answer(writer, 400, "The sign-in was refused.")
            why = (query.get("error_description") or query["error"])[0][:200]
            self._result.set_exception(SignInError(f"the sign-in server refused the sign-in: {why}",
                                                   ErrorKind.AUTHENTICATION))
            return
        code = (query.get("code") or [""])[0]
        if not code:
            await self._answer(writer, 400, "The answer carries no authorization code.")
            return
        register_secret(code)
        iss_values = query.get("iss")
        iss = iss_values[0] if iss_values else None
        await self._answer(writer, 200, "Signed in. You can close this tab and go back to Hearthside.")
        self._result.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))


async def sign_in(server: str, url: str, records: OAuthRecords, show_url: Callable[[str], None], *,
                  timeout: float = SIGN_IN_TIMEOUT, transport: httpx2.AsyncBaseTransport | None = None,
                  http_timeout: float = 30.0) -> None:
    """Sign in to the MCP server at ``url`` interactively: the SDK's flow runs on the server's
    401, ``show_url`` is given the authorization URL (print it, open a browser), the listener
    takes the callback, and the tokens land in ``records``. Raises :class:`SignInError` (or
    :class:`ServiceError`) with one sentence when it cannot finish."""
    listener = LoopbackCallback(timeout)
    await listener.start()
    storage = KeyringTokenStorage(records)

    async def redirect(authorization_url: str) -> None:
        listener.expect(authorization_url)
        show_url(authorization_url)

    async def callback() -> AuthorizationCodeResult:
        return await listener.wait(server)

    provider = GuardedOAuthProvider(server, url, storage, redirect_uri=listener.redirect_uri,
                                    redirect_handler=redirect, callback_handler=callback)
    # Any stored tokens are set aside: signing in means asking again.
    provider.context.current_tokens = None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": CLIENT_NAME, "version": "1"}}}
    try:
        async with httpx2.AsyncClient(auth=provider, follow_redirects=False, transport=transport,
                                      timeout=httpx2.Timeout(http_timeout)) as client:
            await provider._initialize()  # load the registration now, so the old tokens can be dropped
            provider.context.current_tokens = None
            response = await client.post(url, json=init, headers={
                "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
    except ServiceError:
        raise
    except httpx2.HTTPError as exc:
        raise SignInError(f"could not reach {server} to sign in: {exc}", ErrorKind.UNREACHABLE) from None
    except Exception as exc:  # noqa: BLE001 - the SDK's flow errors become one sentence
        raise SignInError(f"the sign-in to {server} failed: {exc}", ErrorKind.AUTHENTICATION) from None
    finally:
        await listener.close()
    if response.status_code in (401, 403):
        raise SignInError(f"{server} still refuses the connection after signing in (HTTP {response.status_code})",
                          ErrorKind.AUTHENTICATION)
    if await storage.get_tokens() is None:
        raise SignInError(f"{server} did not ask for a sign-in (it answered HTTP {response.status_code})",
                          ErrorKind.INVALID)


def background_auth(server: str, url: str, records: OAuthRecords) -> GuardedOAuthProvider:
    """The provider a background connection uses: stored tokens, silent refresh, no browser."""
    return GuardedOAuthProvider(server, url, KeyringTokenStorage(records))


async def revoke(records: OAuthRecords, transport: httpx2.AsyncBaseTransport | None = None) -> bool:
    """Revoke the stored tokens where the server's metadata names a revocation endpoint (best
    effort: the tokens are deleted from the keyring whatever it answers). True when asked."""
    storage = KeyringTokenStorage(records)
    token = await storage.get_tokens()
    info = await storage.get_client_info()
    meta = storage.metadata
    if token is None or info is None or meta is None or meta.revocation_endpoint is None:
        log.info("no revocation asked for (%s)", "no tokens" if token is None else "no client" if info is None
                 else "no metadata" if meta is None else "the server offers none")
        return False
    endpoint = str(meta.revocation_endpoint)
    try:
        check_endpoint("", "revocation endpoint", endpoint, str(meta.issuer))
    except SignInError:
        return False
    async with httpx2.AsyncClient(transport=transport, follow_redirects=False, timeout=httpx2.Timeout(15)) as c:
        for value, hint in ((token.refresh_token, "refresh_token"), (token.access_token, "access_token")):
            if value:
                data = {"token": value, "token_type_hint": hint, "client_id": info.client_id}
                if info.client_secret and info.token_endpoint_auth_method == "client_secret_post":
                    data["client_secret"] = info.client_secret
                try:
                    r = await c.post(endpoint, data=data)
                    if r.status_code == 400 and "client_secret" not in data:
                        # Some servers (the SDK's own among them) insist on the field even for
                        # a public client; an empty one is what such a client has.
                        r = await c.post(endpoint, data={**data, "client_secret": ""})
                except httpx2.HTTPError as exc:
                    log.warning("the revocation request failed: %s", exc)
                    continue
                if r.status_code != 200:
                    log.warning("the revocation endpoint answered HTTP %s", r.status_code)
    return True
