"""Where a pack keeps its own things (plugin API 1.1): folders, secrets in the keyring, a config.

Packs re-implementing these each on their own is how a cache lands in a persona folder, a
password in a JSON file, or a config half-written by two processes. So the plugin API hands
every pack the same four helpers, built on Hearthside's own parts: the folders beside
Hearthside's data and cache (private, outside every persona folder), the keyring adapter (a
recommended backend only, every value registered with the redactor), and a JSON document
written atomically under the one file lock per path (``adapters.locks``), read bounded and
without blocking (``core.boundedread``).
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from ..adapters.atomicfile import write_atomic
from ..adapters.locks import LockBusy, LockUnusable, lock_for
from ..core.boundedread import read_text_bounded
from ..core.redact import contains_known_secret
from ..core.secrets import SecretStoreError

APP_NAME = "hearthside"

#: A pack's name as the helpers take it: its entry-point name.
PACK_NAME_RX = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
#: A secret's name within its pack (``caldav/work``, ``brave.key``).
SECRET_NAME_RX = re.compile(r"^[a-z0-9][a-z0-9._/-]{0,127}$")

#: The largest config a pack may keep: a list of calendars or feeds, not a database.
CONFIG_CAP = 4 * 1024 * 1024
#: How long ``update`` waits for another process (or thread) holding the config's lock.
LOCK_TIMEOUT = 10.0


def _check_pack(pack: object) -> str:
    if not isinstance(pack, str) or not PACK_NAME_RX.fullmatch(pack):
        raise ValueError(f"{pack!r:.80} is not a pack name: use the pack's entry-point name "
                         "(1-64 lowercase letters, digits and '-', starting with a letter or digit)")
    return pack


def _private_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) private to the user; refuse a link or a non-folder."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{path} is not a folder (a link or a file is in its place); "
                                 "remove it and try again")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def data_root() -> Path:
    """``$XDG_DATA_HOME/hearthside/pack-data``: the parent of every pack's data folder."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False, roaming=True)) / "pack-data"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/hearthside``: the parent of every pack's cache folder."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def pack_data_dir(pack: str) -> Path:
    """The pack's private data folder (created, mode 0700): ``$XDG_DATA_HOME/hearthside/
    pack-data/<pack>/``. For what must survive: a seen-items record, the pack's config."""
    return _private_dir(data_root() / _check_pack(pack))


def pack_cache_dir(pack: str) -> Path:
    """The pack's private cache folder (created, mode 0700): ``$XDG_CACHE_HOME/hearthside/
    <pack>/``. For what may be lost and fetched again: downloaded calendars, feed bodies."""
    return _private_dir(cache_root() / _check_pack(pack))


# -- secrets ---------------------------------------------------------------------------------


class PackSecretError(Exception):
    """The keyring cannot be used; the message is one sentence saying what to install or unlock."""


class PackSecrets(Protocol):
    """A pack's secrets in the OS keyring (service ``hearthside``, key ``pack/<pack>/<name>``).
    Every value read or stored is registered with Hearthside's redactor, so it never reaches a
    log, an output or the model."""

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


_store: Any = None
_store_guard = threading.Lock()


def _keyring_store() -> Any:
    """The process's keyring store (created on first use; its backend is chosen once)."""
    global _store
    with _store_guard:
        if _store is None:
            from ..adapters.secrets import KeyringSecretStore

            _store = KeyringSecretStore()
        return _store


class KeyringPackSecrets:
    """:class:`PackSecrets` over Hearthside's keyring adapter."""

    def __init__(self, pack: str) -> None:
        self.pack = _check_pack(pack)

    def ref(self, name: str) -> str:
        """The keyring key of ``name``: ``pack/<pack>/<name>``."""
        if not isinstance(name, str) or not SECRET_NAME_RX.fullmatch(name) or ".." in name.split("/"):
            raise ValueError(f"{name!r:.80} is not a secret name: use 1-128 lowercase letters, digits "
                             "and '.', '_', '/', '-', starting with a letter or digit")
        return f"pack/{self.pack}/{name}"

    def get(self, name: str) -> str | None:
        ref = self.ref(name)
        try:
            value = _keyring_store().get(ref)
        except SecretStoreError as exc:
            raise PackSecretError(str(exc)) from None
        return value if isinstance(value, str) else None

    def set(self, name: str, value: str) -> None:
        ref = self.ref(name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"the secret {name!r} needs a non-empty text value; nothing was stored")
        try:
            _keyring_store().set(ref, value)
        except SecretStoreError as exc:
            raise PackSecretError(str(exc)) from None

    def delete(self, name: str) -> None:
        ref = self.ref(name)
        try:
            _keyring_store().delete(ref)
        except SecretStoreError as exc:
            raise PackSecretError(str(exc)) from None


