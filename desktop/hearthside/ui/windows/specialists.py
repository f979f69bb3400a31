"""The chat window's *Specialists* button: which specialists the persona can hand work to.

A small tool button with a menu: one entry per specialist (name — description, with the tier in
the tooltip); choosing one puts "Ask the NAME specialist to " into the message box, so the
person finishes the sentence and the persona routes it through its ``Subagent`` tool. Files
that are left out are named in a disabled entry with the reason in its tooltip, so a typo in an
agent file is visible where it matters.

The listing is read on a worker (the bridge): agent files are user files, and the Qt thread
never reads a file. Every text shown comes from files Hearthside did not write, so it goes
through :mod:`hearthside.ui.safetext`.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPixmap, QTextCursor
from PySide6.QtWidgets import QMenu, QPlainTextEdit, QToolButton, QWidget

from ...app.context import AppContext
from ...core.agentdefs import AgentDefListing
from ..bridge import Bridge
from ..safetext import menu_text, tip

#: The longest description shown in a menu entry (the tooltip has the whole line).
MENU_DESCRIPTION = 70


#: The colour dot's size in pixels (a menu icon).
DOT = 16


def color_icon(color: str) -> QIcon | None:
    """A small dot in the specialist's ``color`` (a colour name such as ``purple`` or ``#3a7``),
    or None when the value is not a colour Qt knows. A UX hint only: it never affects what the
    specialist may do."""
    value = color.strip()
    if not value or not QColor.isValidColorName(value):
        return None
    fill = QColor(value)
    if fill.alpha() == 0:
        return None  # "transparent" would be a dot nobody sees
    pix = QPixmap(DOT, DOT)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(fill.darker(160))  # an edge, so a light colour still shows on a light menu
    painter.setBrush(fill)
    painter.drawEllipse(3, 3, DOT - 6, DOT - 6)
    painter.end()
    return QIcon(pix)


def set_color(action: QAction, color: str) -> None:
    """Give a menu entry its specialist's colour dot (nothing for no or an invalid colour)."""
    icon = color_icon(color)
    if icon is not None:
        action.setIcon(icon)


def hint_for(name: str) -> str:
    """What choosing a specialist puts into the message box."""
    return f"Ask the {name} specialist to "


def entry_text(name: str, description: str) -> str:
    short = description if len(description) <= MENU_DESCRIPTION else description[:MENU_DESCRIPTION - 1] + "…"
    return menu_text(f"{name} — {short}")


def insert_hint(box: QPlainTextEdit, name: str) -> None:
    """Start the message with the hint (kept when it is there already), the cursor after it."""
    text = box.toPlainText()
    hint = hint_for(name)
    if not text.startswith(hint):
        box.setPlainText(hint + text)
    cursor = box.textCursor()
    cursor.setPosition(len(hint))
    box.setTextCursor(cursor)
    box.moveCursor(QTextCursor.MoveOperation.EndOfLine)
    box.setFocus()


class SpecialistsButton(QToolButton):
    """``Specialists (N)``: a menu of the persona's specialists; ``chosen(name)`` on a pick."""

    chosen = Signal(str)
    loaded = Signal()  # for tests: a listing arrived and the menu was rebuilt

    def __init__(self, app: AppContext, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.bridge = bridge
        self.persona = ""
        self.listing = AgentDefListing(())
        self.setText("Specialists")
        self.setAccessibleName("Specialists this persona can hand work to")
        self.setToolTip("Specialists this persona can hand a task to")
        self.setAutoRaise(True)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu_ = QMenu("Specialists", self)
        self.setMenu(self.menu_)
        self._fill(self.listing)

    def load(self, persona: str) -> None:
        """Read the persona's listing on a worker and rebuild the menu when it arrives."""
        self.persona = persona
        agents = self.app.agents
        self.bridge.call(lambda: (persona, agents.listing(persona)), self._arrived, self._failed)

    def _arrived(self, got: tuple[str, AgentDefListing]) -> None:
        persona, listing = got
        if persona != self.persona:
            return  # the person switched persona meanwhile
        self._fill(listing)

    def _failed(self, exc: BaseException) -> None:
        self._fill(AgentDefListing((), (f"the specialists could not be read: {exc}",)))

    def _fill(self, listing: AgentDefListing) -> None:
        self.listing = listing
        m = self.menu_
        m.clear()
        n = len(listing.defs)
        self.setText(menu_text(f"Specialists ({n})") if n else "Specialists")
        for d in listing.defs:
            act = m.addAction(entry_text(d.name, d.description), self._choose(d.name))
            act.setToolTip(tip(f"{d.description}\n({d.origin.value} specialist)"))
            set_color(act, d.color)
        if not n:
            none = m.addAction("No specialists yet")
            none.setEnabled(False)
            none.setToolTip(tip("Put agent files (NAME.md with 'name' and 'description' in its front matter) "
                                "in the persona's agents folder or in your own agents folder. "
                                "See docs/specialists.md."))
        if listing.notes:
            m.addSeparator()
            left = m.addAction(menu_text(f"{len(listing.notes)} note(s) about the agent files"))
            left.setEnabled(False)
            left.setToolTip(tip("\n".join(listing.notes)))
        m.setToolTipsVisible(True)
        self.loaded.emit()

    def _choose(self, name: str) -> Callable[[], None]:
        return lambda: self.chosen.emit(name)
