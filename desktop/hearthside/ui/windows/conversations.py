"""The chat window's sidebar: the selected persona's kept conversations, newest first.

It lists (``ConversationService.list``), searches (``search``, ~200 ms after the last key),
renames (double-click or the context menu: a one-line field in place of the list's top), deletes
with an *Undo* bar for the service's undo window, and exports (a file dialog, then the write on
a worker thread). Choosing a conversation or *New chat* is only announced (:attr:`chosen`,
:attr:`new_chat`): the chat window owns the session and the transcript.

Every service call goes through the bridge (the service reads and writes files); every title,
snippet and problem is a service's text, shown as item text or in a plain label, never markup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...app.context import AppContext
from ...core.conversations import ConversationMeta
from ...core.errors import ErrorKind, kind_of, sentence_of
from ..bridge import Bridge
from ..safetext import PlainLabel, menu_text, one_line, tip

#: How long the search waits after the last key before it asks the service.
SEARCH_DEBOUNCE_MS = 200
#: The line the sidebar shows for a persona without conversations.
EMPTY = "No conversations yet — write below to start one."
#: Where a conversation's id is kept on its list item.
ID_ROLE = Qt.ItemDataRole.UserRole

#: ``(parent, caption, suggested path) -> chosen path or ""``: the export's file dialog (a test
#: replaces it; the write itself is :meth:`ConversationSidebar.export_to`).
SaveDialog = Callable[[QWidget, str, str], str]


def _save_dialog(parent: QWidget, caption: str, suggested: str) -> str:
    path, _filter = QFileDialog.getSaveFileName(parent, caption, suggested, "Markdown (*.md);;All files (*)")
    return path


def when(at: float, now: float | None = None) -> str:
    """A short, local time for a list: "14:05" today, "Mon 3 Mar" this year, else "3 Mar 2025"."""
    t, today = datetime.fromtimestamp(at), datetime.fromtimestamp(time.time() if now is None else now)
    if t.date() == today.date():
        return t.strftime("%H:%M")
    if t.year == today.year:
        return f"{t.strftime('%a')} {t.day} {t.strftime('%b')}"
    return f"{t.day} {t.strftime('%b %Y')}"


def item_text(meta: ConversationMeta, second: str = "") -> str:
    """Two lines: the title, then when it changed and how long it is (or a search snippet)."""
    line2 = second or f"{when(meta.updated)} · {meta.messages} message{'s' if meta.messages != 1 else ''}"
    if meta.read_only:
        line2 = "read-only · " + line2
    elif meta.problems:
        line2 = "⚠ " + line2
    return f"{one_line(meta.title)}\n{one_line(line2)}"


def file_name_for(title: str) -> str:
    """A file name suggested for an export: the title's letters and digits, at most 60."""
    safe = "".join(c if c.isalnum() or c in " -_" else " " for c in title)
    return ("-".join(safe.split())[:60] or "conversation") + ".md"


