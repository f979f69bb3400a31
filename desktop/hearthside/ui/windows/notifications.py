"""The *Notifications* window: every alert and failure in the history, newest first.

The history file is the source of truth (a balloon may never appear); this window is also the
in-app list where neither a tray nor a notification service exists. It is read on a worker
thread and re-read when a new notice or check-in outcome arrives while the window is shown.
Activating a check-in alert opens the persona's chat with it; a drift notice opens the review.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...app.alerts import Alert, Notice, persona_label
from ..bridge import Bridge
from ..icon import hearth_icon
from ..safetext import PlainLabel, tip

if TYPE_CHECKING:
    from ...app.context import AppContext

#: History status -> what the window says.
STATUS_LABELS = {"notified": "notified", "duplicate": "silent (same alert within 24 h)", "failed": "failed"}


def when_label(iso: str) -> str:
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
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, 4)
        self.table.setAccessibleName("Notification history")
        self.table.setHorizontalHeaderLabels(["Time", "Persona", "Message", "Status"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        head.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
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
        self.entries: list[Any] = []
        self.loaded = 0
        bridge.notification.connect(self._maybe_reload)
        bridge.heartbeat_outcome.connect(self._maybe_reload)
        self.resize(720, 420)

    def _maybe_reload(self, *_: object) -> None:
        if self.isVisible():
            self.reload()

    def reload(self) -> None:
        history = self.app.notifications
        self.bridge.call(lambda: history.entries(), self.show_entries,
                         lambda exc: self.summary.setText(f"The history could not be read: {exc}"))

    def show_entries(self, entries: list[Any]) -> None:
        self.entries = list(reversed(entries))
        self.loaded += 1
        t = self.table
        t.setRowCount(len(self.entries))
        for i, e in enumerate(self.entries):
            who = persona_label(e.persona) if e.kind == "drift" else e.persona
            cells = [when_label(e.time), who, e.text, STATUS_LABELS.get(e.status, e.status)]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip(text) if j == 2 else "")
                t.setItem(i, j, item)
        t.resizeRowsToContents()
        self.summary.setText(f"{len(self.entries)} notification(s), newest first. Press Enter on a row to open it."
                             if self.entries else "No notifications yet. Check-in alerts and file changes show up here.")
        if self.entries:
            t.setCurrentCell(0, 0)

    def open_row(self, row: int) -> None:
        if not 0 <= row < len(self.entries):
            return
        e = self.entries[row]
        if e.kind == "drift":  # the review of that persona's files ("": the soul's)
            alert = Alert("drift", e.persona, e.text)
        else:  # the chat, with the alert unless the check-in failed
            alert = Alert("checkin", e.persona, e.text if e.status != "failed" else "")
        self.open_notice(Notice(persona_label(e.persona), e.text, (alert,)))

    def keyPressEvent(self, event: Any) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)
