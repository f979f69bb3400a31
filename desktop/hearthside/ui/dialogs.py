"""Small dialogs every window uses: a message with a path and *Copy path*, and plain notes.

This is the one *Copy path* dialog: the tray's "Open folder", the review window's "Open in
editor" and every other "could not open" fall back to it.

They never block the event loop (``show()``, not ``exec()``), the text is selectable so people
can copy errors, Escape closes them and the default button takes Enter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from .icon import hearth_icon
from .safetext import PlainLabel


class MessageDialog(QDialog):
    """A non-modal note: a title, one or more sentences, optionally a path with *Copy path*."""

    def __init__(self, title: str, text: str, path: str = "", parent: QWidget | None = None,
                 actions: Sequence[tuple[str, Callable[[], object]]] = ()) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowIcon(hearth_icon())
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        layout = QVBoxLayout(self)
        self.label = PlainLabel(text)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                           | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.label.setAccessibleName("message")
        layout.addWidget(self.label)
        self.path_field: QLineEdit | None = None
        buttons = QDialogButtonBox()
        if path:
            self.path_field = QLineEdit(path)
            self.path_field.setReadOnly(True)
            self.path_field.setAccessibleName("path")
            layout.addWidget(self.path_field)
            copy = QPushButton("Copy path")
            copy.setAccessibleName("Copy path")
            copy.clicked.connect(self.copy_path)
            buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
            self.copy_button = copy
        self.action_buttons: list[QPushButton] = []
        for label, act in actions:  # e.g. "Edit HEARTBEAT.md…": does it, then closes the note
            b = QPushButton(label)
            b.setAccessibleName(label.rstrip("…"))
            b.clicked.connect(lambda _=False, act=act: (act(), self.close()))
            buttons.addButton(b, QDialogButtonBox.ButtonRole.ActionRole)
            self.action_buttons.append(b)
        close = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        close.setDefault(not actions)
        if self.action_buttons:
            self.action_buttons[0].setDefault(True)
        close.setAccessibleName("Close")
        buttons.rejected.connect(self.close)
        close.clicked.connect(self.close)
        layout.addWidget(buttons)
        self.setMinimumWidth(420)

    def copy_path(self) -> None:
        if self.path_field is not None:
            QApplication.clipboard().setText(self.path_field.text())
            self.copy_button.setText("Copied")


def show_message(title: str, text: str, path: str = "", parent: QWidget | None = None,
                 actions: Sequence[tuple[str, Callable[[], object]]] = ()) -> MessageDialog:
    """Show a :class:`MessageDialog` (non-modal, in front) and return it; ``actions`` are
    (label, what it does) buttons beside *Close*, the first one the default."""
    dlg = MessageDialog(title, text, path, parent, actions)
    dlg.show()
    dlg.raise_()
    dlg.activateWindow()
    return dlg


def could_not_open(what: str, path: str, parent: QWidget | None = None) -> MessageDialog:
    """The desktop could not open ``what`` (e.g. "the file", "this folder"): say so and show
    the path with *Copy path*, so the person can open it themselves."""
    return show_message("Could not open",
                        f"The desktop could not open {what}. You can open it yourself; the path is below.",
                        path, parent)
