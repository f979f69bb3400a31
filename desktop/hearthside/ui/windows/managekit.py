"""Small pieces the management windows share: named controls, a message line, a question that
does not block the event loop, and *Restart now*.

Nothing here decides anything; the windows ask the app's services and show what they say.

Rows in the windows' lists are found by their first column's text, never by item data:
``QTreeWidgetItem.setData(col, role, str)`` drops a reference to ``None`` in this PySide6 build
(6.12 on Python 3.11), and a few thousand rows abort the interpreter ("deallocating None").
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import shiboken6
from PySide6.QtCore import QProcess, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

from ..safetext import PlainLabel, RichLabel, message_box
from ..safetext import tip as safe_tip

if TYPE_CHECKING:
    from ...app.context import AppContext
    from ..bridge import Bridge

log = logging.getLogger("hearthside.ui")

W = TypeVar("W", bound=QWidget)

SELECTABLE = Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard


class ManageWindow(QWidget):
    """Base of the management windows: the preamble they all share (the app and bridge, the
    title, the accessible name, a column layout with an optional introduction) and background
    calls whose results are dropped once the window is gone (a late answer must not reach a
    deleted widget)."""

    def __init__(self, app: AppContext, bridge: Bridge, title: str, name: str, intro: str = "") -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.setWindowTitle(f"Hearthside — {title}")
        named(self, name)
        #: The window's column: the subclass adds its parts below the introduction.
        self.body = QVBoxLayout(self)
        self.intro: PlainLabel | None = None
        if intro:
            self.intro = PlainLabel(intro)
            self.intro.setWordWrap(True)
            self.body.addWidget(self.intro)

    def _guard(self, cb: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
        if cb is None:
            return None

        def deliver(value: Any) -> None:
            if shiboken6.isValid(self):
                cb(value)

        return deliver

    def call_bg(self, work: Callable[[], Any], done: Callable[[Any], None] | None = None,
                failed: Callable[[BaseException], None] | None = None) -> Any:
        """Blocking ``work`` on a worker thread; ``done``/``failed`` on the Qt thread."""
        return self.bridge.call(work, self._guard(done), self._guard(failed))

    def call_async(self, make_coro: Callable[[], Any], done: Callable[[Any], None] | None = None,
                   failed: Callable[[BaseException], None] | None = None) -> Any:
        """A coroutine on the app's runtime loop; ``done``/``failed`` on the Qt thread."""
        return self.bridge.call_async(make_coro, self._guard(done), self._guard(failed))


def named(widget: W, name: str, tip: str = "") -> W:
    """Give a control its accessible name (and tooltip): screen readers and tests find it by it."""
    widget.setAccessibleName(name)
    widget.setObjectName(name.replace(" ", "_").replace("…", ""))
    if tip:
        widget.setToolTip(safe_tip(tip))  # a tip may name a pack, skill or server: literal text
    return widget


def button(text: str, on_click: Callable[[], object], tip: str = "", name: str = "") -> QPushButton:
    """A push button that calls ``on_click`` (whatever it returns is ignored)."""
    b = named(QPushButton(text), name or text.replace("…", "").replace("&", ""), tip)
    b.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)  # never stretched wide
    b.clicked.connect(lambda _=False: on_click())
    return b


class MessageLine(PlainLabel):
    """One line of feedback under a form: what just happened, or why it did not (selectable)."""

    def __init__(self, name: str = "message") -> None:
        super().__init__("")
        self.setWordWrap(True)
        self.setTextInteractionFlags(SELECTABLE)
        named(self, name)
        self.kind = ""
        self.hide()

    def say(self, text: str, kind: str = "info") -> None:
        """Show ``text``; ``kind`` is info, ok or error (errors in the palette's warning colour)."""
        self.kind = kind
        self.setText(text)
        self.setStyleSheet("color: #b00020;" if kind == "error" else "color: #1b5e20;" if kind == "ok" else "")
        self.setVisible(bool(text))

    def clear_message(self) -> None:
        self.say("", "")


def table(name: str, headers: list[str], widths: list[int]) -> QTreeWidget:
    """A flat list with columns (the windows' packs, servers and history lists)."""
    tree = named(QTreeWidget(), name)
    tree.setHeaderLabels(headers)
    tree.setRootIsDecorated(False)
    tree.setUniformRowHeights(True)
    for col, width in enumerate(widths):
        tree.setColumnWidth(col, width)
    return tree


def detail_label(text: str, name: str) -> RichLabel:
    """The selected item's details: wrapped, selectable (paths, errors), top-left aligned.
    Hearthside's own formatting (:func:`~hearthside.ui.safetext.rich`); plain text is escaped."""
    label = named(RichLabel(text), name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(SELECTABLE)
    label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    return label


def scrolled(widget: QWidget) -> QScrollArea:
    """``widget`` in a frameless scroll area, so long text is never cut off."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(widget)
    return area


def ask(parent: QWidget, title: str, text: str, yes: str, on_yes: Callable[[], None]) -> QMessageBox:
    """A question with *yes* and Cancel, opened window-modal without a nested event loop."""
    box = message_box(parent, title, text, QMessageBox.Icon.Question)  # a name in it stays text
    ok = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    ok.setAccessibleName(yes)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    cancel.setAccessibleName("Cancel")
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    def chosen(clicked: object) -> None:
        if clicked is ok:
            on_yes()

    box.buttonClicked.connect(chosen)
    box.open()
    return box


def restart_app(safe_mode: bool = False, quit: Callable[[], None] | None = None) -> bool:
    """Quit Hearthside (through ``quit``: the tray's clean shutdown) and start it again, in
    safe mode if asked.

    The new one must start after this one has gone, or the single-instance check would hand it
    back to us: a small detached shell waits for this process to exit, then starts it. If that
    waiter cannot be started, this one keeps running and False says so.
    """
    args = [sys.executable, "-m", "hearthside"] + (["--safe-mode"] if safe_mode else [])
    if os.name == "posix":
        script = f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 0.2; done; exec " + " ".join(
            shlex.quote(a) for a in args)
        program, argv = "/bin/sh", ["-c", script]
    else:  # no waiter: the new instance retries its single-instance check itself
        program, argv = args[0], args[1:]
    got = QProcess.startDetached(program, argv, os.getcwd())
    started = got[0] if isinstance(got, tuple) else bool(got)
    if not started:
        log.warning("could not start a new Hearthside for the restart")
        return False
    if quit is not None:
        quit()
    else:
        app = QApplication.instance()
        if app is not None:
            app.quit()
    return True


def row(*widgets: QWidget, stretch_at: int | None = None) -> QHBoxLayout:
    """A horizontal row of widgets; ``stretch_at`` puts the free space before that index."""
    lay = QHBoxLayout()
    for i, w in enumerate(widgets):
        if stretch_at == i:
            lay.addStretch(1)
        # text and fields take the room; buttons keep their natural size
        short = isinstance(w, QLabel) and len(w.text()) <= 3  # "to" between two fields
        lay.addWidget(w, 0 if isinstance(w, QAbstractButton) or short else 1)
    if stretch_at is not None and stretch_at >= len(widgets):
        lay.addStretch(1)
    return lay
