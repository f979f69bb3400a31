"""The MCP config store: the servers the user configured, in ``mcp.json``, and their secrets in
the keyring.

Reading is only reading: :meth:`McpConfigStore.load` never writes a file, renames one or touches
the keyring, so a window listing servers changes nothing on disk. Secrets typed into ``mcp.json``
by hand are moved into the keyring by the explicit :meth:`McpConfigStore.migrate_secrets` step,
which the app runs when it starts and the CLI runs before each ``hearthside mcp`` command; every
write runs it first too, under the same lock, so a write can never drop a typed-in secret.

``mcp.json`` is a file people edit by hand, so one that no longer parses (a trailing comma, a
reference to a secret that is not its server's own) is never moved or rewritten by Hearthside on
its own: the problem is reported with its line and column, no server of the user's is used, and
every write is refused until the user fixes the file or chooses :meth:`McpConfigStore.start_over`
(which keeps the broken file as ``mcp.json.broken-<time>`` and writes an empty list).

Validation of a new server lives here once (:meth:`McpConfigStore.prepare`): the CLI asks it
before prompting for secrets and :meth:`add` asks it again under the lock before writing.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import stat
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..adapters.atomicfile import keep_backup, write_atomic
from ..core.boundedread import read_text_bounded
from ..core.mcpconfig import (
    OAUTH_RECORDS,
    McpConfig,
    McpConfigError,
    ParsedServers,
    ServerConfig,
    check_header,
    oauth_ref,
    own_refs_prefix,
    parse_host_config,
    parse_stored,
    split_bound_key,
    split_secrets,
    validate_server,
    with_secret,
)
from ..core.safeparse import NESTED_TOO_DEEPLY
from ..core.secrets import SecretStore, SecretStoreError
from .mcp_secret_index import SecretIndex
from .paths import AppPaths, ensure_dir

log = logging.getLogger(__name__)

#: An MCP host configuration is a few KiB; anything past this is not one.
MAX_IMPORT_BYTES = 4 * 1024 * 1024
#: Hearthside's own mcp.json: a few KiB for dozens of servers; far more is not this file.
MAX_MCP_BYTES = 4 * 1024 * 1024

#: An ``envFile`` is a few lines; anything past this is not one.
MAX_ENV_FILE_BYTES = 256 * 1024


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
class Orphan:
    """A secret Hearthside stored for a user server whose ``mcp.json`` entry is gone: it is
    never sent (no entry has its id) and can only be deleted. ``key`` is the keyring entry."""

    ref: str  # the reference, as a user knows it: mcp/<server>/<kind>/<name>
    key: str

    @property
    def server(self) -> str:
        return self.ref.split("/")[1] if self.ref.count("/") >= 2 else ""


def new_entry_id() -> str:
    """A fresh id for a user server's ``mcp.json`` entry (see ``ServerConfig.entry``)."""
    return uuid.uuid4().hex


def with_entry_id(cfg: ServerConfig) -> ServerConfig:
    """``cfg`` with an entry id (a new one when it has none); packs' servers have none."""
    if cfg.entry or cfg.source != "user":
        return cfg
    return replace(cfg, entry=new_entry_id())


@dataclass(frozen=True)
class Migration:
    """What :meth:`McpConfigStore.migrate_secrets` did."""

    moved: int = 0  # secret values moved from mcp.json into the keyring
    error: str = ""  # why typed-in secrets are still in the file (keyring unavailable)
    warning: str = ""  # one sentence for the user when something needs their attention


