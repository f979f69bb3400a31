"""Shared by the window tests: a real bridge over the app's real runtime, and the check that a
window fed hostile text shows it as text (issue 18, hole 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def make_bridge(app_context: Any) -> Iterator[Any]:
    """Yield a Bridge on the app's runtime; close both afterwards (use inside a fixture)."""
    from hearthside.ui.bridge import Bridge

    b = Bridge(lambda: app_context.runtime)
    yield b
    b.close()
    if app_context.built("runtime"):
        app_context.runtime.stop()


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
