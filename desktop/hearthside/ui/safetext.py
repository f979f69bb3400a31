"""Text Hearthside did not write is shown as text: never as markup, never loading a resource.

Qt guesses: a ``QLabel`` (``AutoText``), a tooltip and ``QTextEdit.append`` render anything that
*looks* like HTML, and an ``<img src="file:///dev/zero">`` in a model reply, a server's error or a
model id then makes Qt read that file on the GUI thread (``/dev/zero`` crashes the app, a FIFO
freezes it, a styled local image draws a fake banner). So every window builds its widgets here:

* :class:`PlainLabel` — a label that is always plain text, whatever is put in it;
* :class:`RichLabel` and :class:`SafeBrowser` — Hearthside's own formatting: they take
  :class:`Markup` (made only by :func:`rich` from a template Hearthside wrote, with every value
  escaped); a plain ``str`` given to them is escaped, so it shows as the characters it is;
  :class:`SafeBrowser` also refuses to load any resource (``file:``, ``data:``, ``http(s):``,
  ``qrc:``): nothing it shows is fetched from anywhere;
* :func:`tip` — a tooltip that shows its text literally; :func:`menu_text` and
  :func:`one_line` — a name in a menu or list: ``&`` is not a mnemonic, bidi controls and line
  breaks are shown as escapes, so one name stays one readable entry;
* :func:`message_box` — a ``QMessageBox`` whose text is plain.

``tests/test_safe_text.py`` fails on any ``QLabel``, tooltip, menu text or message box in
``ui/`` made without these.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any, LiteralString

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtWidgets import QLabel, QMessageBox, QTextBrowser, QWidget

from ..core.termsafe import visible_line

PLAIN = Qt.TextFormat.PlainText
RICH = Qt.TextFormat.RichText


class Markup(str):
    """HTML that Hearthside wrote: a literal template with escaped values (see :func:`rich`)."""

    __slots__ = ()

    def join(self, parts: Iterable[str]) -> Markup:
        """Join ``parts`` with this separator; a part that is not Markup is escaped."""
        return Markup(str.join(self, (as_markup(p) for p in parts)))

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, as_markup(other)))


def escape(text: object) -> Markup:
    """``text`` as HTML that shows exactly these characters."""
    return Markup(html.escape("" if text is None else str(text), quote=True))


def as_markup(text: object) -> Markup:
    """Markup stays as it is; anything else is escaped."""
    return text if isinstance(text, Markup) else escape(text)


def rich(template: LiteralString, *values: object, **named: object) -> Markup:
    """Hearthside's own formatting around service values: ``rich("<b>{}</b> — {}", name, err)``.
    Each value is escaped unless it is Markup itself (made here before)."""
    return Markup(template.format(*(as_markup(v) for v in values),
                                  **{k: as_markup(v) for k, v in named.items()}))


def tip(text: object) -> str:
    """A tooltip that shows ``text`` literally (a tooltip renders anything that looks like HTML:
    this one always is HTML, with the text escaped in it)."""
    s = "" if text is None else str(text)
    if not s:
        return ""
    return "<qt>" + html.escape(s, quote=False).replace("\n", "<br>") + "</qt>"


def one_line(text: object) -> str:
    """``text`` on one line, nothing invisible: line breaks, tabs, bidi overrides and other
    control or format characters written as ``\\u202e``-style escapes."""
    return visible_line("" if text is None else str(text))


def menu_text(text: object) -> str:
    """``text`` for a menu entry or a button: :func:`one_line`, and ``&`` doubled so it is not
    taken as a keyboard mnemonic."""
    return one_line(text).replace("&", "&&")


#: Look-alikes for the two characters that open and close a tag (single angle quotation marks).
_NO_TAGS = str.maketrans({"<": "\u2039", ">": "\u203a"})


def balloon_text(text: object) -> str:
    """Text for a tray balloon (``QSystemTrayIcon.showMessage``), shown as text wherever it goes.

    Qt's own balloon and the Windows and macOS ones show plain text, but a tray over D-Bus
    (StatusNotifierItem: most Linux desktops) hands the text unescaped to the notification
    server, which may render markup in it, ``<img src>`` included. Escaping would show
    ``&lt;`` in the plain balloons, so instead no tag can be formed: ``<`` and ``>`` become
    ``‹`` and ``›``, which read the same under either. Bidi and other invisible controls are
    shown as escapes (line breaks are kept: a balloon wraps)."""
    s = "" if text is None else str(text)
    return "\n".join(visible_line(line) for line in s.split("\n")).translate(_NO_TAGS)


class PlainLabel(QLabel):
    """A label that is plain text, always: its format cannot be changed."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        super().setTextFormat(PLAIN)
        self.setText(text)

    def setTextFormat(self, _format: Any) -> None:
        """Ignored: this label shows plain text only."""
        super().setTextFormat(PLAIN)


class RichLabel(QLabel):
    """A label for Hearthside's own formatting: text that is not :class:`Markup` is escaped.

    Links are not opened unless a caller says so (``setOpenExternalLinks``) for its own URL."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        super().setTextFormat(RICH)
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(as_markup(text))

    def setTextFormat(self, _format: Any) -> None:
        """Ignored: always rich text, from escaped values."""
        super().setTextFormat(RICH)


class SafeBrowser(QTextBrowser):
    """A read-only document view that never loads a resource and never follows a link.

    A document asks its view for every ``<img>``, style sheet or linked page; the default view
    reads local files (``file:``, paths relative to the working folder) and ``qrc:``. This one
    answers every request with an empty, 1×1 transparent image or empty text — a refusal that
    also stops Qt's own file fallback (which runs only when the answer is empty)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setSearchPaths([])
        self.refused: list[str] = []  # what a document asked for (tests look)

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        self.refused.append(name.toString() if isinstance(name, QUrl) else str(name))
        if int(type) == QTextDocument.ResourceType.ImageResource.value:
            img = QImage(1, 1, QImage.Format.Format_ARGB32)
            img.fill(0)
            return img
        return ""

    def setHtml(self, text: str) -> None:
        super().setHtml(as_markup(text))

    def insertHtml(self, text: str) -> None:
        super().insertHtml(as_markup(text))

    def append(self, text: str) -> None:
        """A new paragraph of Markup (a plain ``str`` is escaped); always read as HTML, so an
        escaped ``&amp;`` shows as ``&``."""
        m = as_markup(text)
        super().append(m if m.lstrip().startswith("<") else "<span></span>" + m)

    def setSource(self, name: QUrl | str, type: Any = None) -> None:
        """Ignored: this view shows only what Hearthside puts in it."""


def message_box(parent: QWidget | None, title: str, text: str,
                icon: QMessageBox.Icon = QMessageBox.Icon.NoIcon) -> QMessageBox:
    """A ``QMessageBox`` whose text (and informative text) is plain."""
    box = QMessageBox(parent)
    box.setTextFormat(PLAIN)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setText(text)
    return box


def informative(box: QMessageBox, text: str) -> None:
    """Set a message box's informative text as plain text (its label guesses otherwise)."""
    box.setInformativeText(text)
    for lab in box.findChildren(QLabel, "qt_msgbox_informativelabel"):
        lab.setTextFormat(PLAIN)


__all__ = [
    "Markup",
    "PlainLabel",
    "RichLabel",
    "SafeBrowser",
    "as_markup",
    "balloon_text",
    "escape",
    "informative",
    "menu_text",
    "message_box",
    "one_line",
    "rich",
    "tip",
]
