"""The *Conversations* section of the Settings window: how long kept conversations stay, and
*Delete all conversations* of one persona.

Both act at once through ``ConversationService`` on a worker thread, apart from the window's
*Save*: a shorter time removes the older conversations now, so when it would remove some the
person is asked first, with the count. Deleting conversations never touches what a persona has
learned (its memory), and the confirmation says so. The personas offered are those with kept
conversations, a removed persona's included (its conversations stay listed under its old name).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox

from ...app.context import AppContext
from ...core.errors import sentence_of
from ..safetext import PlainLabel, one_line
from .managekit import MessageLine, ask, button, named, row

CallBg = Callable[[Callable[[], Any], Callable[[Any], None] | None, Callable[[BaseException], None] | None], Any]

#: The choices, in the order shown: (label, days; 0 keeps forever).
KEEP_CHOICES = (("Forever", 0), ("30 days", 30), ("90 days", 90), ("1 year", 365))


@dataclass(frozen=True)
class ConversationSettings:
    """What the section shows: the retention in force and each persona with conversations."""

    keep_days: int
    personas: tuple[tuple[str, int, bool], ...]  # (name, how many, removed)


def keep_label(days: int) -> str:
    return next((label for label, d in KEEP_CHOICES if d == days), f"{days} days")


class ConversationsBox(QGroupBox):
    """Retention and *Delete all conversations of a persona*; see the module docstring."""

    #: after each answer: "loaded", "kept", "deleted", "failed" (tests and screenshots wait on it)
    done = Signal(str)

    def __init__(self, app: AppContext, call_bg: CallBg) -> None:
        super().__init__("Conversations")
        named(self, "Conversations")
        self.app = app
        self.call_bg = call_bg
        self.state: ConversationSettings | None = None
        self.confirm = ask  # the question before something is removed (a test answers it)
        f = QFormLayout(self)
        hint = PlainLabel("Chats are kept on this computer, in Hearthside's data folder, one file per "
                          "conversation. What a persona has learned (its memory) is kept apart.")
        hint.setWordWrap(True)
        f.addRow(hint)
        self.keep = named(QComboBox(), "Keep conversations", "Older conversations are removed for good.")
        for label, _days in KEEP_CHOICES:
            self.keep.addItem(label)
        self.keep_btn = button("Apply", self.apply_keep, "Keep conversations this long from now on.",
                               name="Apply keep conversations")
        f.addRow(PlainLabel("Keep conversations:"), row(self.keep, self.keep_btn))
        self.persona = named(QComboBox(), "Persona with conversations", "Whose conversations to delete.")
        self.persona.currentIndexChanged.connect(lambda _i: self._show_persona())
        self.delete_btn = button("Delete all conversations…", self.delete_all,
                                 "Delete every kept conversation of this persona; its memory stays.",
                                 name="Delete all conversations")
        f.addRow(PlainLabel("Persona:"), row(self.persona, self.delete_btn))
        self.none = PlainLabel("No persona has kept conversations yet.")
        self.none.hide()
        f.addRow(self.none)
        self.message = MessageLine("conversations message")
        f.addRow(self.message)

    # --- loading ---------------------------------------------------------------------------
    def reload(self, then: Callable[[], None] | None = None) -> None:
        app = self.app

        def work() -> ConversationSettings:
            svc = app.conversations
            return ConversationSettings(svc.keep_days(), tuple((p.name, p.conversations, p.removed)
                                                               for p in svc.personas() if p.conversations))

        def loaded(state: ConversationSettings) -> None:
            self._show(state)
            if then is not None:
                then()
            self.done.emit("loaded")

        self.call_bg(work, loaded, self._failed)

    def _show(self, state: ConversationSettings) -> None:
        self.state = state
        self.keep.setCurrentIndex(next((i for i, (_l, d) in enumerate(KEEP_CHOICES) if d == state.keep_days), 0))
        current = self.selected()
        self.persona.blockSignals(True)
        self.persona.clear()
        for name, count, removed in state.personas:
            gone = ", removed" if removed else ""
            self.persona.addItem(one_line(f"{name} ({count} conversation{'s' if count != 1 else ''}{gone})"))
        names = [p[0] for p in state.personas]
        if current in names:
            self.persona.setCurrentIndex(names.index(current))
        self.persona.blockSignals(False)
        self._show_persona()

    def selected(self) -> str:
        i = self.persona.currentIndex()
        if self.state is None or not 0 <= i < len(self.state.personas):
            return ""
        return self.state.personas[i][0]

    def _show_persona(self) -> None:
        name = self.selected()
        has = bool(name)
        self.persona.setEnabled(has)
        self.delete_btn.setEnabled(has)
        self.none.setVisible(not has)
        self.delete_btn.setText(f"Delete all conversations of {one_line(name)}…".replace("&", "&&") if has
                                else "Delete all conversations…")

    def _failed(self, exc: BaseException) -> None:
        self.message.say(sentence_of(exc) or type(exc).__name__, "error")
        self.done.emit("failed")

    # --- retention -------------------------------------------------------------------------
    def apply_keep(self) -> None:
        """Keep conversations as chosen; asks first when that removes some now."""
        days = KEEP_CHOICES[max(0, self.keep.currentIndex())][1]
        app = self.app

        def older() -> int:
            if not days:
                return 0
            cutoff = time.time() - days * 86400
            svc = app.conversations
            return sum(1 for p in svc.personas() for m in svc.list(p.name) if m.updated < cutoff)

        def counted(n: int) -> None:
            if not n:
                self._set_keep(days)
                return
            self.confirm(self, "Keep conversations",
                         f"Keeping conversations for {keep_label(days)} removes {n} conversation"
                         f"{'s' if n != 1 else ''} older than that now, for good. What your personas have "
                         "learned (their memory) is not touched.", "Remove them", lambda: self._set_keep(days))

        self.call_bg(older, counted, self._failed)

    def _set_keep(self, days: int) -> None:
        app = self.app

        def kept(_none: None) -> None:
            kept_for = "forever" if not days else f"for {keep_label(days)}"
            self.reload(lambda: self.message.say(f"Conversations are kept {kept_for}.", "ok"))
            self.done.emit("kept")

        self.call_bg(lambda: app.conversations.set_keep_days(days), kept, self._failed)

    # --- delete all ------------------------------------------------------------------------
    def delete_all(self) -> None:
        """Delete every conversation of the selected persona, after a confirmation with the count."""
        name = self.selected()
        if not name or self.state is None:
            return
        count = next(c for n, c, _r in self.state.personas if n == name)
        self.confirm(self, "Delete all conversations",
                     f"Delete all {count} conversation{'s' if count != 1 else ''} of {name}? This cannot be undone. "
                     f"What {name} has learned (its memory) is not touched.",
                     "Delete all", lambda: self._delete_all(name))

    def _delete_all(self, name: str) -> None:
        app = self.app

        def gone(deleted: list[Any]) -> None:
            n = len(deleted)
            self.reload(lambda: self.message.say(
                f"Deleted {n} conversation{'s' if n != 1 else ''} of {name}; its memory is kept.", "ok"))
            self.done.emit("deleted")

        def work() -> list[Any]:
            svc = app.conversations
            deleted = svc.delete_all(name)
            for d in deleted:  # no Undo is offered here: nothing is left in the trash either
                svc.forget_deleted(d.id)
            return deleted

        self.call_bg(work, gone, self._failed)


__all__ = ["KEEP_CHOICES", "ConversationSettings", "ConversationsBox", "keep_label"]