class ConversationSidebar(QWidget):
    """The list of one persona's conversations; see the module docstring."""

    #: a conversation was chosen (its meta data as listed)
    chosen = Signal(ConversationMeta)
    #: *New chat* was pressed
    new_chat = Signal()
    #: the open conversation was deleted (its id): the window starts a new one
    deleted = Signal(str)
    #: after each answer of the service ("listed", "searched", "renamed", "deleted", "undone",
    #: "exported", "failed"): tests and screenshots wait on it
    done = Signal(str)

    def __init__(self, app: AppContext, bridge: Bridge, persona: str, save_dialog: SaveDialog | None = None) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.persona = persona
        self.save_dialog = save_dialog or _save_dialog
        self.metas: list[ConversationMeta] = []  # as listed, newest first
        self.current = ""  # the id of the conversation the window shows ("" for a new one)
        self.last_deleted: tuple[str, float] | None = None  # (id, until) while Undo is offered
        self._generation = 0  # answers for an earlier persona are dropped
        self._query = 0  # answers to an earlier search are dropped
        self._hit_meta: dict[str, ConversationMeta] = {}  # the search results' conversations
        self._renaming = ""  # the conversation the title field renames
        self._prepared: set[str] = set()  # personas whose search index was built ahead
        self._build()

    # --- layout --------------------------------------------------------------------------
    def _build(self) -> None:
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setAccessibleName("Search conversations")
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._search_later)
        top.addWidget(self.search, 1)
        self.new_button = QPushButton("New chat")
        self.new_button.setAccessibleName("New chat")
        self.new_button.setToolTip(tip("Start a new conversation; this one is kept in the list."))
        self.new_button.clicked.connect(self._new_chat)
        top.addWidget(self.new_button)
        col.addLayout(top)

        self.rename_field = QLineEdit()
        self.rename_field.setAccessibleName("New title")
        self.rename_field.setPlaceholderText("A title for this conversation (Enter saves, Esc cancels)")
        self.rename_field.returnPressed.connect(self._rename_entered)
        self.rename_field.installEventFilter(self)
        self.rename_field.hide()
        col.addWidget(self.rename_field)

        self.list = QListWidget()
        self.list.setAccessibleName("Conversations")
        # two lines per conversation, each elided (the tooltip has the whole title): rows of one
        # height, so 2,000 conversations are laid out at once without measuring each
        self.list.setWordWrap(False)
        self.list.setUniformItemSizes(True)
        self.list.setAlternatingRowColors(True)  # where one conversation ends is clear
        self.list.setSpacing(2)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        # a list that may scroll sideways lays long titles out in full instead of eliding them
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemClicked.connect(self._choose)
        self.list.itemActivated.connect(self._choose)
        self.list.itemDoubleClicked.connect(lambda item: self.start_rename(item.data(ID_ROLE)))
        col.addWidget(self.list, 1)

        self.empty = PlainLabel(EMPTY)
        self.empty.setAccessibleName("No conversations")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setStyleSheet("color:#555;padding:16px")
        self.empty.hide()
        col.addWidget(self.empty, 1)

        self.undo_bar = QFrame()
        self.undo_bar.setObjectName("undobar")
        self.undo_bar.setStyleSheet("#undobar{background:#eef3fa;border:1px solid #8aa4c8;border-radius:4px}")
        ub = QHBoxLayout(self.undo_bar)
        ub.setContentsMargins(6, 2, 6, 2)
        self.undo_text = PlainLabel("Conversation deleted.")
        self.undo_text.setWordWrap(True)
        ub.addWidget(self.undo_text, 1)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setAccessibleName("Undo delete")
        self.undo_button.clicked.connect(self.undo)
        ub.addWidget(self.undo_button)
        self.undo_bar.hide()
        col.addWidget(self.undo_bar)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self._undo_window_over)

        actions = QHBoxLayout()
        self.rename_button = QPushButton("Rename")
        self.export_button = QPushButton("Export…")
        self.delete_button = QPushButton("Delete")
        for b, why in ((self.rename_button, "Give the selected conversation a title of your own."),
                       (self.export_button, "Save the selected conversation as a Markdown file."),
                       (self.delete_button, "Delete the selected conversation (you can undo it for a few seconds).")):
            b.setAccessibleName(b.text().replace("…", "") + " conversation")
            b.setToolTip(tip(why))
            actions.addWidget(b)
        self.rename_button.clicked.connect(lambda: self.start_rename(self.selected_id()))
        self.export_button.clicked.connect(lambda: self.export(self.selected_id()))
        self.delete_button.clicked.connect(lambda: self.delete(self.selected_id()))
        col.addLayout(actions)
        self.message = PlainLabel()
        self.message.setAccessibleName("Conversations message")
        self.message.setWordWrap(True)
        self.message.hide()
        col.addWidget(self.message)
        self.list.currentItemChanged.connect(lambda *_: self._enable())
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DEBOUNCE_MS)
        self._search_timer.timeout.connect(self.run_search)
        self._enable()

    def eventFilter(self, obj: Any, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if obj is self.rename_field and event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Escape:
            self.rename_field.hide()
            self.list.setFocus()
            return True
        return super().eventFilter(obj, event)

    def _enable(self) -> None:
        meta = self.meta_of(self.selected_id())
        self.rename_button.setEnabled(meta is not None and not meta.read_only)
        for b in (self.export_button, self.delete_button):
            b.setEnabled(meta is not None)

    def say(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet("color:#b00020" if error else "color:#1b5e20")
        self.message.setVisible(bool(text))

    # --- background calls: answers for a window that is gone, or for another persona, are dropped
    def _call(self, work: Callable[[], Any], done: Callable[[Any], None], what: str) -> None:
        generation = self._generation

        def deliver(value: Any) -> None:
            if shiboken6.isValid(self) and generation == self._generation:
                done(value)

        def failed(exc: BaseException) -> None:
            if shiboken6.isValid(self) and generation == self._generation:
                self._failed(exc, what)

        self.bridge.call(work, deliver, failed)

    def _failed(self, exc: BaseException, what: str) -> None:
        sentence = sentence_of(exc) or type(exc).__name__
        if kind_of(exc) is ErrorKind.NOT_FOUND and what != "undo":
            self.refresh()  # gone meanwhile (another process, retention): the list catches up
        self.say(sentence, error=True)
        self.done.emit("failed")

    # --- listing -----------------------------------------------------------------------------
    def set_persona(self, persona: str) -> None:
        """Show another persona's conversations (the search is cleared, a pending undo kept)."""
        self.persona = persona
        self.current = ""
        self._generation += 1
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.rename_field.hide()
        self.say("")
        self.refresh()

    def refresh(self, select: str | None = None) -> None:
        """List the persona's conversations again (after a message, a rename, a delete)."""
        if select is not None:
            self.current = select
        app, persona = self.app, self.persona
        self._call(lambda: app.conversations.list(persona), self._listed, "list")

    def _listed(self, metas: list[ConversationMeta]) -> None:
        self.metas = metas
        if metas and self.persona not in self._prepared:  # the first search is then warm (a worker builds it)
            self._prepared.add(self.persona)
            app, persona = self.app, self.persona
            self.bridge.call(lambda: app.conversations.prepare_search(persona), None, lambda _e: None)
        if self.search.text().strip():
            self.done.emit("listed")
            self.run_search()  # the results stay on show; they are asked again
            return
        self._fill([(m, "") for m in metas])
        self.done.emit("listed")

    def _fill(self, rows: list[tuple[ConversationMeta, str]], searching: bool = False) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for meta, second in rows:
            item = QListWidgetItem(item_text(meta, second))
            item.setData(ID_ROLE, meta.id.value)
            why = [meta.title, *meta.problems]
            if meta.read_only:
                why.append("This conversation can be read, exported and deleted, but not continued.")
            item.setToolTip(tip("\n".join(why)))
            self.list.addItem(item)
            if meta.id.value == self.current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        none = not rows
        self.list.setVisible(not none)
        self.empty.setVisible(none)
        self.empty.setText("Nothing found in the conversations." if searching else EMPTY)
        self._enable()

    def selected_id(self) -> str:
        item = self.list.currentItem()
        return str(item.data(ID_ROLE)) if item is not None else ""

    def meta_of(self, cid: str) -> ConversationMeta | None:
        return next((m for m in self.metas if m.id.value == cid), None) if cid else None

    def titles(self) -> list[str]:
        """The titles as listed, top to bottom (tests and screenshots)."""
        return [self.list.item(i).text().split("\n", 1)[0] for i in range(self.list.count())]

    def select(self, cid: str) -> None:
        """Mark ``cid`` as the open conversation ("" for none) without announcing it."""
        self.current = cid
        self.list.blockSignals(True)
        self.list.setCurrentRow(-1)
        for i in range(self.list.count()):
            if self.list.item(i).data(ID_ROLE) == cid:
                self.list.setCurrentRow(i)
        self.list.blockSignals(False)
        self._enable()

    def _choose(self, item: QListWidgetItem) -> None:
        cid = str(item.data(ID_ROLE))
        meta = self.meta_of(cid) or self._hit_meta.get(cid)
        if meta is not None and cid != self.current:
            self.current = cid
            self.chosen.emit(meta)

    def _new_chat(self) -> None:
        self.select("")
        self.new_chat.emit()

    # --- search ------------------------------------------------------------------------------
    def _search_later(self, _text: str) -> None:
        self._search_timer.start()  # restarted by every key: one search after the typing stops

    def run_search(self) -> None:
        """Search now for what the box holds (an empty box shows the list again)."""
        self._search_timer.stop()
        query = self.search.text().strip()
        if not query:
            self._fill([(m, "") for m in self.metas])
            self.done.emit("searched")
            return
        app, persona = self.app, self.persona
        self._query += 1
        asked = self._query
        self._call(lambda: app.conversations.search(persona, query),
                   lambda hits: self._found(hits) if asked == self._query else None, "search")

    def _found(self, hits: list[Any]) -> None:
        self._hit_meta = {h.meta.id.value: h.meta for h in hits}
        self._fill([(h.meta, h.snippet or "") for h in hits], searching=True)
        self.done.emit("searched")

    # --- rename ------------------------------------------------------------------------------
    def start_rename(self, cid: str) -> None:
        """The title field above the list, filled with the current title (Enter saves)."""
        meta = self.meta_of(cid) or self._hit_meta.get(cid)
        if meta is None:
            return
        if meta.read_only:
            self.say("This conversation is read-only and cannot be renamed.", error=True)
            return
        self._renaming = cid
        self.rename_field.setText(meta.title)
        self.rename_field.show()
        self.rename_field.selectAll()
        self.rename_field.setFocus()

    def _rename_entered(self) -> None:
        self.rename(self._renaming, self.rename_field.text())

    def rename(self, cid: str, title: str) -> None:
        """Give ``cid`` the title ``title`` (an empty one is refused with the service's sentence)."""
        if not cid:
            return
        app = self.app

        def renamed(meta: ConversationMeta) -> None:
            self.rename_field.hide()
            self.say("")
            self.refresh()
            self.done.emit("renamed")

        self._call(lambda: app.conversations.rename(cid, title), renamed, "rename")

    # --- delete and undo ---------------------------------------------------------------------
    def delete(self, cid: str) -> None:
        """Delete ``cid`` now; *Undo* brings it back until the service's undo window ends."""
        if not cid:
            return
        app = self.app

        def gone(deleted: Any) -> None:
            self.last_deleted = (cid, float(deleted.until))
            left_ms = max(0, int((deleted.until - time.time()) * 1000))
            self.undo_text.setText("Conversation deleted.")
            self.undo_bar.show()
            self._undo_timer.start(left_ms)
            self.say("")
            if cid == self.current:
                self.current = ""
                self.deleted.emit(cid)
            self.refresh()
            self.done.emit("deleted")

        self._call(lambda: app.conversations.delete(cid), gone, "delete")

    def undo(self) -> None:
        """Bring the last deleted conversation back (NOT_FOUND once its window has passed)."""
        if self.last_deleted is None:
            return
        cid, _until = self.last_deleted
        app = self.app

        def back(_meta: ConversationMeta) -> None:
            self._undo_expired()
            self.say("The conversation is back.")
            self.refresh()
            self.done.emit("undone")

        def too_late(exc: BaseException) -> None:
            self._undo_expired()
            self._failed(exc, "undo")

        generation = self._generation
        self.bridge.call(lambda: app.conversations.undo_delete(cid),
                         lambda m: back(m) if shiboken6.isValid(self) and generation == self._generation else None,
                         lambda e: too_late(e) if shiboken6.isValid(self) else None)

    def _undo_window_over(self) -> None:
        """No Undo any more: the deleted conversation's trashed copy is removed now, not later."""
        if self.last_deleted is not None:
            cid, app = self.last_deleted[0], self.app
            self._call(lambda: app.conversations.forget_deleted(cid), lambda _n: self.done.emit("forgotten"),
                       "forget")
        self._undo_expired()

    def _undo_expired(self) -> None:
        self._undo_timer.stop()
        self.last_deleted = None
        self.undo_bar.hide()

    # --- export ------------------------------------------------------------------------------
    def export(self, cid: str) -> None:
        """Ask where to save ``cid`` as Markdown, then write it there (off the Qt thread)."""
        meta = self.meta_of(cid) or self._hit_meta.get(cid)
        if meta is None:
            return
        suggested = str(Path.home() / file_name_for(meta.title))
        path = self.save_dialog(self, "Export conversation", suggested)
        if path:
            self.export_to(cid, path, overwrite=True)  # the dialog asked before choosing an existing file

    def export_to(self, cid: str, path: str, overwrite: bool = False) -> None:
        """Write ``cid`` as Markdown to ``path`` (the seam the dialog's answer goes through)."""
        app = self.app

        def written(target: Path) -> None:
            self.say(f"Saved to {target}.")
            self.done.emit("exported")

        self._call(lambda: app.conversations.export(cid, path, overwrite=overwrite), written, "export")

    # --- the context menu --------------------------------------------------------------------
    def _menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        self.list.setCurrentItem(item)
        cid = str(item.data(ID_ROLE))
        meta = self.meta_of(cid) or self._hit_meta.get(cid)
        menu = QMenu(self)  # safe: a parent widget, no text
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.addAction(menu_text("Open"), lambda: self._choose(item))
        rename = menu.addAction(menu_text("Rename…"), lambda: self.start_rename(cid))
        rename.setEnabled(meta is not None and not meta.read_only)
        menu.addAction(menu_text("Export…"), lambda: self.export(cid))
        menu.addAction(menu_text("Delete"), lambda: self.delete(cid))
        menu.popup(self.list.viewport().mapToGlobal(pos))


__all__ = ["EMPTY", "SEARCH_DEBOUNCE_MS", "ConversationSidebar", "file_name_for", "item_text", "when"]
