"""Issue 18, hole 1, widened: hostile text from *real* services reaches the windows as text.

``test_safe_text.py`` feeds the windows through their display methods; here every value comes
from where it really comes from, over loopback: an MCP server (the ``mcp`` SDK) whose name, tool
names and descriptions and ``initialize`` error are markup; a model server whose ``/v1/models``
ids and error bodies are markup; a real check-in whose reply (and whose failure) is markup; and
persona folders named with markup, ``&`` and a right-to-left override.

The markup is ``<img>`` of two local files: a small red PNG (drawn, it would show red pixels in
the window's screenshot) and a FIFO (read, it would block the GUI thread until the test's
timeout fails it). ``<b>`` shows whether markup was rendered at all: a label carrying the raw
characters must be plain text; one that is Hearthside's own rich text must carry them escaped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage

sys.path.insert(0, str(Path(__file__).parent))
from fakemodel import FakeModel
from mcp_helpers import HttpServerProcess
from personas import make_persona, use_model
from ui_helpers import make_bridge

pytestmark = pytest.mark.timeout(240)  # a FIFO read on the GUI thread would hang: fail instead
WAIT = 30_000


@pytest.fixture
def bad(tmp_path: Path) -> Iterator[str]:
    """Markup with an image of a red PNG and of a FIFO (nobody ever writes to it)."""
    img = QImage(40, 40, QImage.Format.Format_RGB32)
    img.fill(QColor(255, 0, 0))
    red = tmp_path / "red.png"
    assert img.save(str(red))
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    yield (f'<img src="file://{red}" width="40" height="40"><img src="file://{fifo}">'
           '<b>Your key expired</b> &amp; paste it below')


def red_pixels(widget: Any) -> int:
    """How many pure-red pixels the widget draws (a rendered image of red.png)."""
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
    from PySide6.QtWidgets import QAbstractItemView, QLabel, QTextEdit, QWidget

    seen: list[str] = []
    for lab in window.findChildren(QLabel):
        name = lab.accessibleName() or lab.objectName() or type(lab).__name__
        if marker in lab.text():
            assert lab.textFormat() == Qt.TextFormat.PlainText, (name, lab.text())
            seen.append(f"label {name}")
        elif "&lt;img" in lab.text():
            assert lab.textFormat() == Qt.TextFormat.RichText, (name, lab.text())
            assert "<img" not in lab.text()
            seen.append(f"rich label {name}")
    for w in [window, *window.findChildren(QWidget)]:
        assert marker not in w.toolTip(), (w.accessibleName(), w.toolTip())
        if "&lt;img" in w.toolTip():
            seen.append(f"tooltip {w.accessibleName()}")
    for view in window.findChildren(QAbstractItemView):
        model = view.model()
        for r in range(model.rowCount()):
            for c in range(model.columnCount()):
                idx = model.index(r, c)
                tip = model.data(idx, Qt.ItemDataRole.ToolTipRole) or ""
                assert marker not in tip, tip
                if marker in (model.data(idx, Qt.ItemDataRole.DisplayRole) or ""):
                    seen.append(f"cell {view.accessibleName()} {r},{c}")
                if "&lt;img" in tip:
                    seen.append(f"cell tooltip {view.accessibleName()} {r},{c}")
    for doc_view in window.findChildren(QTextEdit):
        if marker in doc_view.toPlainText():
            seen.append(f"document {doc_view.accessibleName()}")
        if doc_view.isReadOnly():
            assert isinstance(doc_view, SafeBrowser), type(doc_view)
    window.adjustSize()
    assert red_pixels(window) == 0
    return seen


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


# --- 1. the MCP window and a hostile MCP server --------------------------------------------------

def _mcp_window(qtbot, app_context, bridge):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.mcp import McpWindow

    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.resize(900, 700)
    w.show()
    qtbot.waitUntil(lambda: w.detail.text() != "Reading the servers…", timeout=WAIT)
    return w


def _select(w, name: str) -> None:  # type: ignore[no-untyped-def]
    for i in range(w.tree.topLevelItemCount()):
        if w.tree.topLevelItem(i).text(0) == name:
            w.tree.setCurrentItem(w.tree.topLevelItem(i))
            return
    raise AssertionError(f"{name} is not listed")


def _tested(qtbot, w, name: str) -> None:  # type: ignore[no-untyped-def]
    _select(w, name)
    with qtbot.waitSignal(w.loaded, timeout=WAIT * 2), \
            qtbot.waitSignal(w.finished_action, timeout=WAIT * 2, check_params_cb=lambda a: a == "test"):
        w.test_btn.click()  # the result, then the list re-read with it


def test_a_hostile_mcp_server_and_its_errors_are_shown_as_text(qtbot, app_context, bridge, bad, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A server named with markup and a tool named with it connects, and its tool list shows the
    name escaped; a server whose ``initialize`` answer is a JSON-RPC error of markup, and one
    answering HTTP 500 with an HTML body, are shown failed with the error as text: the message
    line, the status cell's tooltip and the details."""
    from hearthside.core.mcpconfig import ServerConfig

    text_file = tmp_path / "hostile.txt"
    text_file.write_text(bad, encoding="utf-8")
    servers = {"named": HttpServerProcess(hostile_file=text_file),
               "jsonrpc": HttpServerProcess(hostile_file=text_file, fail_initialize="jsonrpc"),
               "http500": HttpServerProcess(hostile_file=text_file, fail_initialize="http")}
    try:
        for name, srv in servers.items():
            srv.start()
            app_context.mcp.add(ServerConfig(name, "http", url=srv.url, timeout=20))
        w = _mcp_window(qtbot, app_context, bridge)

        _tested(qtbot, w, "named")
        assert w.statuses["named"].state == "connected", w.statuses["named"]
        assert "&lt;img" in w.detail.text() and "Renamed" in w.detail.text()  # the tool's own name
        places = shown_safely(w)
        assert "rich label Server details" in places, places

        _tested(qtbot, w, "jsonrpc")
        assert w.statuses["jsonrpc"].state == "failed", w.statuses["jsonrpc"]
        assert "<img" in w.statuses["jsonrpc"].reason  # the server's own words, shown as they are
        places = shown_safely(w)
        assert "label message" in places, (w.message.text(), places)
        assert "rich label Server details" in places, w.detail.text()
        assert "cell tooltip Servers 1,3" in places, places

        _tested(qtbot, w, "http500")  # the SDK keeps the body to itself: the status is named
        assert w.statuses["http500"].state == "failed", w.statuses["http500"]
        assert "HTTP 500" in w.message.text() and "HTTP 500" in w.detail.text()
        shown_safely(w)
    finally:
        app_context.runtime.run(app_context.mcp.close(), timeout=30)
        for srv in servers.values():
            srv.kill()
