"""*Memory…* for one persona: what it has learned, searchable (BM25), each entry's history, Undo
and Forget (asked first); entries the injection scan flagged are marked.

The window drives the persona's store from :class:`hearthside.app.memory.MemoryService`, the
same store the ``hearthside memory`` commands and the persona's own memory tools use. Every
read and write runs on a worker thread. A damaged memory file is never overwritten: the window
says so and offers *Repair*, which moves the file aside (kept) so the persona can learn again.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QLineEdit,
    QSplitter,
    QTreeView,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...app.context import AppContext
from ...core.memory import MemoryStoreError
from ...core.memory.model import CorruptMemoryError, MemoryEntry, MemoryRecord
from ..bridge import Bridge
from ..safetext import Markup, PlainLabel, one_line, rich, tip
from .managekit import (
    SELECTABLE,
    ManageWindow,
    MessageLine,
    ask,
    button,
    detail_label,
    named,
    row,
    scrolled,
    table,
)

FLAG = "⚠ flagged"


def when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


class EntriesModel(QAbstractTableModel):
    """The entries as rows, made on demand: a list of thousands of memories costs nothing until
    it is scrolled to (a widget item per entry took longer than the window may take to open)."""

    HEADERS = ("Memory", "Description", "Last change", "Flag")

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[MemoryEntry] = []

    def set_entries(self, entries: list[MemoryEntry]) -> None:
        self.beginResetModel()
        self.entries = entries
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 4

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        e = self.entries[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (e.key, e.description, when(e.updated_at), FLAG if e.finding else "")[col]
        if role == Qt.ItemDataRole.ToolTipRole and col == 3 and e.finding:
            return tip(f"Looks like an instruction hidden in a memory: {e.finding}")
        return None


class MemoryWindow(ManageWindow):
    """One persona's learned memory."""

    finished_action = Signal(str)
    loaded = Signal()

    def __init__(self, app: AppContext, bridge: Bridge, persona: str) -> None:
        super().__init__(app, bridge, f"What {one_line(persona)} remembers", f"Memory of {persona}",
                         f"What {persona} has learned while talking with you. It is kept apart from "
                         f"{persona}'s own files; you can undo any change.")
        self.persona = persona
        self.entries: list[MemoryEntry] = []
        self.record: MemoryRecord | None = None
        self.last_forgotten: tuple[str, str] | None = None
        layout = self.body

        self.corrupt_box = named(QGroupBox("The memory file is damaged"), "Damaged memory")
        cb = QVBoxLayout(self.corrupt_box)
        self.corrupt_label = PlainLabel("")
        self.corrupt_label.setWordWrap(True)
        self.corrupt_label.setTextInteractionFlags(SELECTABLE)
        self.repair_btn = button("Repair", self.repair,
                                 "Move the damaged file aside (it is kept) and start an empty memory.")
        cb.addLayout(row(self.corrupt_label, self.repair_btn))
        self.corrupt_box.hide()
        layout.addWidget(self.corrupt_box)

        self.search = named(QLineEdit(), "Search memory", "Words to look for; the best matches come first.")
        self.search.setPlaceholderText("Search what it remembers…")
        self.search.setClearButtonEnabled(True)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(200)
        self._debounce.timeout.connect(self.reload)
        self.search.textChanged.connect(lambda _: self._debounce.start())
        layout.addWidget(self.search)

        split = QSplitter(Qt.Orientation.Vertical)
        self.model = EntriesModel()
        self.tree = named(QTreeView(), "Memories")
        self.tree.setModel(self.model)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setColumnWidth(0, 190)
        self.tree.setColumnWidth(1, 300)
        self.tree.setColumnWidth(2, 130)
        self.tree.selectionModel().currentRowChanged.connect(lambda *_: self._select())
        split.addWidget(self.tree)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        self.detail = detail_label("Reading…", "Memory details")
        bl.addWidget(scrolled(self.detail), 1)
        self.history = table("History", ["When", "What happened", "By", "Value"], [130, 110, 110])
        bl.addWidget(self.history, 1)
        split.addWidget(bottom)
        layout.addWidget(split, 1)

        self.undo_btn = button("Undo last change", self.undo, "Undo the latest change to the selected memory.",
                               name="Undo latest change")
        self.forget_btn = button("Forget…", self._forget, "Forget the selected memory (can be undone).",
                                 name="Forget")
        self.undo_forget_btn = button("Undo forget", self.undo_forget, "Bring back what was just forgotten.")
        self.undo_forget_btn.hide()
        layout.addLayout(row(self.undo_btn, self.forget_btn, self.undo_forget_btn, stretch_at=3))
        self.message = MessageLine()
        layout.addWidget(self.message)
        self._buttons()
        self.resize(760, 600)
        self.reload()

    # --- reading ---------------------------------------------------------------------
    def _store(self) -> Any:  # io-ok: called only inside the work handed to call_bg
        return self.app.memory.store(self.persona)

    def reload(self) -> None:
        query = self.search.text().strip()

        def work() -> tuple[list[MemoryEntry], str]:
            store = self._store()
            return (store.search(query, 200) if query else store.list()), query

        self.call_bg(work, self._show, self._read_failed)

    def _read_failed(self, exc: BaseException) -> None:
        self.entries = []
        self.model.set_entries([])
        if isinstance(exc, CorruptMemoryError):
            self.corrupt_label.setText(
                f"{exc} Repair keeps the damaged file beside the new one, so nothing is lost.")
            self.corrupt_box.show()
            self.detail.setText(f"{self.persona}'s memory cannot be read until it is repaired.")
        else:
            self.message.say(str(exc) or type(exc).__name__, "error")
        self._buttons()
        self.loaded.emit()

    def _show(self, got: tuple[list[MemoryEntry], str]) -> None:
        entries, query = got
        if query != self.search.text().strip():
            return  # a newer search is on its way
        self.corrupt_box.hide()
        selected = self._selected_key()
        self.entries = entries
        self.model.set_entries(entries)
        if not entries:
            self.detail.setText(f"No memory matches “{query}”." if query else
                                f"{self.persona} has not learned anything yet. Memories appear here "
                                "when it saves something during a chat or a check-in.")
            self.history.clear()
        else:
            self.select_key(selected if any(e.key == selected for e in entries) else entries[0].key)
        self._buttons()
        self.loaded.emit()

    def _selected_key(self) -> str:
        idx = self.tree.currentIndex()
        return self.model.entries[idx.row()].key if idx.isValid() and idx.row() < len(self.model.entries) else ""

    def keys(self) -> list[str]:
        """The keys listed, in order."""
        return [e.key for e in self.model.entries]

    def row_texts(self, key: str) -> list[str]:
        """What the list shows for ``key`` (each column), and the flag column's tooltip last."""
        r = self.keys().index(key)
        cells = [str(self.model.data(self.model.index(r, c)) or "") for c in range(4)]
        return cells + [str(self.model.data(self.model.index(r, 3), Qt.ItemDataRole.ToolTipRole) or "")]

    def select_key(self, key: str) -> None:
        self.tree.setCurrentIndex(self.model.index(self.keys().index(key), 0))

    def _select(self) -> None:
        key = self._selected_key()
        self._buttons()
        if not key:
            return
        self.call_bg(lambda: self._store().inspect(key), lambda rec: self._show_record(key, rec),
                         self._read_failed)

    def _show_record(self, key: str, rec: MemoryRecord | None) -> None:
        if key != self._selected_key():
            return
        self.record = rec
        self.history.clear()
        if rec is None:
            self.detail.setText(f"{key} is no longer there.")
            return
        cur = rec.current
        lines: list[str] = [rich("<b>{}</b> — {}", key, cur.description), cur.value]
        if cur.finding:
            lines.append(rich("<b>Flagged:</b> this memory looks like an instruction hidden in text "
                              "({}). It is shown to the persona as data only; forget it "
                              "if you did not put it there.", cur.finding))
        if rec.truncated:
            lines.append("Older history was dropped.")
        self.detail.setText(Markup("<br>").join(lines))  # plain lines are escaped
        items = []
        for r in reversed(rec.revisions):
            what = {"active": "saved", "superseded": "replaced", "deleted": "forgotten"}.get(r.status, r.status)
            if r.origin == "undo":
                what += " (undo)"
            it = QTreeWidgetItem([when(r.updated_at), what, r.writer, r.value + (f"  [{FLAG}]" if r.finding else "")])
            items.append(it)
        self.history.addTopLevelItems(items)
        self._buttons()

    def _buttons(self) -> None:
        has = bool(self._selected_key()) and not self.corrupt_box.isVisible()
        self.undo_btn.setEnabled(has)
        self.forget_btn.setEnabled(has)

    # --- changing --------------------------------------------------------------------
    def undo(self) -> None:
        key = self._selected_key()
        rec = self.record
        if not key or rec is None or rec.current.key != key:
            return
        version = rec.revisions[-1].version

        def done(new: MemoryRecord) -> None:
            state = "brought back" if new.exists else "removed (it was new)"
            self.message.say(f"Undid the latest change to {key}: {state}.", "ok")
            self.reload()
            self.finished_action.emit("undo")

        self.call_bg(lambda: self._store().undo(key, version), done, self._write_failed)

    def _forget(self) -> None:
        key = self._selected_key()
        if key:
            ask(self, "Forget memory", f"Forget “{key}”? {self.persona} will not see it any more. "
                "You can undo this.", "Forget", lambda: self.forget(key))

    def forget(self, key: str) -> None:
        rec = self.record

        def work() -> MemoryRecord | None:
            store = self._store()
            current = rec.current.version if rec is not None and rec.current.key == key else None
            return store.forget(key, current)  # type: ignore[no-any-return]

        def done(new: MemoryRecord | None) -> None:
            if new is not None:
                self.last_forgotten = (key, new.current.version)
                self.undo_forget_btn.show()
            self.message.say(f"Forgot {key}. Undo forget brings it back.", "ok")
            self.reload()
            self.finished_action.emit("forget")

        self.call_bg(work, done, self._write_failed)

    def undo_forget(self) -> None:
        if self.last_forgotten is None:
            return
        key, version = self.last_forgotten

        def done(_: MemoryRecord) -> None:
            self.last_forgotten = None
            self.undo_forget_btn.hide()
            self.message.say(f"{key} is back.", "ok")
            self.reload()
            self.finished_action.emit("undo forget")

        self.call_bg(lambda: self._store().undo(key, version), done, self._write_failed)

    def _write_failed(self, exc: BaseException) -> None:
        if isinstance(exc, CorruptMemoryError):
            self._read_failed(exc)
        else:
            text = str(exc) if isinstance(exc, MemoryStoreError) else f"Something went wrong ({exc})."
            self.message.say(text[:1].upper() + text[1:] + " Nothing was changed.", "error")
            self.reload()
        self.finished_action.emit("failed")

    def repair(self) -> None:
        def done(moved: Any) -> None:
            if moved is None:
                self.message.say(f"{self.persona}'s memory file is fine; nothing to repair.", "ok")
            else:
                self.message.say(f"The damaged file was kept as {moved}. {self.persona} starts with an "
                                 "empty memory.", "ok")
            self.reload()
            self.finished_action.emit("repair")

        self.call_bg(lambda: self._store().repair(), done, self._write_failed)

