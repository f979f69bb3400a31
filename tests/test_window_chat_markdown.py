"""Issue 23, item 4, in the real chat window: a reply from the loopback fake model, streamed in
pieces, is shown formatted; hostile Markdown loads nothing, shows its real link targets and
opens nothing but http(s) on a click; *Copy* copies exactly; the view does not jump.

"Loads nothing" is checked twice: the view's ``loadResource`` (which records every request in
``SafeBrowser.refused``) is never asked for anything, and the reply points at a FIFO nobody
writes to, so a read would block the GUI thread until the thread timeout ends the test run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel
from personas import make_persona, use_model
from PySide6.QtCore import QObject, QPoint, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication, QTextCursor
from ui_helpers import WAIT, anchors, make_bridge, open_chat, red_and_fifo, red_pixels, say

pytestmark = pytest.mark.timeout(240, method="thread")


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


class Opened(QObject):
    """A real URL handler registered with QDesktopServices: what the app asked it to open."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url.toString())


SCHEMES = ("https", "http", "file", "javascript", "data", "mailto", "vscode")


@pytest.fixture
def opened() -> Any:
    handler = Opened()
    for s in SCHEMES:
        QDesktopServices.setUrlHandler(s, handler, "open")
    yield handler
    for s in SCHEMES:
        QDesktopServices.unsetUrlHandler(s)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    red, fifo = red_and_fifo(tmp_path)
    return {"red": red, "fifo": fifo}


