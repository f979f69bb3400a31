"""What a conversation view shows and how it changes: messages appended, a reply re-rendered
from its Markdown as it streams, *Copy* and links handled, the scroll position kept.

The chat window owns the view (a :class:`~hearthside.ui.safetext.SafeBrowser`, which refuses
every resource) and this writer; everything that goes into the view goes through
:meth:`TranscriptWriter.append` or a reply, so the rules live in one place:

* a reply is re-rendered (``ui/markdown.py``) at most every :data:`MIN_INTERVAL_MS` while it
  streams (longer when rendering it is slow), and always once at its end; the document is only
  ever changed at its end;
* the view does not jump: at the bottom it stays at the bottom as the text grows; scrolled up,
  it stays where the person put it;
* ``hearthside-copy:`` anchors copy a code block's exact text or a whole reply's original
  Markdown to the clipboard; any other anchor is opened in the browser only if it is
  ``https://`` or ``http://`` (checked again here, whatever the document says), and only
  because the person clicked it.

Kept apart from the window so that the window's layout (a sidebar of conversations) can change
without touching how a message is displayed; :meth:`TranscriptWriter.add_reply` shows a whole
stored reply and :meth:`TranscriptWriter.clear` starts a new conversation.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QTextBlockFormat, QTextCharFormat, QTextCursor

from ..markdown import COPY_SCHEME, Rendered, openable, render
from ..safetext import Markup, SafeBrowser, rich

#: The shortest pause between two renderings of a streaming reply.
MIN_INTERVAL_MS = 80
#: The pause is at least this many times the last rendering took, so a long reply being
#: re-rendered cannot take the whole GUI thread.
SLOWDOWN = 3
#: Within this many pixels of the bottom counts as "at the bottom".
BOTTOM_SLACK = 4


class TranscriptWriter(QObject):
    """Writes into one conversation view; see the module docstring."""

    copied = Signal(str)  # the text just put on the clipboard
    refused = Signal(str)  # a link that was clicked and not opened (its target)
    rendered = Signal()  # the streaming reply was re-rendered (tests wait on it)

    def __init__(self, view: SafeBrowser, opener: Callable[[QUrl], bool] | None = None) -> None:
        super().__init__(view)
        self.view = view
        self.opener = opener or QDesktopServices.openUrl
        self.sources: dict[int, str] = {}  # message number -> its Markdown, as the model wrote it
        self.codes: dict[int, tuple[str, ...]] = {}  # message number -> its code blocks' text
        self.leads: dict[int, Markup] = {}  # message number -> the "juniper:" it opens with
        self._next = 0
        self._current: int | None = None  # the reply streaming now
        self._start = 0  # where the streaming reply starts in the document
        self._interval = MIN_INTERVAL_MS
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._render_current)
        self._stick = True  # follow the end of the conversation (the person is at the bottom)
        bar = view.verticalScrollBar()
        bar.valueChanged.connect(self._scrolled)
        bar.rangeChanged.connect(self._grew)
        view.anchorClicked.connect(self.follow)

    # --- scrolling --------------------------------------------------------------------
    def _scrolled(self, value: int) -> None:
        self._stick = value >= self.view.verticalScrollBar().maximum() - BOTTOM_SLACK

    def _grew(self, _low: int, high: int) -> None:
        if self._stick:
            self.view.verticalScrollBar().setValue(high)

    def at_bottom(self) -> bool:
        """True when the view follows the end of the conversation."""
        return self._stick

    # --- writing ----------------------------------------------------------------------
    def _end_cursor(self) -> QTextCursor:
        """A cursor at the start of a new, plain paragraph at the end (not inside the list,
        quote or code block the document may end with)."""
        doc = self.view.document()
        cur = QTextCursor(doc)
        cur.movePosition(QTextCursor.MoveOperation.End)
        if not doc.isEmpty():
            fmt = QTextBlockFormat()
            fmt.setTopMargin(6)  # a little air between messages
            cur.insertBlock(fmt, QTextCharFormat())
        return cur

    def append(self, markup: Markup) -> None:
        """A message Hearthside formatted (a tool line, a note, the user's words): the reply
        streaming before it is finished first."""
        self.end_reply()
        cur = self._end_cursor()
        cur.insertHtml(markup)

    def piece(self, lead: Markup, text: str) -> None:
        """The next piece of the reply streaming now (a new one opens with ``lead``, such as
        ``<b>juniper:</b>``); it is shown at the next rendering."""
        if self._current is None:
            self._current = self._new(lead, "")
            self._start = self._end_cursor().position()
        self.sources[self._current] += text
        if not self._timer.isActive():
            self._timer.start(self._interval)

    def end_reply(self) -> None:
        """The streaming reply is complete: rendered a last time, with its *Copy* link."""
        if self._current is None:
            return
        self._timer.stop()
        self._render_current(final=True)
        self._current = None

    def add_reply(self, lead: Markup, text: str) -> None:
        """A whole reply at once (one read back from a stored conversation)."""
        self.end_reply()
        n = self._new(lead, text)
        cur = self._end_cursor()
        cur.insertHtml(self._markup(n, self._rendered(n), final=True))

    def clear(self) -> None:
        """An empty view, for another conversation."""
        self._timer.stop()
        self._current = None
        self.sources.clear()
        self.codes.clear()
        self.leads.clear()
        self.view.clear()
        self._stick = True

    def _new(self, lead: Markup, text: str) -> int:
        n = self._next
        self._next += 1
        self.sources[n] = text
        self.codes[n] = ()
        self.leads[n] = lead
        return n

    def _rendered(self, n: int) -> Rendered:
        r = render(self.sources[n], copy_prefix=f"c{n}.", lead=self.leads[n])
        self.codes[n] = r.codes
        return r

    def _markup(self, n: int, r: Rendered, final: bool) -> Markup:
        if not final:
            return r.markup
        return r.markup + rich("<p style='margin-top:2px'><a href='{}'>Copy reply</a></p>", f"{COPY_SCHEME}:m{n}")

    def _render_current(self, final: bool = False) -> None:
        n = self._current
        if n is None:
            return
        began = time.monotonic()
        markup = self._markup(n, self._rendered(n), final)
        bar = self.view.verticalScrollBar()
        kept = bar.value()
        cur = QTextCursor(self.view.document())
        cur.beginEditBlock()
        cur.setPosition(self._start)
        cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cur.removeSelectedText()
        cur.insertHtml(markup)
        cur.endEditBlock()
        if self._stick:
            bar.setValue(bar.maximum())
        else:
            bar.setValue(kept)  # a shorter rendering may have moved it
            self._stick = False
        took_ms = (time.monotonic() - began) * 1000
        self._interval = max(MIN_INTERVAL_MS, int(SLOWDOWN * took_ms))
        self.rendered.emit()

    # --- anchors ----------------------------------------------------------------------
    def follow(self, url: QUrl) -> None:
        """A click on an anchor: a *Copy* link copies; an http(s) link opens in the browser;
        anything else (which the renderer never makes an anchor) is refused."""
        if url.scheme() == COPY_SCHEME:
            self._copy(url.path())
            return
        target = url.toString()
        if openable(target) and url.scheme().lower() in ("https", "http") and url.isValid():
            self.opener(url)
        else:
            self.refused.emit(target)

    def _copy(self, key: str) -> None:
        text: str | None = None
        try:
            if key.startswith("m"):
                text = self.sources.get(int(key[1:]))
            elif key.startswith("c"):
                msg, _, index = key[1:].partition(".")
                codes = self.codes.get(int(msg), ())
                text = codes[int(index)] if int(index) < len(codes) else None
        except ValueError:
            text = None
        if text is None:
            return
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(text)


__all__ = ["MIN_INTERVAL_MS", "TranscriptWriter"]