def pack_secrets(pack: str) -> PackSecrets:
    """The secrets of ``pack`` in the OS keyring. No usable (recommended, not file-based)
    keyring backend: each call raises :class:`PackSecretError`; there is no plaintext fallback."""
    return KeyringPackSecrets(pack)


# -- configuration ---------------------------------------------------------------------------


class PackConfigError(Exception):
    """The pack's config cannot be read or written; the message is one sentence for the user."""


class PackConfig:
    """A pack's configuration: one JSON object in ``pack_data_dir(pack)/config.json``.

    ``load`` reads it bounded and without blocking ({} when there is none). ``update`` takes
    the file lock, loads, lets ``fn`` change the document in place, and writes it atomically
    (mode 0600). A file that cannot be read as a JSON object is never overwritten: both raise
    :class:`PackConfigError` naming the file, so what the user had is still there to fix. A
    document holding a secret Hearthside knows (from the keyring or typed into a password
    field) is refused: secrets go in :func:`pack_secrets`.
    """

    def __init__(self, pack: str) -> None:
        self.pack = _check_pack(pack)

    @property
    def path(self) -> Path:
        try:
            return pack_data_dir(self.pack) / "config.json"
        except OSError as exc:
            raise PackConfigError(f"the {self.pack} pack's data folder cannot be used: "
                                  f"{exc.strerror or exc}") from None

    def load(self) -> dict[str, Any]:
        path = self.path
        text, reason = read_text_bounded(path, CONFIG_CAP)
        if text is None:
            if reason:
                raise PackConfigError(f"the {self.pack} pack's settings cannot be read: {reason}")
            return {}
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise PackConfigError(f"the {self.pack} pack's settings file {path} is not valid JSON "
                                  f"({exc}); fix or remove it (it was left as it is)") from None
        if not isinstance(doc, dict):
            raise PackConfigError(f"the {self.pack} pack's settings file {path} holds {type(doc).__name__}, "
                                  "not a JSON object; fix or remove it (it was left as it is)")
        return doc

    def update(self, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        path = self.path
        try:
            with lock_for(path.with_name("config.json.lock")).held(LOCK_TIMEOUT):
                doc = self.load()
                work = copy.deepcopy(doc)
                fn(work)
                if not isinstance(work, dict):
                    raise PackConfigError(f"the {self.pack} pack's settings must stay a JSON object")
                try:
                    text = json.dumps(work, indent=2, ensure_ascii=False, allow_nan=False, sort_keys=True)
                except (TypeError, ValueError, RecursionError) as exc:
                    raise PackConfigError(f"the {self.pack} pack's settings cannot be saved as JSON "
                                          f"({exc}); nothing was written") from None
                if contains_known_secret(text):
                    raise PackConfigError(f"the {self.pack} pack tried to save a secret in its settings "
                                          "file; secrets go in the keyring, so nothing was written")
                if len(text.encode("utf-8")) > CONFIG_CAP:
                    raise PackConfigError(f"the {self.pack} pack's settings would be larger than "
                                          f"{CONFIG_CAP // (1024 * 1024)} MiB; nothing was written")
                write_atomic(path, text + "\n", 0o600)
                return work
        except LockBusy:
            raise PackConfigError(f"the {self.pack} pack's settings are being changed by another Hearthside "
                                  "process; try again in a moment") from None
        except LockUnusable as exc:
            raise PackConfigError(str(exc)) from None
        except OSError as exc:
            raise PackConfigError(f"the {self.pack} pack's settings could not be saved in {path.parent} "
                                  f"({exc.strerror or exc}); nothing was changed") from None


def pack_config(pack: str) -> PackConfig:
    """The configuration of ``pack`` (``pack_data_dir(pack) / "config.json"``)."""
    return PackConfig(pack)
