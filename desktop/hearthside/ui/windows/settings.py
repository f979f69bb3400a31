"""*Settings…*: what can be set today and where, until the management windows exist.

Says where the settings file is (open it, copy its path) and which commands change the model,
MCP servers and plugin packs. Reading the model name happens on a worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..icon import hearth_icon

if TYPE_CHECKING:
    from ..app import Shell

TODAY = (
    "Hearthside's settings live in one file you can edit by hand. The settings windows are "
    "coming; today these commands change them:\n"
    "• Model: hearthside model set / hearthside model show\n"
    "• MCP servers: hearthside mcp add / list / remove\n"
    "• Plugin packs: hearthside plugins install / list / remove\n"
    "• Check-ins per persona: [personas.NAME] heartbeat_interval_minutes, active hours, paused"
)


class SettingsWindow(QWidget):
    def __init__(self, shell: Shell) -> None:
        super().__init__()
        self.shell = shell
        self.setWindowTitle("Hearthside — Settings")
        self.setWindowIcon(hearth_icon())
        layout = QVBoxLayout(self)
        text = QLabel(TODAY)
        text.setWordWrap(True)
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(text)
        self.model = QLabel("Model: reading…")
        self.model.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.model)
        self.path = QLineEdit(str(shell.app.paths.settings_file))
        self.path.setReadOnly(True)
        self.path.setAccessibleName("Settings file")
        layout.addWidget(self.path)
        row = QHBoxLayout()
        open_btn = QPushButton("Open settings folder")
        open_btn.clicked.connect(lambda: shell.open_folder(shell.app.paths.config_dir))
        copy = QPushButton("Copy path")
        copy.clicked.connect(lambda: QApplication.clipboard().setText(self.path.text()))
        close = QPushButton("Close")
        close.setDefault(True)
        close.clicked.connect(self.close)
        row.addWidget(open_btn)
        row.addWidget(copy)
        row.addStretch(1)
        row.addWidget(close)
        layout.addLayout(row)
        shell.bridge.call(lambda: shell.app.settings.get("model.model") or shell.app.settings.get("model.name"),
                          self._show_model)
        self.resize(560, 300)

    def _show_model(self, name: object) -> None:
        self.model.setText(f"Model: {name}" if name else "Model: none set yet (hearthside model set …)")
