"""Approved copies of watched files, kept in the state dir (never beside the watched files).

Layout under ``<state>/baselines/``: one folder per watched unit (the user soul, or one persona
folder), named by a hash of the unit's path, holding ``unit.json`` (which folder, and that its
first scan happened: trust on first use is spent once) and ``files/<name>.json`` records (see
:func:`hearthside.core.drift.baseline_to_json`). Every write is atomic.

When the state dir cannot be written, approvals made by trust-on-first-use are kept in memory
for this process and :attr:`BaselineStore.error` says why; explicit approvals fail with that
sentence instead, so a user never believes an approval was saved when it was not.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

from ..adapters.atomicfile import write_atomic
from ..core.boundedread import read_bytes_checked
from ..core.drift import Baseline, baseline_from_json, baseline_to_json

#: Largest baseline record read back (a 2 MiB file with JSON escaping fits comfortably).
MAX_RECORD_BYTES = 16 * 1024 * 1024


class BaselineWriteError(Exception):
    """An approval could not be saved; the message says where and what to do."""


class BaselineStore:
    """Reads and writes approval records; thread-safe; writes only under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.error = ""
        self._lock = threading.RLock()
        self._mem: dict[tuple[str, str], Baseline | None] = {}
        self._mem_units: set[str] = set()

    def _unit_dir(self, unit: str) -> Path:
        return self.root / unit

    def _record(self, unit: str, file: str) -> Path:
        return self._unit_dir(unit) / "files" / (quote(file, safe="") + ".json")

    def unit_scanned(self, unit: str) -> bool:
        """True once the unit's first scan was recorded (or anything was ever approved in it).

        A damaged ``unit.json`` still counts as scanned: trust on first use is never re-granted
        by corrupting the state dir.
        """
        with self._lock:
            if unit in self._mem_units:
                return True
            d = self._unit_dir(unit)
            return os.path.lexists(d / "unit.json") or os.path.isdir(d / "files")

    def mark_scanned(self, unit: str, info: dict[str, object], *, durable: bool = True) -> None:
        """Record that the unit's first scan happened; in memory only if the disk refuses."""
        with self._lock:
            self._mem_units.add(unit)
            doc = dict(info, version=1, first_scan_at=time.time())
            try:
                write_atomic(self._unit_dir(unit) / "unit.json", json.dumps(doc, indent=1), durable=durable)
            except OSError as exc:
                self._fail(exc)

    def load(self, unit: str, file: str) -> tuple[Baseline | None, str]:
        """The approved record of ``file``, or None; a damaged record gives ``(None, reason)``."""
        with self._lock:
            if (unit, file) in self._mem:
                return self._mem[(unit, file)], ""
            data, why = read_bytes_checked(self._record(unit, file), MAX_RECORD_BYTES)
            if data is None:  # no record (""), or why this one cannot be used
                return None, why and f"the approval record cannot be read: {why}"
            try:
                return baseline_from_json(data), ""
            except ValueError as exc:
                return None, f"the approval record {self._record(unit, file)} is damaged: {exc}"

    def in_memory_only(self, unit: str, file: str) -> bool:
        """True when this approval lives only in memory (the state dir refused it)."""
        with self._lock:
            return self._mem.get((unit, file)) is not None

    def files(self, unit: str) -> list[str]:
        """Names that have an approval record (approved files that may since have vanished)."""
        with self._lock:
            names = {f for (u, f), b in self._mem.items() if u == unit and b is not None}
            gone = {f for (u, f), b in self._mem.items() if u == unit and b is None}
            d = self._unit_dir(unit) / "files"
            try:
                for entry in os.scandir(d):
                    if entry.name.endswith(".json"):
                        names.add(unquote(entry.name[: -len(".json")]))
            except OSError:
                pass
            return sorted(names - gone)

    def save(self, unit: str, file: str, baseline: Baseline, *, remember_on_failure: bool) -> None:
        """Write the approval record; raise :class:`BaselineWriteError` when the disk refuses.

        With ``remember_on_failure`` (trust on first use) the approval is kept in memory instead
        of raising, so watching goes on; ``error`` still says it was not saved. Trust on first
        use also skips the fsyncs (``durable=False``): a first scan of 50 personas would
        otherwise wait for ~700 disk flushes, and a record a crash damages shows as drift,
        never as trust. An approval the user makes is flushed.
        """
        with self._lock:
            try:
                write_atomic(self._record(unit, file), baseline_to_json(file, baseline),
                             durable=not remember_on_failure)
            except OSError as exc:
                self._fail(exc)
                if remember_on_failure:
                    self._mem[(unit, file)] = baseline
                    return
                raise BaselineWriteError(self.error) from exc
            self._mem.pop((unit, file), None)

    def remove(self, unit: str, file: str) -> None:
        """Forget an approval (the user approved a file's removal)."""
        with self._lock:
            path = self._record(unit, file)
            try:
                if os.path.lexists(path):
                    os.remove(path)
            except OSError as exc:
                self._fail(exc)
                raise BaselineWriteError(self.error) from exc
            if (unit, file) in self._mem:
                self._mem[(unit, file)] = None

    def _fail(self, exc: OSError) -> None:
        self.error = (
            f"Hearthside cannot save approvals in {self.root} ({exc.strerror or exc}). Watching "
            "still works, but approvals are not kept; make that folder writable and approve again."
        )
