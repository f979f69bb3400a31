"""The tray icon (or, without a system tray, a small window) with the everyday actions.

It lists the personas found, opens a persona folder in the file manager, and quits. Everything
it shows comes from the app's services; nothing here decides anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from ..app.context import AppContext
from ..app.personas import PersonaInfo
from .icon import hearth_icon

Opener = Callable[[Path], None]


def open_in_file_manager(path: Path) -> None:
    """Show ``path`` in the desktop's file manager."""
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


def persona_label(info: PersonaInfo) -> str:
    """A persona as the tray and the window list it: its name, and whether its folder is gone."""
    return info.name if info.exists else f"{info.name} (folder missing)"


class TrayController:
    """Builds the tray menu (or fallback window) from the persona service."""

    def __init__(self, app: AppContext, opener: Opener = open_in_file_manager) -> None:
        self.app = app
        self.opener = opener
        self.tray: QSystemTrayIcon | None = None
        self.window: QWidget | None = None
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self.rebuild_menu)
        self.rebuild_menu()

    # --- actions -------------------------------------------------------------------------
    def open_personas_root(self) -> None:
        root = self.app.paths.personas_dir
        root.mkdir(parents=True, exist_ok=True)
        self.opener(root)

    def open_persona(self, path: Path) -> None:
        self.opener(path)

    def quit(self) -> None:
        if self.tray is not None:
            self.tray.hide()
        QApplication.quit()

    # --- views ---------------------------------------------------------------------------
    def rebuild_menu(self) -> None:
        self.menu.clear()
        personas = self.app.personas.list()
        title = QAction("Personas" if personas else "No personas yet", self.menu)
        title.setEnabled(False)
        self.menu.addAction(title)
        for info in personas:
            act = QAction(persona_label(info), self.menu)
            act.setEnabled(info.exists)
            act.triggered.connect(lambda _=False, p=info.path: self.open_persona(p))
            self.menu.addAction(act)
        self.menu.addSeparator()
        self.menu.addAction("Open persona folder", self.open_personas_root)
        self.menu.addSeparator()
        self.menu.addAction("Quit", self.quit)

    def show(self) -> str:
        """Show the tray icon when the desktop has a tray, else the small window."""
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(hearth_icon(), QApplication.instance())
            self.tray.setToolTip("Hearthside")
            self.tray.setContextMenu(self.menu)
            self.tray.activated.connect(self._on_activated)
            self.tray.show()
            return "tray"
        self.window = FallbackWindow(self)
        self.window.show()
        return "window"

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger and self.tray is not None:
            self.menu.popup(self.tray.geometry().center())


class FallbackWindow(QWidget):
    """The same actions as the tray menu, for desktops without a system tray."""

    def __init__(self, controller: TrayController) -> None:
        super().__init__()
        self.controller = controller
        self.setWindowTitle("Hearthside")
        self.setWindowIcon(hearth_icon())
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Your personas"))
        self.list = QListWidget()
        self.list.itemActivated.connect(self._open_item)
        layout.addWidget(self.list)
        open_btn = QPushButton("Open persona folder")
        open_btn.clicked.connect(controller.open_personas_root)
        layout.addWidget(open_btn)
        quit_btn = QPushButton("Quit")
        quit_btn.clicked.connect(controller.quit)
        layout.addWidget(quit_btn)
        self.refresh()
        self.resize(320, 360)

    def changeEvent(self, event: QEvent) -> None:
        """Re-list personas when the user comes back to the window (they may have added one)."""
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self.refresh()
        super().changeEvent(event)

    def refresh(self) -> None:
        self.list.clear()
        for info in self.controller.app.personas.list():
            item = QListWidgetItem(persona_label(info))
            item.setData(Qt.ItemDataRole.UserRole, str(info.path))
            self.list.addItem(item)

    def _open_item(self, item: QListWidgetItem) -> None:
        self.controller.open_persona(Path(item.data(Qt.ItemDataRole.UserRole)))


def display_problem() -> str:
    """A sentence when Qt has no screen to use (it would abort the process), else ""."""
    if sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return (
                "There is no graphical display here (DISPLAY and WAYLAND_DISPLAY are unset). "
                "Run 'hearthside --headless' to keep watching and checking in without a window."
            )
    return ""


def run_tray(app: AppContext) -> int:
    """Start the Qt event loop with the tray (or window); returns the exit code."""
    problem = display_problem()
    if problem:
        print(f"hearthside: {problem}", file=sys.stderr)
        return 1
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    qapp.setApplicationName("Hearthside")
    qapp.setDesktopFileName("hearthside")
    qapp.setQuitOnLastWindowClosed(False)
    qapp.setWindowIcon(hearth_icon())
    controller = TrayController(app)
    mode = controller.show()
    if mode == "window" and controller.window is not None:
        qapp.setQuitOnLastWindowClosed(True)
    qapp._hearthside_controller = controller  # type: ignore[attr-defined]  # keep alive
    return int(qapp.exec())
