"""*Review changes*: each file waiting for review, its diff against the approved copy,
injection findings, and Approve / Approve all / Open in editor / Show in folder; and, on a
second tab, writing specialists' forks waiting for Apply / Discard (``review_forks``).

Everything shown comes from :mod:`hearthside.app.review` (which asks the drift service), read on
a worker thread through the bridge. A drift event refreshes the list, and the diff when it is
about the file on screen. Approving writes only Hearthside's state dir (``DriftService.approve``).
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QListWidgetItem, QMessageBox, QPushButton, QTabWidget, QVBoxLayout, QWidget

from ...app import review as review_app
from ...app.context import AppContext
from ...app.drift import FileStatus
from ..bridge import Bridge
from ..dialogs import MessageDialog
from ..safetext import (
    Markup,
    PlainLabel,
    RichLabel,
    escape,
    informative,
    message_box,
    one_line,
    rich,
    tip,
)
from .common import UrlOpener, close_on_escape, desktop_open, open_path
from .diffview import ListAndDiff, buttons_and_status, diff_rows_html, selectable
from .review_forks import ForksPanel

STATE_TEXT = {
    "drifted": "changed since you approved it",
    "new": "new, never approved",
    "missing": "missing",
    "rejected": "cannot be used",
    "approved": "approved",
}


def file_label(st: FileStatus) -> str:
    who = one_line(st.persona) if st.persona else "your soul"  # a folder name: one line, no bidi
    return f"{who} · {one_line(st.file)} — {STATE_TEXT.get(st.state, st.state)}"


def list_label(st: FileStatus) -> str:
    """Two short lines for the list: the file and whose it is, then its state."""
    who = one_line(st.persona) if st.persona else "your soul"  # a folder name: one line, no bidi
    return f"{one_line(st.file)} ({who})\n{STATE_TEXT.get(st.state, st.state)}"


def diff_html(item: review_app.ReviewItem) -> Markup:
    """The diff as preformatted lines: old and new line numbers, +/− and coloured backgrounds."""
    return diff_rows_html(item.rows)


def finding_text(f: review_app.Finding) -> str:
    what = ("an invisible character" if f.matched.startswith("U+")
            else "text that tries to give the model orders")
    return f"⚠ Line {f.line}: {f.matched} — {what}. Approve only if you wrote it."


def finding_html(f: review_app.Finding) -> Markup:
    return Markup(escape(finding_text(f)).replace(escape(f.matched), rich("<b>{}</b>", f.matched), 1))


class ReviewWindow(QWidget):
    """The list of waiting files and the one selected; closing it only hides it."""

    refreshed = Signal()  # a fresh snapshot is on screen (tests and the tray badge listen)
    approved = Signal(list)  # statuses approved by the person

    def __init__(self, app: AppContext, bridge: Bridge, persona: str | None = None,
                 opener: UrlOpener = desktop_open) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.persona = persona
        self.opener = opener
        self.files: list[FileStatus] = []
        self.item: review_app.ReviewItem | None = None
        self.shown: FileStatus | str | None = None
        self.message: MessageDialog | None = None
        self.confirm_box: QMessageBox | None = None  # made by safetext.message_box
        self._reading = False  # a snapshot is being read on a worker
        self._again = False  # a refresh was asked for while it was
        self._stale = False
        self.setWindowTitle("Review changes — Hearthside")
        self.resize(900, 560)
        self._build()
        close_on_escape(self)
        bridge.drift_event.connect(self._on_drift)
        self.refresh()

    # --- layout ------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        self.tabs = QTabWidget()
        files_page = QWidget()
        root = QVBoxLayout(files_page)
        self.tabs.addTab(files_page, "Persona files")
        self.forks_panel = ForksPanel(self.app, self.bridge)
        self.tabs.addTab(self.forks_panel, "Specialists' changes")
        self.forks_panel.refreshed.connect(self._forks_counted)
        outer.addWidget(self.tabs)
        intro = PlainLabel("Persona files you edited by hand since you last approved them. Approve a "
                       "file when the change is yours; Hearthside never changes these files itself.")
        intro.setWordWrap(True)
        root.addWidget(intro)
        self.notes = selectable(PlainLabel())
        self.findings = selectable(RichLabel(), "Injection findings")
        self.findings.setStyleSheet("QLabel{background:#fff4e5;border:1px solid #e0a040;padding:4px}")
        self.pane = ListAndDiff("Files waiting for review", "File", "Changes against the approved copy", [self.notes],
                                [self.findings])
        self.list, self.title, self.diff = self.pane.list, self.pane.title, self.pane.diff
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.currentRowChanged.connect(self._on_select)
        root.addWidget(self.pane, 1)
        self.approve_button = QPushButton("Approve")
        self.approve_all_button = QPushButton("Approve all…")
        self.editor_button = QPushButton("Open in editor")
        self.folder_button = QPushButton("Show in folder")
        self.status = buttons_and_status(root, (self.approve_button, self.approve_all_button, self.editor_button,
                                                self.folder_button))
        self.approve_button.clicked.connect(self.approve_selected)
        self.approve_all_button.clicked.connect(self.ask_approve_all)
        self.editor_button.clicked.connect(self.open_in_editor)
        self.folder_button.clicked.connect(self.show_in_folder)
        self.approve_button.setDefault(True)
        self._show_item()
        self.forks_panel.refresh()

    def _forks_counted(self) -> None:
        n = len(self.forks_panel.records)
        self.tabs.setTabText(1, f"Specialists' changes ({n})" if n else "Specialists' changes")

    def show_forks(self) -> None:
        """Bring the specialists' changes to the front (a "ready for review" notice was clicked)."""
        self.tabs.setCurrentWidget(self.forks_panel)
        self.forks_panel.refresh()

    # --- data --------------------------------------------------------------------------
    def focus_file(self, path: str) -> None:
        """Show this file (from a notification click), even if it was already approved."""
        self.shown = os.path.abspath(path)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the waiting list and the shown file on a worker thread.

        One read at a time: a refresh asked for while one runs is done once, right after it.
        (Dropping every result a newer request had overtaken starved the window while a program
        rewrote the file faster than it could be read: nothing was ever shown.)"""
        if self._reading:
            self._again = True
            return
        self._reading, self._again = True, False
        shown, drift = self.shown, self.app.drift
        self.bridge.call(lambda: review_app.snapshot(drift, shown),
                         lambda snap: self._read(shown, snap), self._read_failed)

    def _read(self, shown: Any, snap: review_app.ReviewSnapshot) -> None:
        self._reading = False
        if shown is self.shown or shown == self.shown:
            self._apply(snap)  # the newest complete reading of what is on screen
        if self._again:
            self.refresh()

    def _read_failed(self, exc: BaseException) -> None:
        self._reading = False
        self._failed(exc)
        if self._again:
            self.refresh()

    def _on_drift(self, event: Any) -> None:
        if self.isVisible():
            self.refresh()  # the list may change; the diff too when it is the file on screen
        else:
            self._stale = True  # a hidden window catches up when it is shown again

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._stale:
            self._stale = False
            self.refresh()

    def _failed(self, exc: BaseException) -> None:
        self.status.setText(f"Could not read the persona files: {exc}")
        self.refreshed.emit()

    def _apply(self, snap: review_app.ReviewSnapshot) -> None:
        files = [f for f in snap.files if self.persona is None or f.persona == self.persona
                 or (isinstance(self.shown, str) and f.path == self.shown)]
        self.files = files
        items = []
        for st in files:
            it = QListWidgetItem(list_label(st))
            it.setToolTip(tip(st.path))
            it.setData(Qt.ItemDataRole.AccessibleTextRole, file_label(st))
            items.append(it)
        shown_path = self._shown_path()
        row = next((i for i, f in enumerate(files) if f.path == shown_path), 0 if files else -1)
        self.pane.refill(items, row)
        if row >= 0 and (snap.item is None or snap.item.path != files[row].path):
            self.shown = files[row]
            self.refresh()  # fetch the item of the row now selected
            return
        self.item = snap.item
        if self.item is not None:
            self.shown = self.item.status
        self._show_item()
        self.refreshed.emit()

    def _shown_path(self) -> str | None:
        if self.shown is None:
            return None
        return self.shown if isinstance(self.shown, str) else self.shown.path

    def _on_select(self, row: int) -> None:
        if 0 <= row < len(self.files) and self.files[row].path != self._shown_path():
            self.shown = self.files[row]
            self.refresh()

    def _show_item(self) -> None:
        item = self.item
        has = item is not None
        self.approve_button.setEnabled(item.can_approve if item else False)
        self.approve_all_button.setEnabled(bool(self.files))
        self.editor_button.setEnabled(item.can_open if item else False)
        self.folder_button.setEnabled(has)
        self.findings.setText("")
        if item is None:
            self.title.setText(rich("<b>Nothing is waiting for review.</b>"))
            self.notes.setText("When you edit a persona file by hand, Hearthside shows the change here "
                               "so you can approve it. Nothing to do right now.")
            self.diff.setHtml("")
            self.diff.setVisible(False)
            self.findings.setVisible(False)
            return
        st = item.status
        self.diff.setVisible(True)
        self.title.setText(rich("<b>{} · {}</b> — {}<br><span style='color:#555'>{}</span>", st.persona or "your soul",
                                st.file, STATE_TEXT.get(st.state, st.state), st.path))
        self.notes.setText("\n".join(n[:1].upper() + n[1:] for n in item.notes))
        self.notes.setVisible(bool(item.notes))
        self.diff.setHtml(diff_html(item))
        self.findings.setVisible(bool(item.findings))
        self.findings.setText(Markup("<br>").join(finding_html(f) for f in item.findings))

    # --- actions -------------------------------------------------------------------------
    def approve_selected(self) -> None:
        if self.item is None:
            return
        self._approve([self.item])  # the version on screen, by its fingerprint

    def ask_approve_all(self) -> None:
        """Confirm with the list of files, then approve exactly those."""
        if not self.files:
            return
        shown = list(self.files)
        box = message_box(self, "Approve all changes?", f"Approve these {len(shown)} files as they are now?",
                          QMessageBox.Icon.Question)
        informative(box, "\n".join(file_label(f) for f in self.files))
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Yes).setText("Approve all")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.accepted.connect(lambda: self._approve(shown))
        self.confirm_box = box
        box.open()

    def _approve(self, shown: list[FileStatus] | list[review_app.ReviewItem]) -> None:
        self.status.setText("Approving…")
        drift = self.app.drift
        self.bridge.call(lambda: review_app.approve(drift, shown), self._approved, self._approve_failed)

    def _approved(self, outcome: review_app.ApproveOutcome) -> None:
        ok = [d for d in outcome.done if d.state != "rejected"]
        bad = [d for d in outcome.done if d.state == "rejected"]
        parts = []
        if ok:
            parts.append("Approved: " + ", ".join(f"{d.persona or 'soul'}/{d.file}" for d in ok) + ".")
        if bad:
            parts.append("Not approved: " + "; ".join(f"{d.file}: {d.reason}" for d in bad) + ".")
        if outcome.changed_since_shown:
            names = ", ".join(f"{d.persona or 'soul'}/{d.file}" for d in outcome.changed_since_shown)
            parts.append(f"Not approved: {names} changed again since it was shown; look at the new "
                         "version and approve again.")
        self.status.setText(" ".join(parts) or "Nothing needed approving.")
        self.approved.emit(ok)
        if not outcome.changed_since_shown:
            self.shown = None
        self.refresh()

    def _approve_failed(self, exc: BaseException) -> None:
        self.status.setText(str(exc))
        self.refresh()

    def open_in_editor(self) -> None:
        if self.item is not None:
            self.message = open_path(self, self.item.path, "the file", self.opener)

    def show_in_folder(self) -> None:
        if self.item is not None:
            folder = os.path.dirname(self.item.path)
            self.message = open_path(self, folder, "the folder", self.opener)

    def closeEvent(self, event: Any) -> None:
        event.ignore()
        self.hide()
