"""The MCP connection manager: which servers exist (the user's from the config store, then the
ones packs contribute) and their live sessions on the runtime thread — connect, supervise
(ping, reconnect with backoff, status callbacks), list tools, close.

It never writes ``mcp.json``; secrets are read from the keyring one server at a time, and only
that server's own (the last check before a value leaves the keyring).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.errors import ErrorKind
from ..core.mcpconfig import (
    McpConfig,
    McpConfigError,
    ServerConfig,
    ServerStatus,
    env_ref,
    header_ref,
    own_refs_prefix,
    server_from_entry,
)
from ..core.secrets import SecretStore, SecretStoreError
from ..core.tools import Catalog, Tool
from .sandbox import SandboxPolicies

log = logging.getLogger(__name__)


class McpConnections:
    """Pack servers plus configured servers, and one supervised connection per enabled one."""

    def __init__(
        self,
        configured: Callable[[], McpConfig],
        secrets: Callable[[], SecretStore],
        contributions: Callable[[], list[Any]] | None = None,
        *,
        ping_interval: float = 15.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        oauth: Callable[[ServerConfig], Any] | None = None,
        sandbox: SandboxPolicies | None = None,
    ) -> None:
        self._configured = configured
        #: The sandbox policy of each stdio server's launch (see :mod:`.sandbox`).
        self.sandbox = sandbox
        #: A server's OAuth records in the keyring (see :mod:`.mcp_oauth`), for remote servers.
        self._oauth = oauth
        self._secrets_factory = secrets
        self._contributions = contributions
        self.ping_interval = ping_interval
        self.backoff = backoff
        self._connections: dict[str, Any] = {}
        self.on_status: Callable[[ServerStatus], None] | None = None

    # --- which servers -------------------------------------------------------------------

    def pack_servers(self) -> list[tuple[ServerConfig, Any]]:
        """Servers contributed by loaded packs, as configs with secret references."""
        out: list[tuple[ServerConfig, Any]] = []
        if self._contributions is None:
            return out
        try:
            contribs = list(self._contributions())
        except Exception as exc:  # noqa: BLE001 - packs are optional; never break MCP
            log.warning("could not read MCP servers from plugin packs: %s", exc)
            return out
        for c in contribs:
            try:
                raw = dict(c.config)
                needs = {n.key: n for n in getattr(c, "secrets", ())}
                pairs_key = "headers" if "url" in raw else "env"
                pairs = dict(raw.get(pairs_key) or {})
                for key, need in needs.items():
                    ref = header_ref(c.name, key) if need.kind == "header" else env_ref(c.name, key)
                    pairs[key] = {"secret": ref}
                raw[pairs_key] = pairs
                cfg, _, _ = server_from_entry(c.name, raw, source=f"pack:{c.pack or '?'}")
                out.append((cfg, c))
            except (McpConfigError, AttributeError, TypeError) as exc:
                log.warning("MCP server %r from pack %r is unusable: %s", getattr(c, "name", "?"),
                            getattr(c, "pack", "?"), exc)
        return out

    def servers(self) -> list[ServerConfig]:
        """Every server: the user's first, then packs' (a pack cannot shadow a user's name)."""
        user = list(self._configured().servers)
        names = {s.name for s in user}
        return user + [cfg for cfg, _ in self.pack_servers() if cfg.name not in names]

    def get(self, name: str) -> ServerConfig:
        for s in self.servers():
            if s.name == name:
                return s
        raise McpConfigError(f"there is no MCP server named {name!r}", ErrorKind.NOT_FOUND,
                             " (see 'hearthside mcp list')")

    # --- sessions ------------------------------------------------------------------------

    def _resolve_own(self, cfg: ServerConfig, ref: str) -> str | None:
        """Read a secret for ``cfg``'s connection — only one of its own (the parser already
        refuses other references; this is the last check before a value leaves the keyring),
        and for a user's server only the one stored for this very entry (its id): a secret left
        behind by an earlier entry of the same name is orphaned and reads as not set."""
        if not ref.startswith(own_refs_prefix(cfg.name)):
            raise SecretStoreError(
                f"server {cfg.name!r} asked for the secret {ref!r}, which is not its own; it was not read")
        key = cfg.keyring_key(ref)
        if key is None:
            return None
        return self._secrets_factory().get(key)

    def _connection(self, cfg: ServerConfig, reconnect: bool = True, one_off: bool = False) -> Any:
        from ..adapters.mcp_client import McpConnection

        oauth = self._oauth(cfg) if self._oauth is not None and cfg.transport == "http" else None
        return McpConnection(cfg, functools.partial(self._resolve_own, cfg), reconnect=reconnect,
                             ping_interval=self.ping_interval, backoff=self.backoff, oauth=oauth,
                             sandbox=self.sandbox.for_server if self.sandbox is not None else None,
                             on_status=self._one_off_status_changed if one_off else self._status_changed)

    def _status_changed(self, status: ServerStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)

    def _one_off_status_changed(self, status: ServerStatus) -> None:
        """A Test's connection reports what it found, but not its own "closed" at the end: that
        is not the server's state (a window showed a server just tested as "failed: closed")."""
        if status.reason != "closed":
            self._status_changed(status)

    async def connect_all(self) -> list[ServerStatus]:
        """Connect every enabled server at once (each with its own timeouts) and return their
        statuses. Already connected servers are kept; removed or changed ones are closed."""
        wanted = {s.name: s for s in self.servers()}
        for name in list(self._connections):
            conn = self._connections[name]
            if name not in wanted or wanted[name] != conn.cfg:
                await conn.close()
                del self._connections[name]
        for name, cfg in wanted.items():
            if name not in self._connections:
                self._connections[name] = self._connection(cfg)
        await asyncio.gather(*(c.start() for c in self._connections.values()))
        return self.status()

    def status(self) -> list[ServerStatus]:
        """Every server's status, in config order (servers never connected show ``failed`` with
        reason "not connected yet" unless they are disabled)."""
        out: list[ServerStatus] = []
        conns = dict(self._connections)
        for cfg in self.servers():
            conn = conns.get(cfg.name)
            if conn is not None:
                out.append(conn.status())
            elif not cfg.enabled:
                out.append(ServerStatus(cfg.name, "disabled", "disabled in mcp.json", 0, cfg.transport, cfg.source))
            else:
                out.append(ServerStatus(cfg.name, "failed", "not connected yet", 0, cfg.transport, cfg.source,
                                        kind=ErrorKind.NOT_CONNECTED_YET))
        return out

    def tools(self) -> list[Tool]:
        """Tools of every connected server, named ``mcp__<server>__<tool>``."""
        out: list[Tool] = []
        for conn in list(self._connections.values()):  # a snapshot: the runtime may change it
            out.extend(conn.tools())
        return out

    def register_into(self, catalog: Catalog) -> None:
        """Register every connected server's tools in a session's catalog (source
        ``mcp:<server>``); a clash is logged, never fatal."""
        for conn in list(self._connections.values()):
            catalog.unregister_source(f"mcp:{conn.name}")
            for t in conn.tools():
                try:
                    catalog.register(t, source=f"mcp:{conn.name}")
                except ValueError as exc:
                    log.warning("%s", exc)

    async def test(self, name: str) -> tuple[ServerStatus, list[Tool]]:
        """Connect one server once (no reconnect), list its tools, disconnect."""
        cfg = self.get(name)
        if not cfg.enabled:
            cfg = replace(cfg, enabled=True)
        conn = self._connection(cfg, reconnect=False, one_off=True)
        try:
            status = await conn.start()
            tools = conn.tools()
            return status, tools
        finally:
            await conn.close()

    async def close(self) -> None:
        """Close every session (clean MCP shutdown where possible)."""
        conns = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
