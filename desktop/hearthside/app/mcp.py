"""The MCP service: the servers the user configured (``mcp.json``) and the ones packs contribute,
their secrets in the keyring, and their live sessions on the runtime thread.

The CLI and the tray call the same methods. Configuration changes are plain calls; connecting
is ``async`` and runs on the app's runtime loop (``app.runtime``), never on the Qt thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from ..adapters.atomicfile import keep_backup, write_atomic
from ..core.boundedread import read_bounded, read_text_bounded
from ..core.mcpconfig import (
    McpConfig,
    McpConfigError,
    ParsedServers,
    ServerConfig,
    ServerStatus,
    env_ref,
    header_ref,
    own_refs_prefix,
    parse_host_config,
    parse_stored,
    server_from_entry,
    split_secrets,
    validate_server,
    with_secret,
)
from ..core.safeparse import NESTED_TOO_DEEPLY
from ..core.secrets import SecretStore, SecretStoreError
from ..core.tools import Catalog, Tool
from .paths import AppPaths, ensure_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportReport:
    """What ``import FILE`` did: servers added, secrets moved, secrets still to enter."""

    added: tuple[str, ...]
    secrets_moved: int
    missing: tuple[tuple[str, str], ...]  # (server, header or env name)
    notes: tuple[str, ...] = ()
    secret_error: str = ""
    #: Every value moved into the keyring, by (server, name) only: ``Authorization``,
    #: ``SERVICE_TOKEN``, ``?api_key``, ``arg:3``.
    moved: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ImportPreview:
    """What importing a file would do, read without changing anything (the window's preview)."""

    servers: tuple[ServerConfig, ...]
    moved: tuple[tuple[str, str], ...]  # (server, header or env name) whose value goes to the keyring
    missing: tuple[tuple[str, str], ...]  # (server, name) still to be entered after the import
    clashes: tuple[str, ...]  # names that already exist: the import would be refused
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SecretInfo:
    """One secret a server uses: which header/env name, whether a value is in the keyring."""

    key: str
    kind: str  # "header" | "env"
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


F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """Run a config-changing method under :meth:`McpService.editing`."""

    @functools.wraps(method)
    def wrapper(self: McpService, *args: Any, **kwargs: Any) -> Any:
        with self.editing():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


#: An MCP host configuration is a few KiB; anything past this is not one.
MAX_IMPORT_BYTES = 4 * 1024 * 1024
#: Hearthside's own mcp.json: a few KiB for dozens of servers; far more is not this file.
MAX_MCP_BYTES = 4 * 1024 * 1024


def _regular(path: Path) -> bool:
    """Whether ``path`` (followed) is a regular file: one whose content can be kept aside."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


#: An ``envFile`` is a few lines; anything past this is not one.
MAX_ENV_FILE_BYTES = 256 * 1024


def _read_env_file(imported: Path, name: str) -> tuple[str | None, str]:
    """Read a server's ``envFile`` for an import, bounded and non-blocking. A relative name is
    taken from the imported file's folder; ``${workspaceFolder}`` is the folder holding
    ``.vscode/`` when the imported file lives in one (VS Code's layout), else the file's own."""
    base = imported.resolve().parent
    workspace = base.parent if base.name == ".vscode" else base
    name = name.replace("${workspaceFolder}", str(workspace))
    target = Path(name).expanduser()
    if not target.is_absolute():
        target = base / target
    got = read_bounded(target, MAX_ENV_FILE_BYTES)
    if got.data is None:
        return None, f"{target}: {got.reason}"
    if got.over_cap:
        return None, f"{target} is larger than {MAX_ENV_FILE_BYTES // 1024} KiB"
    try:
        return got.data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, f"{target} is not UTF-8 text"


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
    ) -> None:
        self.paths = paths
        self._secrets_factory = secrets
        self._runtime_factory = runtime
        self._contributions = contributions
        self.ping_interval = ping_interval
        self.backoff = backoff
        self.load_error = ""
        self._connections: dict[str, Any] = {}
        self.on_status: Callable[[ServerStatus], None] | None = None

    # --- configuration -----------------------------------------------------------------

    @contextlib.contextmanager
    def editing(self) -> Iterator[None]:
        """Hold ``mcp.json.lock`` while reading, changing and writing the config, so the tray
        and a CLI command changing servers at the same time cannot lose each other's change.
        Re-entrant within this service."""
        from ..adapters.locks import LockBusy, lock_for

        ensure_dir(self.paths.config_dir)
        lock = lock_for(str(self.paths.mcp_file) + ".lock")
        try:
            lock.acquire(5)
        except LockBusy as exc:
            raise McpConfigError(
                f"another Hearthside process is changing {self.paths.mcp_file} (lock "
                f"{exc.lock_file}); try again in a moment"
            ) from None
        try:
            yield
        finally:
            lock.release()

    @property
    def store(self) -> SecretStore:
        return self._secrets_factory()

    def load(self) -> McpConfig:
        """Read ``mcp.json``. A file that cannot be parsed is renamed aside (kept, never lost)
        and an empty config is used; ``load_error`` says so."""
        path = self.paths.mcp_file
        # Bounded and non-blocking: mcp.json as a FIFO or a link to /dev/zero must not hang or
        # exhaust `mcp list`, `chat` or --headless.
        text, why = read_text_bounded(path, MAX_MCP_BYTES)
        if text is None and not why:
            return McpConfig()
        if text is None and not _regular(path):  # nothing in it to keep: say so, use none
            self.load_error = f"{why}; no MCP servers of yours are used until it is a regular file"
            log.warning("mcp.json: %s", self.load_error)
            return McpConfig()
        try:
            if text is None:
                raise McpConfigError(why)
            cfg, plain = parse_stored(text)
        except (McpConfigError, RecursionError) as exc:
            if isinstance(exc, RecursionError):
                exc = McpConfigError(f"{path} is not valid JSON: {NESTED_TOO_DEEPLY}")
            backup = keep_backup(path)
            self.load_error = f"{exc}; the file was kept as {backup.name} and an empty list is used"
            log.warning("mcp.json: %s", self.load_error)
            return McpConfig()
        if plain:
            # A hand edit put a secret in the file: move it into the keyring now.
            try:
                with self.editing():
                    for ref, value in plain.items():
                        self.store.set(ref, value)
                    self.save(cfg)
                log.warning("moved %d secret(s) found in mcp.json into the keyring", len(plain))
            except SecretStoreError as exc:
                self.load_error = f"mcp.json holds secrets that could not be moved to the keyring: {exc}"
        return cfg

    def save(self, cfg: McpConfig) -> None:
        write_atomic(self.paths.mcp_file, cfg.dumps())

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
        user = list(self.load().servers)
        names = {s.name for s in user}
        return user + [cfg for cfg, _ in self.pack_servers() if cfg.name not in names]

    def get(self, name: str) -> ServerConfig:
        for s in self.servers():
            if s.name == name:
                return s
        raise McpConfigError(f"there is no MCP server named {name!r} (see 'hearthside mcp list')")

    @_locked
    def add(self, cfg: ServerConfig, secrets: Mapping[str, str] | None = None) -> ServerConfig:
        """Add a server. ``secrets`` maps header (http) or env (stdio) names to values: those
        become keyring references. Secret-shaped values given on the command line (a
        ``?api_key=`` in the URL, a DSN password or ``--token VALUE`` in the arguments) are moved
        out the same way an import moves them. The config is written first, so a keyring failure
        leaves the server configured (and disconnected, with the reason) and the secret stored
        nowhere."""
        cfg, refs = split_secrets(cfg)
        for key in secrets or {}:
            cfg, ref = with_secret(cfg, key)
            refs[ref] = (secrets or {})[key]
        validate_server(cfg)
        current = self.load()
        if any(cfg.name == c.name for c, _ in self.pack_servers()) and current.get(cfg.name) is None:
            log.info("server %s shadows a pack's server of the same name", cfg.name)
        self.save(current.with_server(cfg))
        for ref, value in refs.items():
            self.store.set(ref, value)
        return cfg

    def add_secrets_first(self, cfg: ServerConfig, secrets: Mapping[str, str]) -> ServerConfig:
        """Add a server so that a keyring failure stores nothing anywhere (the windows' way):
        the secrets are stored first; if that fails nothing is written, and if writing the
        config fails the secrets are deleted again."""
        refs = []
        for key, value in secrets.items():
            _, ref = with_secret(cfg, key)
            self.store.set(ref, value)  # raises SecretStoreError: nothing written yet
            refs.append(ref)
        try:
            return self.add(cfg, secrets)
        except BaseException:
            for ref in refs:
                with contextlib.suppress(SecretStoreError):
                    self.store.delete(ref)
            raise

    @staticmethod
    def _read_import(p: Path) -> str:
        """An MCP host file's text, bounded and non-blocking (a FIFO or /dev/zero cannot hang)."""
        got = read_bounded(p, MAX_IMPORT_BYTES)
        if got.data is None:
            raise McpConfigError(f"cannot read {p}: {got.reason}")
        if got.over_cap:
            raise McpConfigError(
                f"{p} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB; that is not an MCP "
                "configuration file, so nothing was imported")
        try:
            return got.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise McpConfigError(f"{p} is not UTF-8 text (bad byte at offset {exc.start})") from None

    @staticmethod
    def _parse_import(p: Path) -> ParsedServers:
        """Read and parse an MCP host file (the one rule for the preview and the import)."""
        text = McpService._read_import(p)
        try:
            return parse_host_config(text, what=str(p), read_env_file=functools.partial(_read_env_file, p))
        except RecursionError:
            raise McpConfigError(f"{p} is not valid JSON: {NESTED_TOO_DEEPLY}; nothing was imported") from None

    def preview_import(self, path: str | Path) -> ImportPreview:
        """What :meth:`import_file` would add and which values it would move into the keyring.
        Reads the file and the config only; nothing is written and no secret is returned."""
        p = Path(path)
        parsed = self._parse_import(p)
        current = self.load()
        moved, missing = [], []
        for cfg in parsed.servers:
            for key, ref in cfg.secret_refs().items():
                if ref in parsed.secrets:
                    moved.append((cfg.name, key))
                elif ref in parsed.missing:
                    missing.append((cfg.name, key))
        clashes = tuple(c.name for c in parsed.servers if current.get(c.name) is not None)
        return ImportPreview(tuple(parsed.servers), tuple(moved), tuple(missing), clashes,
                             tuple(parsed.notes))

    @_locked
    def import_file(self, path: str | Path) -> ImportReport:
        """Import a Claude Desktop / Cursor / VS Code file. All or nothing for the config: a bad
        file or a name clash imports nothing. The file itself is left as it is."""
        p = Path(path)
        parsed = self._parse_import(p)
        current = self.load()
        new = current
        for cfg in parsed.servers:
            if new.get(cfg.name) is not None:  # nothing written yet; "pick another name" cannot apply
                raise McpConfigError(
                    f"a server named {cfg.name!r} already exists, so nothing was imported; remove it "
                    f"first ('hearthside mcp remove {cfg.name}') and import again")
            new = new.with_server(cfg)
        self.save(new)
        secret_error = ""
        moved = 0
        try:
            for ref, value in parsed.secrets.items():
                self.store.set(ref, value)
                moved += 1
        except SecretStoreError as exc:
            secret_error = str(exc)
        missing = []
        moved_names = []
        for cfg in parsed.servers:
            for key, ref in cfg.secret_refs().items():
                if ref in parsed.missing or (secret_error and ref in parsed.secrets):
                    missing.append((cfg.name, key))
                elif ref in parsed.secrets:
                    moved_names.append((cfg.name, key))
        notes = list(parsed.notes)
        if moved:
            notes.append(
                f"{moved} secret value(s) were moved into the OS keyring, but the "
                f"plaintext copy still exists in {p}: delete it there if you no longer need it"
            )
        return ImportReport(tuple(c.name for c in parsed.servers), moved, tuple(missing),
                            tuple(notes), secret_error, tuple(moved_names))

    @_locked
    def remove(self, name: str) -> None:
        """Remove a user's server and delete its secrets from the keyring."""
        current = self.load()
        cfg = current.get(name)
        if cfg is None:
            if any(c.name == name for c, _ in self.pack_servers()):
                raise McpConfigError(
                    f"{name!r} comes from a plugin pack: disable the pack to remove it "
                    "('hearthside plugins disable PACK')"
                )
            raise McpConfigError(f"there is no MCP server named {name!r} (see 'hearthside mcp list')")
        self.save(current.without(name))
        # Loading refuses a reference to anything but the server's own secrets; checked again
        # here because deleting is the one step that cannot be undone.
        for ref in cfg.secret_refs().values():
            if ref.startswith(own_refs_prefix(name)):
                self.store.delete(ref)
            else:
                log.warning("server %s named the secret %s, which is not its own; it was left alone",
                            name, ref)

    @_locked
    def set_secret(self, name: str, key: str, value: str) -> ServerConfig:
        """Store (or rotate) the secret for header/env ``key`` of server ``name``."""
        if not value:
            raise McpConfigError("the secret is empty; nothing was stored")
        current = self.load()
        cfg = current.get(name)
        if cfg is None:
            pack = next((c for c, _ in self.pack_servers() if c.name == name), None)
            if pack is None:
                raise McpConfigError(f"there is no MCP server named {name!r} (see 'hearthside mcp list')")
            refs = {k.lower(): r for k, r in pack.secret_refs().items()}
            if key.lower() not in refs:
                raise McpConfigError(
                    f"server {name!r} (from {pack.source}) does not declare a secret {key!r}; it needs: "
                    + (", ".join(pack.secret_refs()) or "none")
                )
            self.store.set(refs[key.lower()], value)
            return pack
        if cfg.transport == "http" and not key.startswith("?"):
            from ..core.mcpconfig import check_header

            check_header(key, value)
        new, ref = with_secret(cfg, key)
        if new != cfg:
            self.save(current.with_server(new, replace_existing=True))
        self.store.set(ref, value)
        return new

    @_locked
    def set_enabled(self, name: str, enabled: bool) -> None:
        current = self.load()
        cfg = current.get(name)
        if cfg is None:
            raise McpConfigError(f"there is no MCP server named {name!r}")
        self.save(current.with_server(replace(cfg, enabled=enabled), replace_existing=True))

    def entries(self) -> list[ServerEntry]:
        """Every server with its secret needs and whether each is set. The keyring has no
        presence query, so each value is read, used only as ``is not None`` and never returned
        (reading it also registers it with the redactor)."""
        descs: dict[str, Any] = {cfg.name: c for cfg, c in self.pack_servers()}
        out = []
        for cfg in self.servers():
            contrib = descs.get(cfg.name) if cfg.source.startswith("pack:") else None
            need_desc = {n.key: n.description for n in getattr(contrib, "secrets", ())} if contrib else {}
            infos = []
            for key, ref in cfg.secret_refs().items():
                try:
                    is_set: bool | None = self.store.get(ref) is not None
                except SecretStoreError:
                    is_set = None
                kind = ("arg" if key.startswith("arg:") else "env") if cfg.transport == "stdio" \
                    else ("query" if key.startswith("?") else "header")
                infos.append(SecretInfo(key, kind, ref,
                                        is_set, need_desc.get(key, "")))
            out.append(ServerEntry(cfg, tuple(infos), getattr(contrib, "description", "") or ""))
        return out

    # --- sessions ----------------------------------------------------------------------

    def _resolve_own(self, server: str, ref: str) -> str | None:
        """Read a secret for ``server``'s connection — only one of its own (the parser already
        refuses other references; this is the last check before a value leaves the keyring)."""
        if not ref.startswith(own_refs_prefix(server)):
            raise SecretStoreError(
                f"server {server!r} asked for the secret {ref!r}, which is not its own; it was not read")
        return self._resolve(ref)

    def _resolve(self, ref: str) -> str | None:
        return self.store.get(ref)

    def _connection(self, cfg: ServerConfig, reconnect: bool = True) -> Any:
        from ..adapters.mcp_client import McpConnection

        return McpConnection(cfg, functools.partial(self._resolve_own, cfg.name), reconnect=reconnect,
                             ping_interval=self.ping_interval,
                             backoff=self.backoff, on_status=self._status_changed)

    def _status_changed(self, status: ServerStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)

    async def connect_all(self) -> list[ServerStatus]:
        """Connect every enabled server at once (each with its own timeouts) and return their
        statuses. Already connected servers are kept; removed ones are closed."""
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
                out.append(ServerStatus(cfg.name, "failed", "not connected yet", 0, cfg.transport, cfg.source))
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
        conn = self._connection(cfg, reconnect=False)
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

