"""What the tray and the main window show, kept in memory so the Qt thread never reads a file.

A worker (one :meth:`~hearthside.ui.bridge.Bridge.call` at a time) builds an immutable
:class:`Snapshot`: the persona rows and the notification preferences, read from the persona
folders and ``settings.toml``. Those reads can wait, on a settings lock another Hearthside
process holds, on a slow disk; the Qt thread only ever reads the latest snapshot and asks for a
refresh, so the menu opens and the windows draw meanwhile with what was last read.

Refreshes are coalesced: while one is running, asking again runs exactly one more after it
(a burst of drift events or a lock held for seconds never fills the worker pool with reads).

What happens on the Qt thread itself (errors reported by services, the notices of this session,
how many are unread, how the last one was shown) is kept here too, beside the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from PySide6.QtCore import QObject, Signal

from ..app.alerts import Notice
from ..app.heartbeat import HeartbeatOutcome
from ..app.lifecycle import PersonaRow
from ..app.notify import NotificationPrefs, prefs_allow
from ..core.mcpconfig import ServerStatus
from .bridge import Bridge
from .icon import ERROR, NORMAL, PAUSED, REVIEW


@dataclass(frozen=True)
class Snapshot:
    """One read of the service state (immutable: built on a worker, read on the Qt thread)."""

    rows: tuple[PersonaRow, ...] = ()
    loaded: bool = False  # False until the first read arrived ("Starting…")
    notify: NotificationPrefs = field(default_factory=NotificationPrefs)

    def allows_popups(self, now: datetime | None = None) -> bool:
        """May a notice pop up now (notifications on, outside quiet hours)? No file is read."""
        return prefs_allow(self.notify, now)


class UiState(QObject):
    """The latest :class:`Snapshot` and the Qt thread's own state; ``changed`` when either moves."""

    changed = Signal()

    def __init__(self, bridge: Bridge, read: Callable[[], Snapshot]) -> None:
        super().__init__()
        self.bridge = bridge
        self.read = read  # runs on a worker
        self.snapshot = Snapshot()
        self.errors: dict[str, str] = {}  # key -> one sentence (badge and tooltip)
        self.notices: list[Notice] = []  # this session, newest last (the in-app list's top)
        self.unread = 0
        self.delivery = ""  # how the last notice was shown: tray, dbus, in-app
        self.autostart_on = False
        self.reads = 0  # snapshots arrived (tests wait on it)
        self._running = False
        self._again = False
        self._next: list[Callable[[Snapshot], None]] = []  # for the read after the running one
        self._now: list[Callable[[Snapshot], None]] = []  # for the running read

    # --- what the Qt thread learns from events ------------------------------------------------
    def note_outcome(self, out: HeartbeatOutcome) -> None:
        """A failed check-in is a problem until the persona's next one succeeds."""
        key = f"check-in {out.persona}"
        if out.status == "failed":
            self.errors[key] = f"the check-in of {out.persona} failed: {out.reason}"
        elif out.status in ("silent", "notified"):
            self.errors.pop(key, None)

    def note_mcp(self, status: ServerStatus, quitting: bool = False) -> None:
        """A failed MCP server is a problem until it connects (servers closed at quit are not)."""
        key = f"mcp {status.name}"
        if status.state == "failed" and not quitting:
            self.errors[key] = f"MCP server {status.name}: {status.reason}"
        else:
            self.errors.pop(key, None)

    def icon(self, waiting: int) -> tuple[str, int]:
        """(state, count) for the icon: error, review (``waiting`` files), paused, normal."""
        rows = self.snapshot.rows
        if self.errors:
            return ERROR, waiting
        if waiting:
            return REVIEW, waiting
        if rows and all(r.paused for r in rows if r.exists):
            return PAUSED, 0
        return NORMAL, 0

    # --- the snapshot ----------------------------------------------------------------------
    def refresh(self, then: Callable[[Snapshot], None] | None = None) -> None:
        """Read a new snapshot on a worker; ``then(snapshot)`` runs on the Qt thread with a
        snapshot whose read started after this call."""
        if then is not None:
            self._next.append(then)
        if self._running:
            self._again = True
            return
        self._running = True
        self._now, self._next = self._next, []
        self.bridge.call(self.read, self._arrived, self._failed)

    def _arrived(self, snap: Snapshot) -> None:
        self.snapshot = snap
        self.reads += 1
        self.errors.pop("state", None)
        self._finish(snap)

    def _failed(self, exc: BaseException) -> None:
        self.errors["state"] = f"the personas could not be read: {exc or type(exc).__name__}"
        self._finish(None)

    def _finish(self, snap: Snapshot | None) -> None:
        self._running = False
        callbacks, self._now = self._now, []
        self.changed.emit()
        if snap is not None:  # a failed read runs none of them (the error says why)
            for cb in callbacks:
                cb(snap)
        if self._again:
            self._again = False
            self.refresh()
