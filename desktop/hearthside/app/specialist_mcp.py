"""A specialist's own MCP servers: the inline streamable-HTTP servers of its agent file.

They are connected when the specialist starts its task and closed when it finishes, through
the same client as every configured server (:class:`~hearthside.adapters.mcp_client.McpConnection`:
headers bound to the server's origin, no redirects followed, results bounded and redacted).
Their tools are named like every MCP tool (``mcp__<server>__<tool>``) and go to that specialist
only: they never enter the persona's catalog, so the main conversation never sees them.

A header value comes from the listing (:mod:`hearthside.app.agents` read it from the keyring,
or moved a literal one there); it is handed to the connection as a secret reference resolved
in memory, so it is registered for redaction and sent only to the server's own origin. A plain
``http://`` URL that is not on this computer is refused, with or without headers: a
specialist's traffic to another machine must be encrypted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.agentdefs import AgentDef, AgentMCPServer
from ..core.loopback import is_loopback_host
from ..core.mcpconfig import McpConfigError, SecretRef, ServerConfig, check_url, origin_of
from ..core.session import escape_line
from ..core.subagent import OpenedServers
from ..core.tools import Tool

if TYPE_CHECKING:
    from ..adapters.mcp_client import McpConnection

log = logging.getLogger(__name__)

#: Seconds one inline server may take to connect before the specialist goes on without it.
CONNECT_TIMEOUT = 30.0


def refusal(server: AgentMCPServer) -> str:
    """Why an inline server is not connected ("" when it may be)."""
    try:
        check_url(server.url)
    except McpConfigError as exc:
        return str(exc)
    scheme, host, _ = origin_of(server.url)
    if scheme != "https" and not is_loopback_host(host):
        return (f"its URL uses plain http to {host}, which is not this computer; a specialist's server "
                "must use https (or http on this computer)")
    return ""


def server_config(server: AgentMCPServer) -> tuple[ServerConfig, dict[str, str]]:
    """The connection's config (each header a secret reference) and the values behind the references."""
    values: dict[str, str] = {}
    headers: dict[str, str | SecretRef] = {}
    for i, (name, value) in enumerate(server.headers):
        ref = f"specialist/{server.name}/header/{i}"
        values[ref] = value
        headers[name] = SecretRef(ref)
    cfg = ServerConfig(server.name, "http", url=server.url, headers=headers, source="specialist")
    return cfg, values


class SpecialistServerConnector:
    """The app's :class:`~hearthside.core.subagent.SpecialistServers`: opens a specialist's
    inline servers for one task and closes them after it."""

    def __init__(self, timeout: float = CONNECT_TIMEOUT) -> None:
        self.timeout = timeout

    async def open(self, spec: AgentDef, servers: Sequence[AgentMCPServer]) -> OpenedServers:
        from ..adapters.mcp_client import McpConnection

        conns: list[McpConnection] = []
        tools: list[Tool] = []
        notes: list[str] = []

        async def close() -> None:
            for c in conns:
                with contextlib.suppress(Exception):
                    await c.close()

        try:
            for server in servers:
                shown = escape_line(server.name)
                why = refusal(server)
                if why:
                    notes.append(f"its MCP server {shown} was not connected: {why}")
                    continue
                cfg, values = server_config(server)
                conn = McpConnection(cfg, values.get, reconnect=False)
                conns.append(conn)
                try:
                    async with asyncio.timeout(self.timeout):
                        status = await conn.start()
                except TimeoutError:
                    notes.append(f"its MCP server {shown} did not connect within {self.timeout:g} seconds")
                    continue
                if status.state != "connected":
                    notes.append(f"its MCP server {shown} could not be connected: {status.told or status.state}")
                    continue
                tools.extend(conn.tools())
                log.info("specialist %s: its MCP server %s connected (%d tools)", spec.name, server.name,
                         len(conn.tools()))
        except BaseException:
            await asyncio.shield(close())
            raise
        return OpenedServers(tuple(tools), tuple(notes), close if conns else None)