def _regular(path: Path) -> bool:
    """Whether ``path`` (followed) is a regular file: one whose content can be kept aside."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class _Unusable(str):
    """Why ``mcp.json`` is not a regular file (a FIFO, a device): nothing in it to keep aside."""


#: What the user can do about an ``mcp.json`` that does not parse (the CLI's words; the window
#: offers the same as its *Start over* button).
FIX_OR_START_OVER = ("fix the file, or run 'hearthside mcp start-over' to keep it as a backup and begin "
                     "again with no servers")


class McpConfigBroken(McpConfigError):
    """A change refused because ``mcp.json`` does not parse: writing would lose what is in it."""


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
    return read_text_bounded(target, MAX_ENV_FILE_BYTES, missing_ok=False)


class McpConfigStore:
    """``mcp.json`` read, validated and written under its lock; user servers' keyring secrets."""

    def __init__(self, paths: AppPaths, secrets: Callable[[], SecretStore]) -> None:
        self.paths = paths
        self._secrets_factory = secrets
        #: A warning for the user about the last load or migration ("" when all is well).
        self.load_error = ""
        #: Why ``mcp.json`` did not parse at the last load ("" when it did): writes are refused
        #: and :meth:`start_over` is offered while it is set.
        self.broken = ""
        self.index = SecretIndex(paths.state_dir / "mcp-secrets.json")

    @property
    def store(self) -> SecretStore:
        return self._secrets_factory()

    def store_secret(self, cfg: ServerConfig, ref: str, value: str) -> None:
        """Store ``value`` for ``cfg``'s secret ``ref``: a user server's under the key bound to
        its entry id (recorded in the index), a pack server's under the reference."""
        key = cfg.keyring_key(ref)
        if key is None:
            raise McpConfigError(f"server {cfg.name!r} has no entry id yet, so its secret was not stored; try again")
        self.store.set(key, value)
        if cfg.source == "user":
            with self.editing():
                self.index.update(add=[key])

    def delete_secret(self, cfg: ServerConfig, ref: str) -> None:
        """Delete ``cfg``'s secret ``ref`` (and forget its key in the index)."""
        key = cfg.keyring_key(ref)
        if key is None:
            return
        self.store.delete(key)
        if cfg.source == "user":
            with self.editing():
                self.index.update(drop=[key])

    def orphans(self, current: McpConfig | None = None) -> list[Orphan]:
        """Secrets stored for user servers whose entry is no longer in ``mcp.json`` (deleted by
        hand, or in a file set aside), by name only. Empty while ``mcp.json`` cannot be read:
        then nothing can be told apart. A key whose value is gone from the keyring is left out."""
        cfg = current if current is not None else self.load()
        if self.load_error and not cfg.servers:
            return []
        owned = {cfg_s.keyring_key(ref) for cfg_s in cfg.servers for ref in cfg_s.secret_refs().values()}
        owned |= {cfg_s.keyring_key(oauth_ref(cfg_s.name, what)) for cfg_s in cfg.servers for what in OAUTH_RECORDS}
        out = []
        for key in self.index.stored_keys():
            if key in owned:
                continue
            ref, entry = split_bound_key(key)
            if not entry:
                continue
            if self.store.get(key) is None:
                continue
            out.append(Orphan(ref, key))
        return out

    def delete_orphans(self) -> int:
        """Delete every orphaned secret (see :meth:`orphans`); returns how many."""
        with self.editing():
            current = self._load_for_write()
            gone = self.orphans(current)
            for o in gone:
                self.store.delete(o.key)
            self.index.update(drop=[o.key for o in gone])
            if gone:
                log.info("deleted %d orphaned MCP secret(s): %s", len(gone), ", ".join(o.ref for o in gone))
            return len(gone)

    @contextlib.contextmanager
    def editing(self) -> Iterator[None]:
        """Hold ``mcp.json.lock`` while reading, changing and writing the config, so the tray
        and a CLI command changing servers at the same time cannot lose each other's change.
        Re-entrant within this process."""
        from ..adapters.locks import LockBusy, LockUnusable, lock_for

        ensure_dir(self.paths.config_dir)
        lock = lock_for(str(self.paths.mcp_file) + ".lock")
        try:
            lock.acquire(5)
        except LockBusy as exc:
            raise McpConfigError(
                f"another Hearthside process is changing {self.paths.mcp_file} (lock "
                f"{exc.lock_file}); try again in a moment"
            ) from None
        except LockUnusable as exc:
            raise McpConfigError(str(exc)) from None
        try:
            yield
        finally:
            lock.release()

    # --- reading and the explicit migration ----------------------------------------------

    def _read(self) -> tuple[McpConfig, dict[str, str]] | McpConfigError | _Unusable | None:
        """The parsed file and its typed-in secrets, the parse error, why the file is unusable,
        or None when there is none. Bounded and non-blocking: ``mcp.json`` as a FIFO or a link
        to ``/dev/zero`` must not hang or exhaust ``mcp list``, ``chat`` or --headless."""
        path = self.paths.mcp_file
        text, why = read_text_bounded(path, MAX_MCP_BYTES)
        if text is None and not why:
            return None
        if text is None and not _regular(path):
            return _Unusable(f"{why}; no MCP servers of yours are used until it is a regular file")
        try:
            if text is None:
                raise McpConfigError(why)
            return parse_stored(text)
        except McpConfigError as exc:
            return exc
        except RecursionError:
            return McpConfigError(f"{path} is not valid JSON: {NESTED_TOO_DEEPLY}")

    def load(self) -> McpConfig:
        """Read ``mcp.json`` and nothing else: no file is written or renamed, nothing goes to
        the keyring. A file that cannot be parsed reads as empty and a typed-in secret reads as
        a reference not yet filled; ``load_error`` says so until :meth:`migrate_secrets` runs."""
        got = self._read()
        if got is None:
            self.load_error = self.broken = ""
            return McpConfig()
        if isinstance(got, _Unusable):
            self.load_error, self.broken = str(got), ""
            return McpConfig()
        if isinstance(got, McpConfigError):
            self.broken = str(got)
            self.load_error = (f"{got}. No MCP server of yours is used and servers cannot be changed "
                               f"until it is fixed: {FIX_OR_START_OVER}")
            return McpConfig()
        self.broken = ""
        cfg, plain = got
        self.load_error = (
            f"mcp.json holds {len(plain)} secret value(s) typed into it; they move into the OS "
            "keyring when Hearthside starts or the next 'hearthside mcp' command runs"
        ) if plain else ""
        return cfg

    def migrate_secrets(self) -> Migration:
        """The explicit tidy-up step: move secret values typed into ``mcp.json`` into the
        keyring (the file keeps only references) and give user entries their ids. A file that
        does not parse is left exactly as it is (the user's to fix, or to :meth:`start_over`);
        the warning says why and where. With nothing to do it takes no lock and creates nothing."""
        first = self._read()
        if isinstance(first, McpConfigError):
            self.load()  # the one sentence, with the line and column
            return Migration(warning=self.load_error)
        if first is None or isinstance(first, _Unusable) or (not first[1] and all(s.entry for s in first[0].servers)):
            if not isinstance(first, _Unusable):
                self.load_error = self.broken = ""
            return Migration()
        with self.editing():
            got = self._read()
            if got is None or isinstance(got, _Unusable | McpConfigError):  # changed meanwhile: not now
                return Migration()
            cfg, plain = got
            if not plain and all(s.entry for s in cfg.servers):
                self.load_error = ""
                return Migration()
            cfg = McpConfig(tuple(with_entry_id(s) for s in cfg.servers))
            try:
                adopted = self._adopt_legacy(got[0], cfg, plain)
                for ref, value in plain.items():
                    owner = cfg.get(ref.split("/")[1])
                    key = owner.keyring_key(ref) if owner is not None else None
                    if key is None:  # the parser makes only the server's own references
                        continue
                    self.store.set(key, value)
                    adopted.append(key)
            except SecretStoreError as exc:
                self.load_error = f"mcp.json holds secrets that could not be moved to the keyring: {exc}"
                log.warning("%s", self.load_error)
                if not plain:  # only ids to give: the entries stay as they are, nothing is lost
                    return Migration(warning=self.load_error)
                return Migration(error=str(exc), warning=self.load_error)
            self.save(cfg)
            self.index.update(add=adopted, legacy_adopted=True)
            self.load_error = ""
            if plain:
                log.warning("moved %d secret(s) found in mcp.json into the keyring", len(plain))
            return Migration(moved=len(plain))

    def _adopt_legacy(self, old: McpConfig, new: McpConfig, plain: Mapping[str, str]) -> list[str]:
        """Secrets stored before entries had ids live under the bare reference. The first time
        ids are given (the index says whether that happened), each entry present then takes its
        own legacy secrets under its new id and the bare keys are deleted. Never again after: an
        entry that appears later without an id is a new entry and gets none of them."""
        if self.index.legacy_adopted():
            return []
        keys = []
        for before in old.servers:
            after = new.get(before.name)
            if before.entry or after is None:
                continue
            for ref in before.secret_refs().values():
                key = after.keyring_key(ref)
                if ref in plain or key is None or not ref.startswith(own_refs_prefix(before.name)):
                    continue
                value = self.store.get(ref)
                if value is not None:
                    self.store.set(key, value)
                    self.store.delete(ref)
                    keys.append(key)
        return keys

    def _load_for_write(self) -> McpConfig:
        """Migrate, then load — the start of every write, under :meth:`editing`. A typed-in
        secret that could not reach the keyring stops the write (it would be lost otherwise),
        and so does a file that does not parse (writing would replace what the user wrote)."""
        done = self.migrate_secrets()
        if done.error:
            raise McpConfigError(
                f"mcp.json holds secrets that could not be moved to the keyring ({done.error}); "
                "nothing was changed")
        cfg = self.load()
        if self.broken:
            raise McpConfigBroken(f"{self.broken}, so nothing was changed: {FIX_OR_START_OVER}")
        return cfg

    def start_over(self) -> Path:
        """The user's choice for an ``mcp.json`` that does not parse: keep it as
        ``mcp.json.broken-<time>`` (mode 0600: it may hold a pasted secret) and write an empty
        list. Refused while the file parses, so it can never drop working servers. Secrets of
        the servers in the old file become orphans (listed, never sent, deletable)."""
        with self.editing():
            got = self._read()
            if not isinstance(got, McpConfigError) or not _regular(self.paths.mcp_file):
                self.load()
                raise McpConfigError(
                    f"{self.paths.mcp_file} has no problem to start over from, so nothing was changed"
                    + (f" ({self.load_error})" if self.load_error else ""))
            backup = keep_backup(self.paths.mcp_file)
            self.save(McpConfig())
            self.load_error = self.broken = ""
            log.info("mcp.json did not parse (%s); kept it as %s and started with no servers", got, backup.name)
            return backup

    def save(self, cfg: McpConfig) -> None:
        """Write ``mcp.json`` (under :meth:`editing`). Every user entry written has an id."""
        cfg = McpConfig(tuple(with_entry_id(s) for s in cfg.servers))
        write_atomic(self.paths.mcp_file, cfg.dumps())

    # --- changes -------------------------------------------------------------------------

    def prepare(self, cfg: ServerConfig, secrets: Mapping[str, str] | Iterable[str] = (),
                current: McpConfig | None = None) -> tuple[ServerConfig, dict[str, str]]:
        """Validate a new server: its shape, the secrets it will ask for (names, and values when
        given as a mapping), and that its name is free. Returns the config as stored (secret
        values replaced by references) and ``{ref: value}`` for the keyring — the values given
        plus the secret-shaped ones moved out of the URL or the arguments."""
        cfg, refs = split_secrets(cfg)
        values = dict(secrets) if isinstance(secrets, Mapping) else dict.fromkeys(secrets, "")
        for key, value in values.items():
            cfg, ref = with_secret(cfg, key)
            if cfg.transport == "http" and not key.startswith(("?", "/", "#")):
                check_header(key, value)
            if isinstance(secrets, Mapping):
                refs[ref] = value
        validate_server(cfg)
        if (current if current is not None else self.load()).get(cfg.name) is not None:
            raise McpConfigError(
                f"a server named {cfg.name!r} already exists: remove it first or pick another name")
        return cfg, refs

    def add(self, cfg: ServerConfig, secrets: Mapping[str, str] | None = None) -> ServerConfig:
        """Add a user's server (see :meth:`prepare`). The config is written first, so a keyring
        failure leaves the server configured (and disconnected, with the reason) and the secret
        stored nowhere."""
        with self.editing():
            current = self._load_for_write()
            cfg, refs = self.prepare(cfg, secrets or {}, current)
            cfg = with_entry_id(cfg)
            self.save(current.with_server(cfg))
            for ref, value in refs.items():
                self.store_secret(cfg, ref, value)
            return cfg

    @staticmethod
    def _read_import(p: Path) -> str:
        """An MCP host file's text, bounded and non-blocking (a FIFO or /dev/zero cannot hang)."""
        text, why = read_text_bounded(p, MAX_IMPORT_BYTES, missing_ok=False)
        if text is None:
            raise McpConfigError(f"{why}; nothing was imported")
        return text

    @staticmethod
    def _parse_import(p: Path) -> ParsedServers:
        """Read and parse an MCP host file (the one rule for the preview and the import)."""
        text = McpConfigStore._read_import(p)
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

    def import_file(self, path: str | Path) -> ImportReport:
        """Import a Claude Desktop / Cursor / VS Code file. All or nothing for the config: a bad
        file or a name clash imports nothing. The file itself is left as it is."""
        p = Path(path)
        parsed = self._parse_import(p)
        with self.editing():
            new = self._load_for_write()
            for cfg in parsed.servers:
                if new.get(cfg.name) is not None:  # nothing written yet; "pick another name" cannot apply
                    raise McpConfigError(
                        f"a server named {cfg.name!r} already exists, so nothing was imported; remove it "
                        f"first ('hearthside mcp remove {cfg.name}') and import again")
                new = new.with_server(with_entry_id(cfg))
            self.save(new)
            secret_error = ""
            moved = 0
            try:
                for ref, value in parsed.secrets.items():
                    owner = new.get(ref.split("/")[1])
                    if owner is None:  # the parser makes only each server's own references
                        continue
                    self.store_secret(owner, ref, value)
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

    def remove(self, name: str) -> bool:
        """Remove a user's server and delete its own secrets from the keyring; False when no
        user server has that name (nothing changed)."""
        with self.editing():
            current = self._load_for_write()
            cfg = current.get(name)
            if cfg is None:
                return False
            self.save(current.without(name))
            # Loading refuses a reference to anything but the server's own secrets; checked again
            # here because deleting is the one step that cannot be undone.
            for ref in cfg.secret_refs().values():
                if ref.startswith(own_refs_prefix(name)):
                    self.delete_secret(cfg, ref)
                else:
                    log.warning("server %s named the secret %s, which is not its own; it was left alone",
                                name, ref)
            for what in OAUTH_RECORDS:  # its OAuth sign-in, if it had one
                self.delete_secret(cfg, oauth_ref(name, what))
            return True

    def set_secret(self, name: str, key: str, value: str) -> ServerConfig | None:
        """Store (or rotate) the secret for header/env ``key`` of the user's server ``name``;
        None when no user server has that name (nothing changed)."""
        if not value:
            raise McpConfigError("the secret is empty; nothing was stored")
        with self.editing():
            current = self._load_for_write()
            cfg = current.get(name)
            if cfg is None:
                return None
            if cfg.transport == "http" and not key.startswith(("?", "/", "#")):
                check_header(key, value)
            new, ref = with_secret(cfg, key)
            if new != cfg:
                self.save(current.with_server(new, replace_existing=True))
            self.store_secret(new, ref, value)
            return new

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self.editing():
            current = self._load_for_write()
            cfg = current.get(name)
            if cfg is None:
                raise McpConfigError(f"there is no MCP server named {name!r}")
            self.save(current.with_server(replace(cfg, enabled=enabled), replace_existing=True))
