"""The *Notifications* window: every alert and failure in the history, newest first; or, with
the filter on *Everything*, the ledger of every check-in slot (silent, notified, snoozed,
failed, skipped and missed, each with its reason, the time it was due and the time it ran).

The history file is the source of truth (a balloon may never appear); this window is also the
in-app list where neither a tray nor a notification service exists. It is read on a worker
thread and re-read when a new notice or check-in outcome arrives while the window is shown.
Activating a check-in alert opens the persona's chat with it; a drift notice opens the review.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...app.alerts import Alert, Notice, persona_label
from ...app.snooze import is_snoozed
from ..bridge import Bridge
from ..icon import hearth_icon
from ..safetext import PlainLabel, tip

if TYPE_CHECKING:
    from ...app.context import AppContext

#: History status -> what the window says.
STATUS_LABELS = {"notified": "notified", "duplicate": "silent (same alert within 24 h)", "failed": "failed",
                 "snoozed": "snoozed (kept, not shown)"}
ALERTS_ONLY = "Alerts only"
EVERYTHING = "Everything (every check-in)"


@dataclass(frozen=True)
class Line:
    """One row of the table, from the history (alerts) or the ledger (every check-in slot)."""

    time: str  # when it happened: the alert, or the run ("" for a slot that never ran)
    persona: str
    text: str
    status: str  # as shown
    kind: str = "checkin"  # or "drift"
    due: str = ""
    alert: bool = True  # opening it opens the chat with the text as an alert
    sort: str = ""


def alert_lines(entries: list[Any]) -> list[Line]:
    return [Line(e.time, e.persona, e.text, STATUS_LABELS.get(e.status, e.status), e.kind,
                 alert=e.status != "failed", sort=e.time) for e in entries]


def ledger_status(status: str, reason: str) -> str:
    """``missed (asleep)``, ``skipped (outside active hours …)``, ``snoozed until 15:05 (…)``."""
    if status == "notified" and is_snoozed(reason):
        return reason
    return f"{status} ({reason})" if reason and status in ("skipped", "missed", "failed") else status


def ledger_lines(records: list[Any], drift: list[Any]) -> list[Line]:
    """Every check-in slot and run, with the drift notices among them (oldest first)."""
    out = [Line(r.ran or "", r.persona, r.text, ledger_status(r.status, r.reason), "checkin", r.due or "",
                alert=r.status == "notified", sort=r.ran or r.due or "") for r in records]
    out += [Line(e.time, e.persona, e.text, STATUS_LABELS.get(e.status, e.status), "drift", sort=e.time)
            for e in drift if e.kind == "drift"]
    return sorted(out, key=lambda line: _instant(line.sort))


def _instant(iso: str) -> datetime:
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def when_label(iso: str) -> str:
    if not iso:
        return "—"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


class NotificationsWindow(QWidget):
    """A table: time, persona, text, status; newest first. ``open_notice`` opens what a row is
    about (the shell's: the chat with that alert, or the review)."""

    def __init__(self, app: AppContext, bridge: Bridge, open_notice: Callable[[Notice], None]) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.open_notice = open_notice
        self.setWindowTitle("Hearthside — Notifications")
        self.setWindowIcon(hearth_icon())
        layout = QVBoxLayout(self)
        self.summary = PlainLabel("Loading…")
        self.filter = QComboBox()
        self.filter.setAccessibleName("Show")
        self.filter.addItems([ALERTS_ONLY, EVERYTHING])
        self.filter.setToolTip("Alerts only: what was (or would have been) shown. Everything: every check-in, also "
                               "the silent, skipped and missed ones, with why.")
        self.filter.currentIndexChanged.connect(lambda _i: self.reload())
        show = PlainLabel("Show:")
        show.setBuddy(self.filter)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(show)
        top.addWidget(self.filter)
        layout.addLayout(top)
        self.table = QTableWidget(0, 5)
        self.table.setAccessibleName("Notification history")
        self.table.setHorizontalHeaderLabels(["Time", "Persona", "Message", "Status", "Due"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        head.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)  # a skip's or a miss's reason is long
        head.setSectionResizeMode(4, QHeaderView.ResizeMode.ResizeToContents)
        head.moveSection(4, 1)  # shown as: Ran, Due, Persona, Message, Status
        self.table.setColumnHidden(4, True)
        self.table.cellActivated.connect(lambda row, _c: self.open_row(row))
        layout.addWidget(self.table)
        buttons = QHBoxLayout()
        self.open_btn = QPushButton("Open")
        self.open_btn.setAccessibleName("Open the selected notification")
        self.open_btn.clicked.connect(lambda: self.open_row(self.table.currentRow()))
        self.reload_btn = QPushButton("Reload")
        self.reload_btn.clicked.connect(self.reload)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons.addWidget(self.open_btn)
        buttons.addStretch(1)
        buttons.addWidget(self.reload_btn)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self.entries: list[Line] = []
        self.loaded = 0
        bridge.notification.connect(self._maybe_reload)
        bridge.heartbeat_outcome.connect(self._maybe_reload)
        self.resize(720, 420)

    def _maybe_reload(self, *_: object) -> None:
        if self.isVisible():
            self.reload()

    @property
    def everything(self) -> bool:
        return self.filter.currentText() == EVERYTHING

    def reload(self) -> None:
        history = self.app.notifications
        ledger_file = self.app.paths.checkins_file
        everything = self.everything

        def work() -> list[Line]:
            if not everything:
                return alert_lines(history.entries())
            from ...app.checkins import CheckinLedger

            return ledger_lines(CheckinLedger(ledger_file).entries(), history.entries())

        self.bridge.call(work, lambda lines: self.show_lines(lines, everything),
                         lambda exc: self.summary.setText(f"The history could not be read: {exc}"))

    def show_entries(self, entries: list[Any]) -> None:
        """Show history entries (the *Alerts only* view)."""
        self.show_lines(alert_lines(entries), False)

    def show_lines(self, lines: list[Line], everything: bool) -> None:
        self.entries = list(reversed(lines))
        self.loaded += 1
        t = self.table
        t.setColumnHidden(4, not everything)
        t.setHorizontalHeaderLabels(["Ran" if everything else "Time", "Persona", "Message", "Status", "Due"])
        t.setRowCount(len(self.entries))
        for i, e in enumerate(self.entries):
            who = persona_label(e.persona) if e.kind == "drift" else e.persona
            cells = [when_label(e.time), who, e.text, e.status, when_label(e.due) if e.due else ""]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip(text) if j in (2, 3) else "")
                t.setItem(i, j, item)
        t.resizeRowsToContents()
        what = "check-in(s) and file change(s)" if everything else "notification(s)"
        if self.entries:
            self.summary.setText(f"{len(self.entries)} {what}, newest first. Press Enter on a row to open it.")
        elif everything:
            self.summary.setText("No check-ins yet. Every scheduled check-in shows up here, also the skipped ones.")
        else:
            self.summary.setText("No notifications yet. Check-in alerts and file changes show up here.")
        if self.entries:
            t.setCurrentCell(0, 0)

    def open_row(self, row: int) -> None:
        if not 0 <= row < len(self.entries):
            return
        e = self.entries[row]
        if e.kind == "drift":  # the review of that persona's files ("": the soul's)
            alert = Alert("drift", e.persona, e.text)
        else:  # the chat, with the alert unless the check-in failed (or said nothing)
            alert = Alert("checkin", e.persona, e.text if e.alert else "")
        self.open_notice(Notice(persona_label(e.persona), e.text, (alert,)))

    def keyPressEvent(self, event: Any) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)
