"""The app's settings file (``settings.toml``): read leniently, written atomically.

Several Hearthside processes share the file (the tray, a CLI command, a check-in), so a change
is a transaction: take ``settings.toml.lock``, re-read the file, apply the change, write it
atomically. A change made by another process between our read and our write is never lost.

A file that does not parse is never overwritten blindly: reads fall back to defaults and say
why, and the first save keeps the broken file as a backup before writing a new one.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

from ..adapters.atomicfile import keep_backup, write_atomic
from ..adapters.locks import LockBusy, LockUnusable, lock_for
from ..core.boundedread import read_bounded
from ..core.safeparse import loads_toml

log = logging.getLogger(__name__)

_MISSING = object()

#: A hand-written settings file is a few KiB; anything near this is not settings.
MAX_SETTINGS_BYTES = 1024 * 1024

#: How long a change waits for another process's change to finish.
LOCK_TIMEOUT_S = 5.0


class SettingsError(RuntimeError):
    """A settings change could not be made (the message is one sentence for the user)."""


#: Top-level names that are sections (tables). ``personas = 5`` or ``model = 5`` is ignored with
#: a sentence, so no caller ever has to cope with a number where it expects a section.
TABLES = ("agent", "drift", "files", "model", "persona_folders", "personas", "plugins", "search")


def _short(raw: bytes, key: str) -> str:
    """How ``key`` was written (its line's value), for the sentence; cut short."""
    for line in raw.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip().strip('"\'') == key.rpartition(".")[2]:
            value = value.strip()
            return value if len(value) <= 40 else value[:40] + "…"
    return "a value"


class SettingsStore:
    """Dotted-key access to ``settings.toml`` (e.g. ``get("model.base_url")``)."""

    def __init__(self, path: Path, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self.error = ""
        self._lock = threading.RLock()
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is not None:
            return self._data
        # Bounded and non-blocking: a settings.toml that is a FIFO must not hang every command.
        got = read_bounded(self.path, MAX_SETTINGS_BYTES)
        if got.data is None or got.over_cap:
            self._data = {}
            if got.data is None and not os.path.lexists(self.path):
                return self._data
            why = got.reason or f"{self.path} is larger than {MAX_SETTINGS_BYTES // 1024} KiB"
            self.error = f"Could not read settings: {why}; using defaults."
            log.warning(self.error)
            return self._data
        raw = got.data
        try:
            self._data = loads_toml(raw.decode("utf-8").removeprefix("\ufeff"))
        except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError, NestingError
            self.error = (
                f"{self.path} could not be parsed ({exc}); using defaults. The file is kept and "
                "will be saved aside as a backup before Hearthside writes settings again."
            )
            log.warning(self.error)
            self._data = {}
            return self._data
        wrong = [k for k in TABLES if k in self._data and not isinstance(self._data[k], dict)]
        personas = self._data.get("personas")
        if isinstance(personas, dict):  # each [personas.NAME] is a table too
            wrong += [f"personas.{n}" for n, v in personas.items() if not isinstance(v, dict)]
        for key in wrong:
            head, _, tail = key.partition(".")
            (self._data[head] if tail else self._data).pop(tail or head)
        if wrong:
            self.error = (
                f"In {self.path}, {', '.join(f'{k} = {_short(raw, k)}' for k in wrong)} "
                f"{'is not a section' if len(wrong) == 1 else 'are not sections'} (write [{wrong[0]}] "
                f"and the settings under it); {'it is' if len(wrong) == 1 else 'they are'} ignored and "
                "defaults are used. The file is kept and saved aside as a backup before Hearthside "
                "writes settings again."
            )
            log.warning(self.error)
        return self._data

    def reload(self) -> None:
        with self._lock:
            self._data = None
            self.error = ""

    def all(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._load())

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            node: Any = self._load()
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    return default
                node = node[part]
            return copy.deepcopy(node)

    def set(self, key: str, value: Any) -> None:
        """Set one value and save; ``None`` removes the key."""

        def mutate(data: dict[str, Any]) -> None:
            parts = key.split(".")
            node = data
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            if value is None:
                node.pop(parts[-1], None)
            else:
                node[parts[-1]] = value

        self.update(mutate)

    def update(self, mutate: Callable[[dict[str, Any]], None]) -> None:
        """Apply ``mutate`` to the settings as they are on disk now and write them atomically.

        Under ``settings.toml.lock`` (shared with every Hearthside process): the file is read
        again after the lock is taken, so what another process wrote since our last read is
        kept; ``mutate`` sees a private copy and nothing is written if it raises.
        """
        file_lock = lock_for(self.path.with_name(self.path.name + ".lock"))
        with self._lock:
            try:
                file_lock.acquire(self.lock_timeout)
            except LockBusy as exc:
                raise SettingsError(
                    f"another Hearthside process is changing {self.path} (lock {exc.lock_file}); "
                    "nothing was changed, try again in a moment"
                ) from None
            except LockUnusable as exc:
                raise SettingsError(f"{exc}; nothing was changed") from None
            try:
                self.reload()
                data = copy.deepcopy(self._load())
                mutate(data)
                if self.error and self.path.exists():
                    backup = keep_backup(self.path)
                    log.warning("Kept the unparsable settings file as %s", backup)
                    self.error = ""
                write_atomic(self.path, tomli_w.dumps(data))
                self._data = data
            finally:
                file_lock.release()
