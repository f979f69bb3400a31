"""Snoozed check-in alerts: *Snooze 1 hour* on a notification holds a persona's alerts back.

A snooze is "no check-in alerts from this persona until HH:MM". The check-ins still run and
their alerts still go to the notification history and the ledger (marked snoozed, with the
time), so nothing the persona said is lost; they only do not pop up. It is saved in the state
dir (``snooze.json``) so a ``hearthside heartbeat run`` in a terminal, a restart or a second
service see the same snooze. Expired entries are dropped at the next write. A damaged file reads
as "nothing snoozed" (the safe side: an alert shows rather than vanishes) and is replaced.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..adapters.atomicfile import write_atomic
from ..adapters.locks import lock_for
from ..core.boundedread import read_text_bounded
from ..core.safeparse import loads_json

log = logging.getLogger(__name__)

MAX_SNOOZE_BYTES = 256 * 1024
#: What *Snooze 1 hour* means.
SNOOZE_MINUTES = 60


class SnoozeStore:
    """``snooze.json``: persona -> until when its check-in alerts are held back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mutex = threading.Lock()

    def _read(self) -> dict[str, datetime]:
        text, why = read_text_bounded(self.path, MAX_SNOOZE_BYTES)
        if text is None:
            if why:
                log.warning("snoozed alerts not read (%s); nothing counts as snoozed", why)
            return {}
        try:
            doc = loads_json(text)
        except ValueError as exc:
            log.warning("%s is damaged (%s); nothing counts as snoozed", self.path, exc)
            return {}
        out: dict[str, datetime] = {}
        raw = doc.get("personas") if isinstance(doc, dict) else None
        for name, stamp in (raw.items() if isinstance(raw, dict) else ()):
            try:
                until = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
            except ValueError:
                until = None
            if isinstance(name, str) and until is not None and until.tzinfo is not None:
                out[name] = until
        return out

    def until(self, persona: str, now: datetime | None = None) -> datetime | None:
        """Until when ``persona``'s alerts are snoozed, or None when they are not (now)."""
        now = now or datetime.now(UTC)
        until = self._read().get(persona)
        return until if until is not None and until > now else None

    def snooze(self, persona: str, minutes: float = SNOOZE_MINUTES, now: datetime | None = None) -> datetime:
        """Hold ``persona``'s check-in alerts back for ``minutes`` from now; returns until when."""
        now = now or datetime.now(UTC)
        until = now + timedelta(minutes=minutes)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._mutex, lock_for(str(self.path) + ".lock").held(5):
            kept = {n: u for n, u in self._read().items() if u > now}
            kept[persona] = until
            doc = {"version": 1, "personas": {n: u.isoformat() for n, u in sorted(kept.items())}}
            write_atomic(self.path, json.dumps(doc, indent=1) + "\n")
        log.info("check-in alerts of %s snoozed until %s", persona, until.isoformat())
        return until


#: How a snoozed alert's reason starts in the ledger and the check-in's outcome.
SNOOZED = "snoozed until"


def snoozed_reason(until: datetime) -> str:
    """The reason a check-in alert was not shown: ``snoozed until 15:05 (kept, not shown)``."""
    return f"{SNOOZED} {until.astimezone():%H:%M} (kept in the history, not shown)"


def is_snoozed(reason: str) -> bool:
    return reason.startswith(SNOOZED)