def click_text(qtbot, view, text: str, nth: int = -1) -> None:  # type: ignore[no-untyped-def]
    """A real mouse click in the middle of the ``nth`` occurrence of ``text`` in the view."""
    doc = view.document()
    found, cur = [], QTextCursor(doc)
    while True:
        cur = doc.find(text, cur)
        if cur.isNull():
            break
        found.append(cur.selectionStart())
    assert found, text
    at = QTextCursor(doc)
    at.setPosition(found[nth] + len(text) // 2)
    view.setTextCursor(at)
    view.ensureCursorVisible()
    rect = view.cursorRect(at)
    pos = QPoint(rect.center().x(), rect.center().y())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


HOSTILE = ("# Report\n\n<img src=\"file://{red}\" width=40 height=40><img src=file://{fifo}>\n\n"
           "![chart](file://{red}) ![pipe](file://{fifo}) ![px](data:image/png;base64,iVBORw0KGgo=) "
           "![remote](https://tracker.example/p.gif)\n\n"
           "Read [the docs](https://docs.example/start) or [your bank](https://evil.example/login), "
           "not [home](file:///home) or [x](javascript:alert(1)) or [y](vscode://file/etc/passwd).\n\n"
           "[moc.elgoog\u202e](https://evil.example/rtl)\n\n"
           "| a | b |\n|---|---|\n| <b>1</b> | ![i](file://{fifo}) |\n")


def test_hostile_markdown_in_a_reply_loads_nothing_and_shows_real_targets(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch, files) -> None:
    """Fails before item 4 too: the reply was raw text, so the links and the heading were not
    formatted (no anchors at all)."""
    make_persona(app_context)
    reply = HOSTILE.format(**files)
    with FakeModel([{"text": reply}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge)
        w.resize(900, 700)
        out = say(qtbot, w, "Report please")
    assert out.error == "" and out.result.text == reply
    view = w.transcript
    text = view.toPlainText()
    assert view.refused == []  # no resource was ever asked for
    assert red_pixels(view) == 0
    assert f'<img src="file://{files["red"]}" width=40 height=40><img src=file://{files["fifo"]}>' in text
    assert f"![chart](file://{files['red']})" in text and f"![pipe](file://{files['fifo']})" in text
    assert "px (image: data:image/png;base64,iVBORw0KGgo=)" in text
    assert "remote (image: https://tracker.example/p.gif)" in text
    assert "the docs (https://docs.example/start)" in text and "your bank (https://evil.example/login)" in text
    assert "[home](file:///home)" in text and "[x](javascript:alert(1))" in text
    assert "y (vscode://file/etc/passwd)" in text
    assert "moc.elgoog\\u202e (https://evil.example/rtl)" in text
    assert "<b>1</b>" in text
    links = [a for a in anchors(view) if not a[1].startswith("hearthside-copy:")]
    assert links == [("the docs", "https://docs.example/start"), ("your bank", "https://evil.example/login"),
                     ("moc.elgoog\\u202e", "https://evil.example/rtl")]


def test_a_click_opens_an_http_link_in_the_browser_and_nothing_else(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch, opened) -> None:
    make_persona(app_context)
    reply = "See [the docs](https://docs.example/start) and [home](file:///home) and [v](vscode://x)."
    with FakeModel([{"text": reply}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge)
        say(qtbot, w, "Links?")
    assert opened.urls == []  # shown, not opened
    click_text(qtbot, w.transcript, "the docs")
    qtbot.waitUntil(lambda: opened.urls == ["https://docs.example/start"], timeout=WAIT)
    click_text(qtbot, w.transcript, "[home](file:///home)")  # text, not a link
    click_text(qtbot, w.transcript, "vscode://x")
    refused: list[str] = []
    w.writer.refused.connect(refused.append)
    # an anchor the renderer never makes, clicked anyway: the writer checks the scheme again
    for bad in ("javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "vscode://file/x", "HTTPS:"):
        w.transcript.anchorClicked.emit(QUrl(bad))
    qtbot.wait(50)
    assert opened.urls == ["https://docs.example/start"]
    assert len(refused) == 5


def test_copy_puts_the_exact_code_and_the_original_markdown_on_the_clipboard(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    code = "def f(x):\n\treturn x < 1 and '&amp;'  # <b>\n"
    reply = f"Two blocks.\n\n```python\n{code}```\n\nand\n\n    indented <i>code</i>\n\n**done**"
    with FakeModel([{"text": "First *reply*."}, {"text": reply}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge)
        say(qtbot, w, "one")
        say(qtbot, w, "two")
    clip = QGuiApplication.clipboard()
    click_text(qtbot, w.transcript, "Copy code", 0)
    qtbot.waitUntil(lambda: clip.text() == code.rstrip("\n"), timeout=WAIT)
    assert w.status.text() == "Copied."
    click_text(qtbot, w.transcript, "Copy code", 1)
    qtbot.waitUntil(lambda: clip.text() == "indented <i>code</i>", timeout=WAIT)
    click_text(qtbot, w.transcript, "Copy reply", 1)
    qtbot.waitUntil(lambda: clip.text() == reply, timeout=WAIT)
    click_text(qtbot, w.transcript, "Copy reply", 0)
    qtbot.waitUntil(lambda: clip.text() == "First *reply*.", timeout=WAIT)
    assert "juniper: First reply." in w.transcript.toPlainText()


def test_a_stored_reply_is_shown_formatted_with_its_copy_link(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    """The seam for conversations read back from disk (the sidebar): show_reply."""
    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge)
    w.show_reply("Yesterday: **tea** at `4pm`.")
    assert "juniper: Yesterday: tea at 4pm." in w.transcript.toPlainText()
    click_text(qtbot, w.transcript, "Copy reply")
    qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() == "Yesterday: **tea** at `4pm`.", timeout=WAIT)
    w.writer.clear()
    assert w.transcript.toPlainText() == "" and w.writer.sources == {}


# --- streaming ------------------------------------------------------------------------------

def _long_history(w: Any) -> None:
    from hearthside.ui.safetext import rich

    for i in range(60):
        w._append(rich("<b>You:</b> message {}", i))
    bar = w.transcript.verticalScrollBar()
    assert bar.maximum() > 200


def _stream(qtbot, w, pieces: list[str]) -> None:  # type: ignore[no-untyped-def]
    for p in pieces:
        w._piece.emit(p)
        with qtbot.waitSignal(w.writer.rendered, timeout=WAIT):
            pass


PIECES = ["# Heading\n\n", "Some **bold", "** text and a list:\n\n", "- one\n", "- two\n", "- three\n\n",
          "```\ncode line\n", "more code\n```\n\n", "| a | b |\n|---|---|\n| 1 | 2 |\n",
          *(f"\nline {i}\n" for i in range(30))]


def test_streaming_at_the_bottom_stays_at_the_bottom(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge)
    w.resize(700, 500)
    _long_history(w)
    bar = w.transcript.verticalScrollBar()
    bar.setValue(bar.maximum())
    before = bar.maximum()
    _stream(qtbot, w, PIECES)
    w.writer.end_reply()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=WAIT)
    assert bar.maximum() > before + 200
    assert "Heading" in w.transcript.toPlainText() and "bold text" in w.transcript.toPlainText()
    assert "**" not in w.transcript.toPlainText()  # rendered, not raw


def test_streaming_while_scrolled_up_keeps_the_place(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge)
    w.resize(700, 500)
    _long_history(w)
    bar = w.transcript.verticalScrollBar()
    bar.setValue(120)
    assert not w.writer.at_bottom()
    before = bar.maximum()
    _stream(qtbot, w, PIECES)
    w.writer.end_reply()
    w._append(_note())  # a note after the reply does not move the view either
    qtbot.wait(50)
    assert bar.maximum() > before + 200 and bar.value() == 120


def _note() -> Any:
    from hearthside.ui.safetext import rich

    return rich("<i>[a note after the reply]</i>")


def test_pieces_are_rendered_in_batches_and_always_at_the_end(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    """Many pieces at once make one rendering per interval, and the last one is never left
    waiting for the timer: the end of the turn renders it."""
    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge)
    renders: list[int] = []
    w.writer.rendered.connect(lambda: renders.append(1))
    for i in range(200):
        w._piece.emit(f"word{i} ")
    assert renders == []  # not yet: the timer batches them
    with qtbot.waitSignal(w.writer.rendered, timeout=WAIT):
        pass
    w._piece.emit("**the last piece**")
    w._end_turn()
    assert "word199 the last piece" in w.transcript.toPlainText()
    assert len(renders) <= 3


@pytest.mark.parametrize("name", ["2 MB table", "10,000 nested lists", "10,000 nested quotes", "huge line"])
def test_hostile_size_in_the_window_is_plain_text_with_a_note_and_copy_keeps_it_all(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, name: str) -> None:
    """Streamed in big pieces through the window's own piece signal: the reply ends as plain
    text under a one-line note, nothing is loaded, and Copy reply copies every character."""
    reply = {"2 MB table": "| a | <img src=file:///etc/passwd> |\n|---|---|\n" + "| 1 | 2 |\n" * 220_000,
             "10,000 nested lists": "- " * 10_000 + "![x](file:///etc/passwd) end",
             "10,000 nested quotes": "> " * 10_000 + "[x](javascript:alert(1)) end",
             "huge line": "w" * 1_500_000 + " end"}[name]
    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge)
    for i in range(0, len(reply), 64 * 1024):
        w._piece.emit(reply[i:i + 64 * 1024])
    w._end_turn()
    text = w.transcript.toPlainText()
    assert "it is shown as plain text." in text
    assert w.transcript.refused == []
    assert [a for a in anchors(w.transcript) if not a[1].startswith("hearthside-copy:")] == []
    click_text(qtbot, w.transcript, "Copy reply")
    qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() == reply, timeout=WAIT)
