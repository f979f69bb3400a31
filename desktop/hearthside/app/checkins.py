"""The saved check-in schedule (last slot, last run per persona) and the ledger of every slot.

Both live in the state dir and are Hearthside's own files. The schedule state is what lets the
schedule survive restarts and sleep: without it every launch started from zero and a user who
restarts more often than the interval never got a check-in. The ledger answers "what happened
to the 08:00 check-in?": each slot ends as exactly one of silent, notified, failed, skipped or
missed, with the time it was due and the time it ran.

A state file that is damaged, not a regular file or absurdly large is reported once, read as
"never ran" and replaced by the next save (it holds nothing the user wrote).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, get_args

from ..adapters.atomicfile import write_atomic
from ..adapters.locks import lock_for
from ..core.boundedread import read_text_bounded
from ..core.redact import redact
from ..core.safeparse import loads_json

log = logging.getLogger(__name__)

MAX_STATE_BYTES = 1024 * 1024
MAX_LEDGER_BYTES = 8 * 1024 * 1024
LEDGER_MAX_ENTRIES = 2000
#: The ledger grows by appends up to this size, then is cut back to LEDGER_MAX_ENTRIES lines.
TRIM_AT_BYTES = 1024 * 1024

SlotStatus = Literal["silent", "notified", "failed", "skipped", "missed"]
_STATUSES: frozenset[str] = frozenset(get_args(SlotStatus))


def _stamp(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        got = datetime.fromisoformat(value)
    except ValueError:
        return None
    return got if got.tzinfo is not None else None


@dataclass(frozen=True)
class PersonaSchedule:
    """What is saved for one persona: the slot bookkeeping and the last real run."""

    anchor: datetime | None = None
    settled: datetime | None = None
    last_ran: datetime | None = None
    last_status: str = ""


class ScheduleStore:
    """``schedule.json`` in the state dir: one entry per persona, read-modify-write under a lock
    so the tray and a ``hearthside heartbeat run`` in a terminal keep each other's changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.Lock()
        self._cache: dict[str, PersonaSchedule] = {}
        self._seen: tuple[int, int, int] | None = None
        self._warned: set[str] = set()

    def _lock(self) -> AbstractContextManager[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return lock_for(str(self.path) + ".lock").held(5)

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _read(self) -> dict[str, PersonaSchedule] | None:
        """The saved entries; None (said once) when the file is unusable, {} when there is none."""
        text, why = read_text_bounded(self.path, MAX_STATE_BYTES)
        if text is None:
            if why:
                self._warn(why)
                return None
            return {}
        try:
            doc = loads_json(text)
        except ValueError as exc:
            self._warn(f"{self.path} is damaged ({exc})")
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("personas"), dict):
            self._warn(f"{self.path} is damaged (it is not a Hearthside schedule)")
            return None
        out: dict[str, PersonaSchedule] = {}
        for name, d in doc["personas"].items():
            if isinstance(name, str) and isinstance(d, dict):
                out[name] = PersonaSchedule(_when(d.get("anchor")), _when(d.get("settled")),
                                            _when(d.get("last_ran")), str(d.get("last_status") or ""))
        return out

    def _warn(self, why: str, message: str = "") -> None:
        if why not in self._warned:  # once per problem, not at every 30-second wake
            self._warned.add(why)
            log.warning("%s", message or f"the check-in schedule was not read: {why}; every persona counts as never "
                                          "checked in and the file will be replaced at the next check-in")

    def all(self) -> dict[str, PersonaSchedule]:
        """Every persona's saved schedule (re-read only when the file changed)."""
        with self._mutex:
            sig = self._signature()
            if sig != self._seen or sig is None:
                self._cache = (self._read() or {}) if sig is not None else {}
                self._seen = sig
            return dict(self._cache)

    def get(self, persona: str) -> PersonaSchedule:
        return self.all().get(persona, PersonaSchedule())

    def update(self, persona: str, **changes: Any) -> PersonaSchedule:
        """Change some fields of one persona's entry and save atomically (the rest is kept)."""
        with self._mutex, self._lock():
            read = self._read()
            data = dict(self._cache) if read is None else read  # an unusable file: what this process knows
            merged = PersonaSchedule(**{**asdict(data.get(persona, PersonaSchedule())), **changes})
            data[persona] = merged
            doc = {"version": 1, "personas": {
                name: {"anchor": _stamp(p.anchor), "settled": _stamp(p.settled), "last_ran": _stamp(p.last_ran),
                       "last_status": p.last_status} for name, p in sorted(data.items())}}
            try:
                write_atomic(self.path, json.dumps(doc, indent=1) + "\n")
            except OSError as exc:
                # Keep going on what is known in memory (no slot runs twice in this process);
                # only a restart would not know about it. Said once, like a damaged file.
                self._cache, self._seen = data, self._signature()
                why = f"{self.path} could not be written ({exc.strerror or exc})"
                self._warn(why, f"the check-in schedule was not saved: {why}; check-ins go on, but after a "
                                "restart Hearthside will not know when they last ran")
                return merged
            self._cache, self._seen = data, self._signature()
            self._warned.clear()
            return merged


@dataclass(frozen=True)
class SlotRecord:
    """One line of the ledger. ``due`` is None for a check-in the user asked for (not a slot)."""

    persona: str
    status: SlotStatus
    reason: str
    due: str | None
    ran: str | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def make(cls, persona: str, status: SlotStatus, reason: str = "", due: datetime | None = None,
             ran: datetime | None = None, text: str = "") -> SlotRecord:
        # The same redaction as the log and the notification history: a reply may echo a secret.
        return cls(persona, status, redact(reason), _stamp(due), _stamp(ran), redact(text))


class CheckinLedger:
    """The newest :data:`LEDGER_MAX_ENTRIES` slot outcomes, oldest first, as JSON lines."""

    def __init__(self, path: Path, max_entries: int = LEDGER_MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._mutex = threading.Lock()

    def entries(self) -> list[SlotRecord]:
        text, why = read_text_bounded(self.path, MAX_LEDGER_BYTES)
        if text is None:
            if why:
                log.warning("check-in ledger not read: %s", why)
            return []
        out: list[SlotRecord] = []
        for line in text.splitlines():
            try:
                d = loads_json(line)
                if d["status"] not in _STATUSES:
                    continue
                due, ran = d.get("due"), d.get("ran")
                if (due is not None and _when(due) is None) or (ran is not None and _when(ran) is None):
                    continue
                out.append(SlotRecord(str(d["persona"]), d["status"], str(d.get("reason") or ""),
                                      due, ran, str(d.get("text") or "")))
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line is skipped, the rest stays readable
        return out

    def append(self, records: Iterable[SlotRecord]) -> None:
        """Add lines at the end (a cheap append, not a rewrite, for the usual case); once the
        file passes :data:`TRIM_AT_BYTES`, or is not a regular file, it is rewritten with the
        newest ``max_entries``."""
        new = list(records)
        if not new:
            return
        text = "".join(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in new)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._mutex, lock_for(str(self.path) + ".lock").held(5):
            if self._append(text.encode("utf-8")):
                return
            kept = (self.entries() + new)[-self.max_entries:]
            write_atomic(self.path, "".join(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in kept))

    def _append(self, data: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False  # missing, a link, a FIFO without reader...: the rewrite deals with it
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size + len(data) > TRIM_AT_BYTES:
                return False
            os.write(fd, data)
            return True
        finally:
            os.close(fd)
