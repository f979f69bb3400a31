"""Shared by the window tests: a real bridge over the app's real runtime, the chat window opened
and spoken to, a document's fragments and links, hostile image files, and the check that a
window fed hostile text shows it as text (issue 18, hole 1)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: How long a window test waits for a signal, in milliseconds (a condition, not a speed limit).
WAIT = 15_000


def make_bridge(app_context: Any) -> Iterator[Any]:
    """Yield a Bridge on the app's runtime; close both afterwards (use inside a fixture)."""
    from hearthside.ui.bridge import Bridge

    b = Bridge(lambda: app_context.runtime)
    yield b
    b.close()
    if app_context.built("runtime"):
        app_context.runtime.stop()


def open_chat(qtbot, app_context, bridge, persona: str = "juniper", alert: str | None = None):  # type: ignore[no-untyped-def]
    """The real chat window for ``persona``, shown, once its session is open."""
    from hearthside.ui.windows.chat import ChatWindow

    w = ChatWindow(app_context, bridge, persona, alert)
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.ready, timeout=WAIT):
        pass
    return w


def say(qtbot, w, text: str):  # type: ignore[no-untyped-def]
    """Type ``text`` into the chat window, click Send, and return what the finished turn gave."""
    w.input.setPlainText(text)
    with qtbot.waitSignal(w.turn_finished, timeout=WAIT) as sig:
        w.send_button.click()
    return sig.args[0]


def fragments(view: Any) -> list[Any]:
    """(text, char format, block) of every fragment of the view's document, in order."""
    out = []
    b = view.document().begin()
    while b.isValid():
        it = b.begin()
        while not it.atEnd():
            f = it.fragment()
            out.append((f.text(), f.charFormat(), b))
            it += 1
        b = b.next()
    return out


def anchors(view: Any) -> list[tuple[str, str]]:
    """(text, target) of every link in the view's document, in order."""
    return [(t, cf.anchorHref()) for t, cf, _b in fragments(view) if cf.isAnchor()]


def red_and_fifo(folder: Path) -> tuple[Path, Path]:
    """A 40x40 pure-red PNG (drawn if ever loaded: see :func:`red_pixels`) and a FIFO nobody
    writes to (a read of it blocks), both in ``folder``."""
    from PySide6.QtGui import QColor, QImage

    img = QImage(40, 40, QImage.Format.Format_RGB32)
    img.fill(QColor(255, 0, 0))
    red = folder / "red.png"
    assert img.save(str(red))
    fifo = folder / "fifo.png"
    os.mkfifo(fifo)
    return red, fifo


def red_pixels(widget: Any) -> int:
    """How many pure-red pixels the widget draws (a rendered image of red.png), at its size hint."""
    widget.adjustSize()
    img = widget.grab().toImage()
    n = 0
    for y in range(0, img.height(), 2):
        for x in range(0, img.width(), 2):
            c = img.pixelColor(x, y)
            if c.red() > 240 and c.green() < 20 and c.blue() < 20:
                n += 1
    return n


def shown_safely(window: Any, marker: str = "<img") -> list[str]:
    """Assert that every place in ``window`` showing hostile text shows it as text, and return
    those places (a walk that found none proves nothing): a label with the raw markup is plain
    text; a rich label carries it escaped; every tooltip is escaped; table and list cells are
    item text (never rendered); nothing red is drawn."""
    from hearthside.ui.safetext import SafeBrowser
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtWidgets import QAbstractItemView, QLabel, QTextEdit, QWidget

    escaped = marker.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    seen: list[str] = []
    for lab in window.findChildren(QLabel):
        name = lab.accessibleName() or lab.objectName() or type(lab).__name__
        if marker in lab.text():
            assert lab.textFormat() == Qt.TextFormat.PlainText, (name, lab.text())
            seen.append(f"label {name}")
        elif escaped in lab.text():
            assert lab.textFormat() == Qt.TextFormat.RichText, (name, lab.text())
            seen.append(f"rich label {name}")
    for w in [window, *window.findChildren(QWidget)]:
        assert marker not in w.toolTip(), (w.accessibleName(), w.toolTip())
        if escaped in w.toolTip():
            seen.append(f"tooltip {w.accessibleName()}")
    for view in window.findChildren(QAbstractItemView):
        model = view.model()
        try:
            columns = model.columnCount(QModelIndex())
        except TypeError:  # a list's model keeps it private: one column
            columns = 1
        for r in range(model.rowCount(QModelIndex())):
            for c in range(columns):
                idx = model.index(r, c)
                tip = model.data(idx, Qt.ItemDataRole.ToolTipRole) or ""
                assert marker not in tip, tip
                if marker in (model.data(idx, Qt.ItemDataRole.DisplayRole) or ""):
                    seen.append(f"cell {view.accessibleName()} {r},{c}")
                if escaped in tip:
                    seen.append(f"cell tooltip {view.accessibleName()} {r},{c}")
    for doc_view in window.findChildren(QTextEdit):
        if marker in doc_view.toPlainText():
            seen.append(f"document {doc_view.accessibleName()}")
        if doc_view.isReadOnly():
            assert isinstance(doc_view, SafeBrowser), type(doc_view)
    assert red_pixels(window) == 0
    return seen
