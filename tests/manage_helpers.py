"""Helpers for the management-window tests: a real bridge on the app's runtime, and a walk over
every widget's visible text, tooltip and accessible name (where a secret must never appear)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QTreeWidget,
    QWidget,
)


def make_bridge(app):  # type: ignore[no-untyped-def]
    from hearthside.ui.bridge import Bridge

    return Bridge(lambda: app.runtime)


def settings_window_with_kip(qtbot, app_context):  # type: ignore[no-untyped-def]
    """The Settings window over a real app with one persona, Kip, listed (a fixture body: the
    settings tests import it under the name ``window``)."""
    from hearthside.ui.windows.settings import SettingsWindow

    app_context.personas.create("Kip")
    bridge = make_bridge(app_context)
    w = SettingsWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.persona.count() == 1, timeout=10000)
    yield w
    bridge.close()


def widget_texts(root: QWidget) -> list[str]:
    """Every string a person or a screen reader could get from ``root`` and its children,
    including the text in password fields (which must be empty after a save)."""
    out: list[str] = []
    for w in [root, *root.findChildren(QWidget)]:
        out += [w.toolTip(), w.accessibleName(), w.accessibleDescription(), w.windowTitle(),
                w.statusTip(), w.whatsThis()]
        if isinstance(w, (QLabel, QAbstractButton)):
            out.append(w.text())
        if isinstance(w, QLineEdit):
            out += [w.text(), w.placeholderText(), w.displayText()]
        if isinstance(w, (QPlainTextEdit, QTextEdit)):
            out.append(w.toPlainText())
        if isinstance(w, QComboBox):
            out += [w.itemText(i) for i in range(w.count())]
        if isinstance(w, QTreeWidget):
            stack = [w.topLevelItem(i) for i in range(w.topLevelItemCount())]
            while stack:
                it = stack.pop()
                for c in range(w.columnCount()):
                    out += [it.text(c), it.toolTip(c)]
                stack += [it.child(i) for i in range(it.childCount())]
    return [s for s in out if s]


@contextmanager
def silent_server() -> Iterator[str]:
    """An http URL on 127.0.0.1 that accepts connections and never answers (pip waits on it)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                conns.append(c)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/simple/"
    finally:
        stop.set()
        t.join(2)
        for c in conns:
            c.close()
        srv.close()
