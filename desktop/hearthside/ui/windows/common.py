"""Small pieces the windows share: opening a path with a visible fallback, a message row.

Opening a file or folder is the desktop's job; when it cannot (no file manager, no handler),
the person gets a message with the path and a *Copy path* button instead of a silent failure
(:func:`hearthside.ui.dialogs.could_not_open`, the one such dialog).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

from ..dialogs import MessageDialog, could_not_open

#: Opens a URL with the desktop; returns False when it could not. Windows take one to test.
UrlOpener = Callable[[QUrl], bool]


def desktop_open(url: QUrl) -> bool:
    return bool(QDesktopServices.openUrl(url))


def open_path(parent: QWidget, path: str, what: str, opener: UrlOpener = desktop_open) -> MessageDialog | None:
    """Ask the desktop to open ``path``; on failure show (and return) the path message."""
    if opener(QUrl.fromLocalFile(path)):
        return None
    return could_not_open(what, path, parent)


def close_on_escape(window: QWidget) -> QShortcut:
    """Escape closes (hides) the window, as people expect of a dialog-like window."""
    return QShortcut(QKeySequence(Qt.Key.Key_Escape), window, window.close)
