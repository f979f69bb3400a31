"""The app's settings file (``settings.toml``): read leniently, written atomically.

Several Hearthside processes share the file (the tray, a CLI command, a check-in), so a change
is a transaction: take ``settings.toml.lock``, re-read the file, apply the change, write it
atomically. A change made by another process between our read and our write is never lost.

People edit the file by hand, so one that does not parse (or has a number where a section
belongs) is never moved or rewritten by Hearthside on its own: reads fall back to defaults and
say why, with the line and column, and every change is refused (:class:`SettingsBroken`) until
the user fixes the file or chooses :meth:`SettingsStore.start_over`, which keeps the file as
``settings.toml.broken-<time>`` and begins again with defaults.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tomli_w

from ..adapters.atomicfile import keep_backup, write_atomic
from ..adapters.locks import LockBusy, LockUnusable, lock_for
from ..core.boundedread import read_text_bounded
from ..core.safeparse import loads_toml

log = logging.getLogger(__name__)

_MISSING = object()

#: A hand-written settings file is a few KiB; anything near this is not settings.
MAX_SETTINGS_BYTES = 1024 * 1024

#: How long a change waits for another process's change to finish.
LOCK_TIMEOUT_S = 5.0


class SettingsError(RuntimeError):
    """A settings change could not be made (the message is one sentence for the user)."""


class SettingsBroken(SettingsError):
    """A change refused because ``settings.toml`` cannot be used as it is: writing would replace
    what the user wrote."""


#: What the user can do about a settings file Hearthside cannot use (the CLI's words; the
#: Settings window offers the same as its *Start over* button).
FIX_OR_START_OVER = ("fix the file, or run 'hearthside settings start-over' to keep it as a backup and "
                     "begin again with default settings")


#: Top-level names that are sections (tables). ``personas = 5`` or ``model = 5`` is ignored with
#: a sentence, so no caller ever has to cope with a number where it expects a section.
TABLES = ("agent", "conversations", "drift", "files", "model", "persona_folders", "personas", "plugins", "search")


def _short(text: str, key: str) -> str:
    """How ``key`` was written (its line and value), for the sentence; cut short."""
    for n, line in enumerate(text.splitlines(), 1):
        name, sep, value = line.partition("=")
        if sep and name.strip().strip('"\'') == key.rpartition(".")[2]:
            value = value.strip()
            return f"{value if len(value) <= 40 else value[:40] + '…'} (at line {n})"
    return "a value"


def _where(exc: Exception) -> str:
    """tomllib's reason with its "(at line L, column C)" as part of the sentence."""
    return re.sub(r" \(at (line \d+, column \d+)\)$", r" at \1", str(exc))


class SettingsStore:
    """Dotted-key access to ``settings.toml`` (e.g. ``get("model.base_url")``)."""

    def __init__(self, path: Path, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        #: Why the file cannot be used as it is ("" when it can): defaults are read, changes
        #: are refused and :meth:`start_over` is offered while it is set.
        self.error = ""
        #: The first half of :attr:`error`: what is wrong and where (line and column).
        self.problem = ""
        self._told = ""  # the last warning logged: once per process, not once per re-read
        self._lock = threading.RLock()
        self._data: dict[str, Any] | None = None

    def _unusable(self, problem: str, error: str) -> None:
        """Record why the file cannot be used; log it the first time it is seen."""
        self.problem, self.error = problem, error
        if error != self._told:
            self._told = error
            log.warning("%s", error)

    def _load(self) -> dict[str, Any]:
        if self._data is not None:
            return self._data
        # Bounded and non-blocking: a settings.toml that is a FIFO must not hang every command.
        text, why = read_text_bounded(self.path, MAX_SETTINGS_BYTES)
        self._data = {}
        if text is None:
            if why:
                self._unusable(f"Could not read settings: {why}", f"Could not read settings: {why}; using defaults.")
            return self._data
        try:
            self._data = loads_toml(text)
        except ValueError as exc:  # TOMLDecodeError, NestingError
            problem = f"{self.path} could not be parsed: {_where(exc)}"
            self._unusable(problem, f"{problem}; default settings are used and no setting is changed until "
                                    f"it is fixed: {FIX_OR_START_OVER}.")
            return self._data
        wrong = [k for k in TABLES if k in self._data and not isinstance(self._data[k], dict)]
        personas = self._data.get("personas")
        if isinstance(personas, dict):  # each [personas.NAME] is a table too
            wrong += [f"personas.{n}" for n, v in personas.items() if not isinstance(v, dict)]
        for key in wrong:
            head, _, tail = key.partition(".")
            (self._data[head] if tail else self._data).pop(tail or head)
        if wrong:
            problem = (f"In {self.path}, {', '.join(f'{k} = {_short(text, k)}' for k in wrong)} "
                       f"{'is not a section' if len(wrong) == 1 else 'are not sections'} (write [{wrong[0]}] "
                       "and the settings under it)")
            self._unusable(problem, f"{problem}; {'it is' if len(wrong) == 1 else 'they are'} ignored, defaults "
                                    f"are used and no setting is changed until it is fixed: {FIX_OR_START_OVER}.")
        return self._data

    def reload(self) -> None:
        with self._lock:
            self._data = None
            self.error = self.problem = ""

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
        kept; ``mutate`` sees a private copy and nothing is written if it raises. A file that
        cannot be used as it is refuses the change (:class:`SettingsBroken`).

        The in-process lock is taken only once the file lock is held: a reader in this process
        (the tray's menu, a window) never waits behind a change that waits for another process.
        """
        with self._file_lock(), self._lock:  # in this order (see above)
            self.reload()
            data = copy.deepcopy(self._load())
            if self.error:
                raise SettingsBroken(f"{self.problem}, so nothing was changed: {FIX_OR_START_OVER}")
            mutate(data)
            write_atomic(self.path, tomli_w.dumps(data))
            self._data = data

    def start_over(self) -> Path:
        """The user's choice for a settings file that cannot be used: keep it as
        ``settings.toml.broken-<time>`` (mode 0600) and begin again with defaults (an empty
        file). Refused while the file is fine, so it never drops settings."""
        with self._file_lock(), self._lock:
            self.reload()
            self._load()
            if not self.error or not os.path.lexists(self.path):
                raise SettingsError(f"{self.path} has no problem to start over from, so nothing was changed")
            backup = keep_backup(self.path)
            write_atomic(self.path, "")
            self.reload()
            log.info("settings.toml could not be used; kept it as %s and started with defaults", backup)
            return backup

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """Hold ``settings.toml.lock`` (every Hearthside process's), or say who has it."""
        file_lock = lock_for(self.path.with_name(self.path.name + ".lock"))
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
            yield
        finally:
            file_lock.release()
