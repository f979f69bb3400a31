"""What reaches the user from drift events and check-in alerts: throttled, grouped notices.

The drift service announces every settled content change (contract section 3); heartbeats may
raise many alerts at once. Telling the user is this module's job: one notice per file per
settle (a file that keeps changing while it already waits for review is not announced again
until :data:`REPEAT_AFTER` has passed), several changes that arrive together grouped into one
notice, and at most one notice per :data:`MIN_GAP` seconds, so 100 alerts in a second become
one or two notices instead of 100 balloons. The same code serves the tray and ``--headless``;
only the ``deliver`` callback differs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: States in which a watched file waits for the user.
WAITING_STATES = frozenset({"drifted", "new", "missing", "rejected"})
#: How long the batcher collects before it delivers (drift arrives debounced already).
GATHER = 0.25
#: At least this long between two notices.
MIN_GAP = 1.0
#: A file already announced in the same waiting state is announced again after this long.
REPEAT_AFTER = 60.0
#: A grouped notice names at most this many items.
MAX_NAMED = 4


@dataclass(frozen=True)
class Alert:
    """One thing to tell: a drift change (``path`` set) or a check-in alert."""

    kind: str  # "drift" | "checkin"
    persona: str  # "" for the user soul
    text: str
    file: str = ""
    path: str = ""
    state: str = ""


@dataclass(frozen=True)
class Notice:
    """One notification as shown: title, body, and what a click opens."""

    title: str
    body: str
    alerts: tuple[Alert, ...] = field(default=())

    @property
    def kind(self) -> str:
        kinds = {a.kind for a in self.alerts}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    @property
    def persona(self) -> str:
        names = {a.persona for a in self.alerts}
        return names.pop() if len(names) == 1 else ""


def persona_label(persona: str) -> str:
    return persona or "your soul"


#: How a drift notice starts, per state (also how the history tells drift from check-ins).
DRIFT_PREFIX = {
    "drifted": "Edited by hand",
    "new": "New file, waiting for your approval",
    "missing": "Removed",
    "rejected": "Changed and cannot be used as it is",
}


def drift_text(state: str, file: str, summary: str = "") -> str:
    """One line about one file, e.g. ``Edited by hand: SOUL.md changed since you approved it (+1 -1 lines)``."""
    detail = summary if summary and file in summary else (f"{file}: {summary}" if summary else file)
    return f"{DRIFT_PREFIX.get(state, state.capitalize())}: {detail}"


def make_notice(alerts: list[Alert]) -> Notice:
    """Group alerts into one notice naming persona and file (or the first few of them)."""
    if len(alerts) == 1:
        a = alerts[0]
        title = a.persona or ("Your soul" if a.kind == "drift" else "Hearthside")
        return Notice(title, a.text, tuple(alerts))
    drift = [a for a in alerts if a.kind == "drift"]
    checks = [a for a in alerts if a.kind == "checkin"]
    parts = []
    if drift:
        named = ", ".join(f"{persona_label(a.persona)}: {a.file}" for a in drift[:MAX_NAMED])
        more = f" and {len(drift) - MAX_NAMED} more" if len(drift) > MAX_NAMED else ""
        parts.append(f"{len(drift)} file(s) changed and wait for review ({named}{more}).")
    if checks:
        names = sorted({a.persona for a in checks})
        shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
        parts.append(f"{len(checks)} check-in alert(s) from {shown}. Open Notifications to read them.")
    personas = {a.persona for a in alerts}
    title = personas.pop() if len(personas) == 1 and "" not in personas else "Hearthside"
    return Notice(title or "Hearthside", " ".join(parts), tuple(alerts))


class AlertBatcher:
    """Collects alerts for :data:`GATHER` seconds and delivers them as one :class:`Notice`.

    ``deliver`` runs on the batcher's timer thread (never on the caller's), so a burst of
    ``add`` calls costs a list append each.
    """

    def __init__(self, deliver: Callable[[Notice], None], gather: float = GATHER, min_gap: float = MIN_GAP) -> None:
        self.deliver = deliver
        self.gather = gather
        self.min_gap = min_gap
        self._pending: list[Alert] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last_delivery = -1e9
        self._closed = False

    def add(self, alert: Alert) -> None:
        with self._lock:
            if self._closed:
                return
            self._pending.append(alert)
            if self._timer is None:
                now = time.monotonic()
                delay = max(self.gather, self._last_delivery + self.min_gap - now)
                self._timer = threading.Timer(delay, self._flush)
                self._timer.daemon = True
                self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._timer = None
            self._last_delivery = time.monotonic()
        if batch:
            try:
                self.deliver(make_notice(batch))
            except Exception:
                log.exception("delivering a notification failed")

    def flush_now(self) -> None:
        """Deliver what is pending at once (tests, shutdown)."""
        with self._lock:
            timer = self._timer
        if timer is not None:
            timer.cancel()
        self._flush()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
            self._pending = []
        if timer is not None:
            timer.cancel()


class DriftAlerts:
    """Turns drift events into alerts: one per file per settle, and tracks what waits for review.

    ``waiting()`` is the badge: every watched file in a waiting state, by path. It is kept in
    memory (updated from events), so the tray reads it on the Qt thread without touching disk.
    """

    def __init__(self, batcher: AlertBatcher, repeat_after: float = REPEAT_AFTER,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.batcher = batcher
        self.repeat_after = repeat_after
        self.clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[str, str, str]] = {}  # path -> (persona, file, state)
        self._announced: dict[str, tuple[str, float]] = {}  # path -> (state, when)

    def seed(self, statuses: list[Any]) -> None:
        """Start from a scan (FileStatus list) without announcing anything."""
        with self._lock:
            for st in statuses:
                never_approved = st.state == "missing" and not st.baseline  # e.g. no soul.md yet
                if st.state in WAITING_STATES and not never_approved:
                    self._waiting[st.path] = (st.persona, st.file, st.state)
                    self._announced[st.path] = (st.state, -1e9)
                else:
                    self._waiting.pop(st.path, None)

    def on_event(self, ev: Any) -> bool:
        """Handle one DriftEvent (any thread); returns True when it was announced."""
        with self._lock:
            was = self._waiting.get(ev.path)
            if ev.state == "missing" and was is not None and was[2] == "new":
                ev_state = "gone"  # a new file removed before approval: nothing left to review
            else:
                ev_state = ev.state
            if ev_state not in WAITING_STATES:
                self._waiting.pop(ev.path, None)
                self._announced.pop(ev.path, None)
                return False
            self._waiting[ev.path] = (ev.persona, ev.file, ev.state)
            now = self.clock()
            prev = self._announced.get(ev.path)
            if prev is not None and prev[0] == ev.state and now - prev[1] < self.repeat_after:
                return False
            self._announced[ev.path] = (ev.state, now)
        self.batcher.add(Alert("drift", ev.persona, drift_text(ev.state, ev.file, ev.summary),
                               ev.file, ev.path, ev.state))
        return True

    def waiting(self) -> dict[str, tuple[str, str, str]]:
        with self._lock:
            return dict(self._waiting)

    def waiting_for(self, persona: str) -> int:
        with self._lock:
            return sum(1 for p, _f, _s in self._waiting.values() if p == persona)


class QueuedNotifier:
    """A heartbeat ``Notifier`` that hands alerts to the batcher (so bursts are grouped)."""

    def __init__(self, batcher: AlertBatcher) -> None:
        self.batcher = batcher

    def notify(self, title: str, body: str) -> bool:
        self.batcher.add(Alert("checkin", title, body))
        return True


def is_drift_text(text: str) -> bool:
    """True for a history line written by :func:`drift_text` (a file change, not a check-in)."""
    return any(text.startswith(p + ": ") for p in DRIFT_PREFIX.values())
