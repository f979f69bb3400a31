"""The *Specialists' changes* part of the review window: forks waiting for Apply or Discard.

A writing specialist worked on a copy of the workspace; what it changed is listed here (files
added, changed, removed, each with its diff). Everything is read and done on a worker through
the bridge (``ForkService.pending/show/apply/discard``); failures are decided on their
:class:`~hearthside.core.errors.ErrorKind` (a conflict keeps the fork and names the files; an
already-applied fork just leaves the list), never on their wording.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QListWidgetItem, QMessageBox, QPushButton, QVBoxLayout, QWidget

from ...app import review as review_app
from ...app.context import AppContext
from ...app.forks import ForkRecord, ForkReview
from ...core.errors import ErrorKind, kind_of, sentence_of
from ..bridge import Bridge
from ..safetext import Markup, PlainLabel, message_box, one_line, rich, tip
from .diffview import ListAndDiff, buttons_and_status, diff_rows_html, selectable

CHANGE_TEXT = {"added": "Added", "changed": "Changed", "removed": "Removed"}


@dataclass
class ForksSnapshot:
    """The forks waiting for review and the one shown, read in one background call."""

    records: list[ForkRecord] = field(default_factory=list)
    review: ForkReview | None = None
    problem: str = ""


def read_forks(app: AppContext, shown: str | None) -> ForksSnapshot:
    """Runs on a worker: the pending forks, and the review of ``shown`` (else the newest)."""
    forks = app.forks
    records = forks.pending()
    fid = shown if any(r.id == shown for r in records) else (records[0].id if records else None)
    if fid is None:
        return ForksSnapshot(records)
    try:
        return ForksSnapshot(records, forks.show(fid))
    except Exception as exc:  # noqa: BLE001 - one damaged fork must not hide the others
        return ForksSnapshot(records, None, sentence_of(exc))


def fork_label(rec: ForkRecord) -> str:
    when = time.strftime("%d %b %H:%M", time.localtime(rec.created))
    return f"{one_line(rec.label) or rec.id}\n{one_line(rec.persona) or 'no persona'} · {when}"


def review_html(review: ForkReview) -> Markup:
    """Every changed file: a heading (added, changed, removed) and its numbered diff."""
    parts: list[Markup] = []
    for f in review.files:
        parts.append(rich("<h4 style='margin:8px 0 2px 0'>{} · {}</h4>", CHANGE_TEXT.get(f.change, f.change), f.name))
        if f.text:
            _notes, rows = review_app.parse_diff(f.text)
            parts.append(rows_html(rows))
        else:
            parts.append(rich("<p style='margin:0'><i>{}</i></p>", f.note or "no lines to show"))
    return Markup("").join(parts) if parts else rich("<p><i>This fork changed no files.</i></p>")


def rows_html(rows: list[review_app.DiffRow]) -> Markup:
    return diff_rows_html(tuple(rows))


class ForksPanel(QWidget):
    """The list of forks waiting for review and the one selected, with Apply and Discard."""

    refreshed = Signal()  # a fresh reading is on screen (tests and the window's tab title listen)
    applied = Signal(str)  # the fork id, after a successful apply

    def __init__(self, app: AppContext, bridge: Bridge) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.records: list[ForkRecord] = []
        self.review: ForkReview | None = None
        self.shown: str | None = None
        self.confirm_box: QMessageBox | None = None
        self._reading = False
        self._again = False
        self._busy = False
        self._build()

    def _build(self) -> None:
        root = QVBoxLayout(self)
        intro = PlainLabel("A specialist that writes works on a copy of your workspace. Its changes wait here: "
                           "Apply brings them into your workspace, Discard throws them away.")
        intro.setWordWrap(True)
        root.addWidget(intro)
        self.summary = selectable(PlainLabel(), "What the specialist said")
        self.pane = ListAndDiff("Changes waiting for review", "Fork", "The fork's changes", [self.summary],
                                sizes=(260, 640))
        self.list, self.title, self.diff = self.pane.list, self.pane.title, self.pane.diff
        self.list.currentRowChanged.connect(self._on_select)
        root.addWidget(self.pane, 1)
        self.apply_button = QPushButton("Apply")
        self.discard_button = QPushButton("Discard…")
        self.status = buttons_and_status(root, (self.apply_button, self.discard_button))
        self.apply_button.clicked.connect(self.apply_selected)
        self.discard_button.clicked.connect(self.ask_discard)
        self._show()

    # --- data --------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the pending forks and the shown one on a worker (one reading at a time)."""
        if self._reading:
            self._again = True
            return
        self._reading, self._again = True, False
        app, shown = self.app, self.shown
        self.bridge.call(lambda: read_forks(app, shown), self._read, self._read_failed)

    def _read(self, snap: ForksSnapshot) -> None:
        self._reading = False
        self.records = snap.records
        self.review = snap.review
        self.shown = snap.review.record.id if snap.review else None
        items = []
        for rec in self.records:
            it = QListWidgetItem(fork_label(rec))
            it.setToolTip(tip(rec.summary or rec.label))
            items.append(it)
        self.pane.refill(items, next((i for i, r in enumerate(self.records) if r.id == self.shown), -1))
        self._show()
        if snap.problem:
            self.status.setText(snap.problem)
        self.refreshed.emit()
        if self._again:
            self.refresh()

    def _read_failed(self, exc: BaseException) -> None:
        self._reading = False
        self.status.setText(f"Could not read the specialists' changes: {sentence_of(exc)}")
        self.refreshed.emit()
        if self._again:
            self.refresh()

    def _on_select(self, row: int) -> None:
        if 0 <= row < len(self.records) and self.records[row].id != self.shown:
            self.shown = self.records[row].id
            self.refresh()

    def _show(self) -> None:
        rv = self.review
        self.apply_button.setEnabled(rv is not None and not rv.diff.empty and not self._busy)
        self.discard_button.setEnabled(rv is not None and not self._busy)
        if rv is None:
            self.title.setText(rich("<b>No specialist's changes are waiting.</b>"))
            self.summary.setText("When a specialist that writes finishes, its changes appear here for you to "
                                 "apply or discard. Your workspace is not touched until you apply them.")
            self.diff.setHtml("")
            self.diff.setVisible(False)
            return
        rec, d = rv.record, rv.diff
        self.diff.setVisible(True)
        self.title.setText(rich("<b>{}</b> — {} added, {} changed, {} removed<br>"
                                "<span style='color:#555'>{} · into {}</span>", rec.label or rec.id, len(d.added),
                                len(d.changed), len(d.removed), rec.persona or "no persona", rec.workspace))
        lines = [rec.summary] if rec.summary else []
        if rec.advisory:
            lines.append(rec.advisory)
        self.summary.setText("\n".join(lines))
        self.summary.setVisible(bool(lines))
        self.diff.setHtml(review_html(rv))

    # --- actions -------------------------------------------------------------------------
    def apply_selected(self) -> None:
        if self.review is None or self._busy:
            return
        fid, forks = self.review.record.id, self.app.forks
        self._busy = True
        self._show()
        self.status.setText("Applying…")
        self.bridge.call(lambda: forks.apply(fid), lambda names: self._applied(fid, names), self._failed)

    def _applied(self, fid: str, names: tuple[str, ...]) -> None:
        self._busy = False
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        self.status.setText(f"Applied: {shown}." if names else "Applied; nothing needed changing.")
        self.shown = None
        self.applied.emit(fid)
        self.refresh()

    def ask_discard(self) -> None:
        if self.review is None or self._busy:
            return
        rec = self.review.record
        box = message_box(self, "Discard these changes?",
                          f"Throw away what the specialist changed ({rec.label or rec.id})? "
                          "Your workspace stays as it is.", QMessageBox.Icon.Question)
        box.setStandardButtons(QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        fid = rec.id
        box.button(QMessageBox.StandardButton.Discard).clicked.connect(lambda: self._discard(fid))
        self.confirm_box = box
        box.open()

    def _discard(self, fid: str) -> None:
        forks = self.app.forks
        self._busy = True
        self._show()
        self.status.setText("Discarding…")
        self.bridge.call(lambda: forks.discard(fid), lambda _none: self._discarded(), self._failed)

    def _discarded(self) -> None:
        self._busy = False
        self.status.setText("Discarded; your workspace was not changed.")
        self.shown = None
        self.refresh()

    def _failed(self, exc: BaseException) -> None:
        """Decided on the kind: a conflict keeps the fork on screen; a fork that is already
        applied or gone leaves the list; anything else is said as it is."""
        self._busy = False
        kind = kind_of(exc)
        if kind in (ErrorKind.ALREADY_DONE, ErrorKind.NOT_FOUND):
            self.shown = None
            self.status.setText(f"{sentence_of(exc)} The list is up to date now.")
        elif kind == ErrorKind.CONFLICT:
            self.status.setText(f"{sentence_of(exc)} Look at those files, then discard the fork or ask again.")
        else:
            self.status.setText(sentence_of(exc))
        self._show()
        self.refresh()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.refresh()
