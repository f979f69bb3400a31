"""Small pieces the windows share: opening a path with a visible fallback, a message row.

Opening a file or folder is the desktop's job; when it cannot (no file manager, no handler),
the person gets a message with the path and a *Copy path* button instead of a silent failure.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..safetext import PlainLabel

#: Opens a URL with the desktop; returns False when it could not. Windows take one to test.
UrlOpener = Callable[[QUrl], bool]


def desktop_open(url: QUrl) -> bool:
    return bool(QDesktopServices.openUrl(url))


class PathMessage(QDialog):
    """"Could not open ..." with the path (selectable) and a *Copy path* button."""

    def __init__(self, parent: QWidget | None, what: str, path: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("Could not open")
        self.path = path
        lay = QVBoxLayout(self)
        msg = PlainLabel(f"The desktop could not open {what}. You can open it yourself; it is here:")
        msg.setWordWrap(True)
        lay.addWidget(msg)
        self.path_label = PlainLabel(path)
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path_label.setWordWrap(True)
        self.path_label.setAccessibleName("Path")
        lay.addWidget(self.path_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy path")
        self.copy_button.setAccessibleName("Copy path")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.path)
        self.copy_button.setText("Copied")


def open_path(parent: QWidget, path: str, what: str, opener: UrlOpener = desktop_open) -> PathMessage | None:
    """Ask the desktop to open ``path``; on failure show (and return) the path message."""
    if opener(QUrl.fromLocalFile(path)):
        return None
    box = PathMessage(parent, what, path)
    box.setModal(False)
    box.show()
    return box


def close_on_escape(window: QWidget) -> QShortcut:
    """Escape closes (hides) the window, as people expect of a dialog-like window."""
    return QShortcut(QKeySequence(Qt.Key.Key_Escape), window, window.close)
