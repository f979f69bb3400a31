"""The MCP service (``AppContext.mcp``): one facade over the config store
(:mod:`.mcp_store`, ``mcp.json`` and the user's secrets) and the connection manager
(:mod:`.mcp_connections`, pack servers and live sessions).

The CLI, the tray and the MCP servers window call these methods; the two parts behind them can
change without those callers noticing. Configuration changes are plain calls; connecting is
``async`` and runs on the app's runtime loop (``app.runtime``), never on the Qt thread.

Reading never writes: :meth:`McpService.load`, :meth:`servers` and :meth:`entries` leave files and
keyring alone. :meth:`migrate_secrets` is the explicit step that moves secrets typed into
``mcp.json`` into the keyring; the app runs it at start-up and the CLI before each ``mcp`` command.
A ``mcp.json`` that does not parse is never moved: only the user's :meth:`start_over` sets it aside.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ErrorKind
from ..core.mcpconfig import SIGN_IN_TIMEOUT, McpConfig, McpConfigError, ServerConfig, ServerStatus, with_secret
from ..core.secrets import SecretStore, SecretStoreError
from ..core.tools import Catalog, Tool
from .mcp_connections import McpConnections
from .mcp_oauth import AuthState, ServerOAuthRecords
from .mcp_store import (
    FIX_OR_START_OVER,
    ImportPreview,
    ImportReport,
    McpConfigBroken,
    McpConfigStore,
    Migration,
    Orphan,
    with_entry_id,
)
from .mcpb import BundleInstaller
from .paths import AppPaths
from .sandbox import SandboxPolicies

__all__ = ["ImportPreview", "ImportReport", "McpConfigBroken", "McpService", "Migration", "Orphan", "SecretInfo",
           "ServerEntry"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SecretInfo:
    """One secret a server uses: which header/env name, whether a value is in the keyring."""

    key: str
    kind: str  # "header" | "env" | "query" | "url" (a path segment, the fragment) | "arg"
    ref: str
    is_set: bool | None  # None: the keyring could not be asked
    description: str = ""


@dataclass(frozen=True)
class ServerEntry:
    """A server as ``mcp list`` shows it (never a secret value)."""

    config: ServerConfig
    secrets: tuple[SecretInfo, ...] = ()
    description: str = ""
    notes: tuple[str, ...] = field(default=())


def _no_such_server(name: str) -> McpConfigError:
    return McpConfigError(f"there is no MCP server named {name!r}", ErrorKind.NOT_FOUND, " (see 'hearthside mcp list')")


class McpService:
    """Configured and contributed MCP servers, their secrets and their sessions."""

    def __init__(
        self,
        paths: AppPaths,
        secrets: Callable[[], SecretStore],
        runtime: Callable[[], Any] | None = None,
        contributions: Callable[[], list[Any]] | None = None,
        *,
        ping_interval: float = 15.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        sandbox: SandboxPolicies | None = None,
    ) -> None:
        self.paths = paths
        #: Every stdio server starts sandboxed: with the app's full policies when the app context
        #: gives them, else with Hearthside's own folders protected.
        self.sandbox = sandbox or SandboxPolicies.for_paths(paths)
        self._runtime_factory = runtime
        self.config = McpConfigStore(paths, secrets)
        self.connections = McpConnections(self.config.load, secrets, contributions,
                                          ping_interval=ping_interval, backoff=backoff,
                                          oauth=self.oauth_records, sandbox=self.sandbox)

    def sandbox_notice(self) -> str:
        """The one sentence about stdio servers starting without the sandbox ("" when none do)."""
        from .sandbox import notice

        return notice(self.sandbox, [s.name for s in self.servers() if s.transport == "stdio"])

    # --- the config store ----------------------------------------------------------------

    @property
    def store(self) -> SecretStore:
        return self.config.store

    @property
    def load_error(self) -> str:
        return self.config.load_error

    @property
    def broken(self) -> str:
        """Why ``mcp.json`` did not parse at the last read ("" when it did): :meth:`start_over`
        is the way out besides fixing the file."""
        return self.config.broken

    def start_over(self) -> Path:
        """Keep a broken ``mcp.json`` as ``mcp.json.broken-<time>`` and begin with no servers."""
        return self.config.start_over()

    def editing(self) -> AbstractContextManager[None]:
        return self.config.editing()

    def load(self) -> McpConfig:
        return self.config.load()

    def save(self, cfg: McpConfig) -> None:
        self.config.save(cfg)

    def migrate_secrets(self) -> Migration:
        return self.config.migrate_secrets()

    def check_add(self, cfg: ServerConfig, secret_keys: Iterable[str] = ()) -> ServerConfig:
        """Everything :meth:`add` will check that can be checked before the secret values are
        asked for (so a user does not type a token for a server that is then refused)."""
        return self.config.prepare(cfg, tuple(secret_keys))[0]

    def add(self, cfg: ServerConfig, secrets: Mapping[str, str] | None = None) -> ServerConfig:
        """Add a server. ``secrets`` maps header (http) or env (stdio) names to values: those
        become keyring references. Secret-shaped values given on the command line (a
        ``?api_key=`` in the URL, a DSN password or ``--token VALUE`` in the arguments) are moved
        out the same way an import moves them."""
        added = self.config.add(cfg, secrets)
        if any(added.name == c.name for c, _ in self.connections.pack_servers()):
            log.info("server %s shadows a pack's server of the same name", added.name)
        return added

    def add_secrets_first(self, cfg: ServerConfig, secrets: Mapping[str, str]) -> ServerConfig:
        """Add a server so that a keyring failure stores nothing anywhere (the windows' way):
        the secrets are stored first; if that fails nothing is written, and if writing the
        config fails the secrets are deleted again."""
        cfg = with_entry_id(cfg)  # the id the secrets are bound to, kept by add()
        refs = []
        for key, value in secrets.items():
            _, ref = with_secret(cfg, key)
            self.config.store_secret(cfg, ref, value)  # raises SecretStoreError: nothing written yet
            refs.append(ref)
        try:
            return self.add(cfg, secrets)
        except BaseException:
            for ref in refs:
                with contextlib.suppress(SecretStoreError):
                    self.config.delete_secret(cfg, ref)
            raise

    @property
    def bundles(self) -> BundleInstaller:
        """Installing ``.mcpb`` bundles as servers (the CLI's ``mcp install``, the window's button)."""
        return BundleInstaller(self)

    def preview_import(self, path: str | Path) -> ImportPreview:
        return self.config.preview_import(path)

    def import_file(self, path: str | Path) -> ImportReport:
        return self.config.import_file(path)

    def remove(self, name: str) -> None:
        """Remove a user's server and delete its secrets from the keyring (and the folder of
        the bundle it was installed from, see :mod:`.mcpb`)."""
        before = self.config.load().get(name)
        if self.config.remove(name):
            if before is not None:
                self.bundles.forget(before)
            return
        if any(c.name == name for c, _ in self.connections.pack_servers()):
            raise McpConfigError(
                f"{name!r} comes from a plugin pack: disable the pack to remove it "
                "('hearthside plugins disable PACK')"
            )
        raise _no_such_server(name)

    def set_secret(self, name: str, key: str, value: str) -> ServerConfig:
        """Store (or rotate) the secret for header/env ``key`` of server ``name`` (a user's
        server, or a pack's server that declares that secret)."""
        with self.config.editing():
            pack = next((c for c, _ in self.connections.pack_servers() if c.name == name), None)
            try:
                done = self.config.set_secret(name, key, value)
            except McpConfigBroken:
                if pack is None:  # a pack's secret is stored under its reference: mcp.json is not written
                    raise
                done = None
            if done is not None:
                return done
            if pack is None:
                raise _no_such_server(name)
            refs = {k.lower(): r for k, r in pack.secret_refs().items()}
            if key.lower() not in refs:
                raise McpConfigError(
                    f"server {name!r} (from {pack.source}) does not declare a secret {key!r}; it needs: "
                    + (", ".join(pack.secret_refs()) or "none")
                )
            self.store.set(refs[key.lower()], value)
            return pack

    def set_enabled(self, name: str, enabled: bool) -> None:
        self.config.set_enabled(name, enabled)

    def orphaned_secrets(self) -> list[Orphan]:
        """Secrets stored for user servers whose ``mcp.json`` entry is gone (never sent; by
        name only). Reads the keyring to skip keys whose value is gone already."""
        return self.config.orphans()

    def delete_orphaned_secrets(self) -> int:
        """Delete every orphaned secret from the keyring; returns how many were deleted."""
        return self.config.delete_orphans()

    def entries(self) -> list[ServerEntry]:
        """Every server with its secret needs and whether each is set. The keyring has no
        presence query, so each value is read, used only as ``is not None`` and never returned
        (reading it also registers it with the redactor)."""
        descs: dict[str, Any] = {cfg.name: c for cfg, c in self.connections.pack_servers()}
        out = []
        for cfg in self.servers():
            contrib = descs.get(cfg.name) if cfg.source.startswith("pack:") else None
            need_desc = {n.key: n.description for n in getattr(contrib, "secrets", ())} if contrib else {}
            infos = []
            for key, ref in cfg.secret_refs().items():
                stored_as = cfg.keyring_key(ref)
                try:
                    is_set: bool | None = stored_as is not None and self.store.get(stored_as) is not None
                except SecretStoreError:
                    is_set = None
                kind = ("arg" if key.startswith("arg:") else "env") if cfg.transport == "stdio" \
                    else ("query" if key.startswith("?") else "url" if key[:1] in "/#" else "header")
                infos.append(SecretInfo(key, kind, ref, is_set, need_desc.get(key, "")))
            out.append(ServerEntry(cfg, tuple(infos), getattr(contrib, "description", "") or ""))
        return out

    # --- the connection manager ----------------------------------------------------------

    @property
    def on_status(self) -> Callable[[ServerStatus], None] | None:
        return self.connections.on_status

    @on_status.setter
    def on_status(self, listener: Callable[[ServerStatus], None] | None) -> None:
        self.connections.on_status = listener

    @property
    def _connections(self) -> dict[str, Any]:  # the live sessions by name (tests look inside)
        return self.connections._connections

    def pack_servers(self) -> list[tuple[ServerConfig, Any]]:
        return self.connections.pack_servers()

    def servers(self) -> list[ServerConfig]:
        return self.connections.servers()

    def get(self, name: str) -> ServerConfig:
        try:
            return self.connections.get(name)
        except McpConfigError:
            if self.config.broken:  # the server may well be in the file: say why it cannot be used
                raise McpConfigBroken(f"{self.config.broken}, so none of your servers can be used: "
                                      f"{FIX_OR_START_OVER}") from None
            raise

    async def connect_all(self) -> list[ServerStatus]:
        return await self.connections.connect_all()

    def status(self) -> list[ServerStatus]:
        return self.connections.status()

    def tools(self) -> list[Tool]:
        return self.connections.tools()

    def register_into(self, catalog: Catalog) -> None:
        self.connections.register_into(catalog)

    async def test(self, name: str) -> tuple[ServerStatus, list[Tool]]:
        return await self.connections.test(name)

    async def close(self) -> None:
        await self.connections.close()

    # --- OAuth sign-in -------------------------------------------------------------------

    def oauth_records(self, cfg: ServerConfig) -> ServerOAuthRecords:
        return ServerOAuthRecords(self.config, cfg)

    def _remote(self, name: str) -> ServerConfig:
        cfg = self.get(name)
        if cfg.transport != "http":
            raise McpConfigError(f"{name} is a local (stdio) server; only remote servers sign in",
                                 ErrorKind.INVALID)
        return cfg

    def auth_state(self, cfg: ServerConfig, last_kind: ErrorKind = ErrorKind.NONE) -> AuthState:
        """"none", "needs sign-in", "signed in" or "sign-in expired" (see :mod:`.mcp_oauth`)."""
        if cfg.transport != "http":
            return "none"
        return self.oauth_records(cfg).state(last_kind)

    async def login(self, name: str, show_url: Callable[[str], None], *, timeout: float | None = None) -> None:
        """Sign in to server ``name`` (the SDK's OAuth flow, the browser given ``show_url``);
        raises a one-sentence :class:`~..core.errors.ServiceError` when it cannot finish."""
        from ..adapters.mcp_oauth import sign_in

        cfg = self._remote(name)
        await sign_in(name, cfg.url, self.oauth_records(cfg), show_url,
                      timeout=SIGN_IN_TIMEOUT if timeout is None else timeout, http_timeout=cfg.timeout)

    async def logout(self, name: str) -> bool:
        """Revoke the sign-in where the server offers revocation (best effort) and delete it
        from the keyring. True when a revocation was asked for."""
        from ..adapters.mcp_oauth import revoke

        records = self.oauth_records(self._remote(name))
        try:
            asked = await revoke(records)
        except SecretStoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - revoking is best effort; deleting is not
            log.warning("revoking the sign-in to %s failed: %s", name, exc)
            asked = False
        records.delete_all()
        return asked
