"""The tray icon and its menu, and the main window that carries the same actions.

The icon shows the app's state at a glance without changing size: normal, *needs review*
(a red badge with the number of files waiting), paused (grey, with pause bars) and error (an
amber "!"). The menu is rebuilt from the shell's state when it is about to show, so it is
always current; nothing here decides anything or reads a file. What the tray needs of the shell
is :class:`TrayShell` (``ui/app.py``'s ``Shell`` is one), so this module imports nothing back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from ..app.alerts import Notice
from .icon import hearth_icon
from .safetext import PlainLabel, balloon_text, menu_text, one_line, tip

if TYPE_CHECKING:
    from ..app.lifecycle import PersonaRow

FIRST_PERSONA = "Create your first persona…"
#: A persona whose HEARTBEAT.md has nothing to check: every check-in would be skipped.
NO_CHECKLIST = "No checklist yet — Edit HEARTBEAT.md…"


class TrayShell(Protocol):
    """What the tray and the main window read (the shell's in-memory state) and ask (intents)."""

    tray: TrayController | None
    quitting: bool
    state_changed: Any  # a Qt signal: the state moved

    @property
    def rows(self) -> tuple[PersonaRow, ...]: ...
    @property
    def rows_loaded(self) -> bool: ...
    @property
    def errors(self) -> dict[str, str]: ...
    @property
    def unread(self) -> int: ...
    @property
    def autostart_on(self) -> bool: ...
    def waiting(self) -> dict[str, tuple[str, str, str]]: ...
    def icon_state(self) -> tuple[str, int]: ...
    def tooltip(self) -> str: ...
    def row(self, persona: str) -> PersonaRow | None: ...
    def refresh(self, first: bool = False) -> None: ...
    def open_notice(self, notice: Notice | None) -> None: ...
    def open_folder(self, path: str | Path, what: str = "folder") -> bool: ...
    def check_in_now(self, persona: str) -> None: ...
    def edit_checklist(self, persona: str) -> None: ...
    def set_paused(self, persona: str, paused: bool) -> None: ...
    def set_autostart(self, on: bool) -> None: ...
    def show_chat(self, persona: str, alert: str | None = None) -> QWidget: ...
    def show_review(self, persona: str | None = None, path: str | None = None) -> QWidget: ...
    def show_welcome(self) -> QWidget: ...
    def show_memory(self, persona: str) -> QWidget: ...
    def show_notifications(self) -> QWidget: ...
    def show_plugins(self) -> QWidget: ...
    def show_mcp(self) -> QWidget: ...
    def show_settings(self) -> QWidget: ...
    def show_about(self) -> QWidget: ...
    def show_main(self) -> QWidget: ...
    def quit(self) -> None: ...


def status_line(r: PersonaRow) -> str:
    """A persona's status row: folder missing, or check-ins (paused / next) and drift."""
    if not r.exists:
        return "folder missing"
    if r.paused:
        hb = "check-ins paused"
    elif r.no_checklist:
        hb = "no checklist yet"
    elif r.next_run is not None:  # from an interval or set times (heartbeat_at): the real next one
        hb = f"next check-in {r.next_run.astimezone().strftime('%H:%M')}"
    elif r.interval_minutes <= 0:
        hb = "check-ins off"
    else:
        hb = f"check-in every {r.interval_minutes:g} min"
    if r.last_status == "failed":
        hb += " (last one failed)"
    if r.snoozed_until is not None:
        hb += f", alerts snoozed until {r.snoozed_until.astimezone().strftime('%H:%M')}"
    drift = f"{r.waiting} change(s) to review" if r.waiting else "no changes waiting"
    return f"{hb} · {drift}"


class TrayController:
    """The tray icon (or, without a system tray, the main window) for one :class:`Shell`."""

    def __init__(self, shell: TrayShell) -> None:
        self.shell = shell
        shell.tray = self
        self.tray: QSystemTrayIcon | None = None
        self.window: QWidget | None = None
        self.menu = QMenu()
        self.menu.setAccessibleName("Hearthside menu")
        self.menu.setWindowTitle("Hearthside menu")
        self.menu.aboutToShow.connect(self._about_to_show)
        self.menu.aboutToHide.connect(lambda: QTimer.singleShot(0, self.update))
        self.last_notice: Notice | None = None
        self._icon_key: tuple[str, int] | None = None
        self._menu_sig: tuple[object, ...] | None = None
        shell.state_changed.connect(self.update)
        self.rebuild_menu()

    # --- views ---------------------------------------------------------------------------
    def _about_to_show(self) -> None:
        self.rebuild_menu(force=False)
        self.shell.refresh()  # fresh rows rebuild the menu again when they arrive

    def _signature(self) -> tuple[object, ...]:
        s = self.shell
        return (tuple(s.rows), s.rows_loaded, len(s.waiting()), s.unread, s.autostart_on)

    def rebuild_menu(self, force: bool = True) -> None:
        """Build the menu from the shell's state; ``force=False`` skips it when nothing changed
        (rebuilding an open menu would drop the entry the user's keyboard is on)."""
        sig = self._signature()
        if not force and sig == self._menu_sig:
            return
        self._menu_sig = sig
        m = self.menu
        m.clear()
        shell = self.shell
        rows = shell.rows
        if not shell.rows_loaded:
            m.addAction(self._info("Starting…"))
        for r in rows:
            m.addMenu(self._persona_menu(r))
        if rows:
            m.addSeparator()
            m.addAction("New persona…", shell.show_welcome)
        elif shell.rows_loaded:
            m.addAction(FIRST_PERSONA, shell.show_welcome)
        count = len(shell.waiting())
        review = menu_text(f"Review changes ({count})…") if count else "Review changes…"
        m.addAction(review, lambda: shell.show_review())
        m.addAction("Notifications…" if not shell.unread else menu_text(f"Notifications ({shell.unread} new)…"),
                    shell.show_notifications)
        m.addAction("Plugins…", shell.show_plugins)
        m.addAction("MCP servers…", shell.show_mcp)
        m.addAction("Settings…", shell.show_settings)
        m.addSeparator()
        login = QAction("Start at login", m)
        login.setCheckable(True)
        login.setChecked(shell.autostart_on)
        login.toggled.connect(shell.set_autostart)
        m.addAction(login)
        m.addAction("About / Diagnostics", shell.show_about)
        m.addSeparator()
        m.addAction("Quit", shell.quit)

    def _info(self, text: str) -> QAction:
        act = QAction(menu_text(text), self.menu)
        act.setEnabled(False)
        return act

    def _persona_menu(self, r: PersonaRow) -> QMenu:
        shell = self.shell
        title = r.name
        if not r.exists:
            title += " (folder missing)"
        elif r.waiting:
            title += f" ({r.waiting} to review)"
        elif r.paused:
            title += " (paused)"
        sub = QMenu(menu_text(title), self.menu)  # a folder name: no mnemonic, no bidi, one line
        name, paused, path = r.name, r.paused, r.path  # as shown now, not as when clicked
        if r.no_checklist:  # instead of "Check-in every 30 min" that would only ever skip
            sub.addAction(menu_text(NO_CHECKLIST), lambda: shell.edit_checklist(name))
        else:
            sub.addAction(self._info(status_line(r).capitalize()))
        sub.addSeparator()
        acts = [
            sub.addAction("Chat…", lambda: shell.show_chat(name)),
            sub.addAction("Check in now", lambda: shell.check_in_now(name)),
            sub.addAction("Resume check-ins" if paused else "Pause check-ins",
                          lambda: shell.set_paused(name, not paused)),
            sub.addAction(menu_text(f"Review changes ({r.waiting})…"), lambda: shell.show_review(name)),
        ]
        sub.addAction("Memory…", lambda: shell.show_memory(name))
        if r.specialists and r.exists:
            self._specialists_menu(sub, name, r.specialists)
        for a in acts[:3]:
            a.setEnabled(r.exists)
        sub.addAction("Open folder", lambda: shell.open_folder(path))
        return sub

    def _specialists_menu(self, sub: QMenu, persona: str, specialists: tuple[tuple[str, str, str], ...]) -> None:
        """*Specialists (N)*: each opens the chat with "Ask the NAME specialist to " typed in;
        a specialist with a ``color`` shows a dot of it (a hint only)."""
        from .windows.specialists import entry_text, set_color

        menu = sub.addMenu(menu_text(f"Specialists ({len(specialists)})"))
        menu.setToolTipsVisible(True)
        for agent, description, color in specialists:
            act = menu.addAction(entry_text(agent, description),
                                 lambda a=agent: self._ask_specialist(persona, a))  # type: ignore[misc]
            act.setToolTip(tip(description))
            set_color(act, color)

    def _ask_specialist(self, persona: str, agent: str) -> None:
        from PySide6.QtWidgets import QPlainTextEdit

        from .windows.specialists import insert_hint

        box = getattr(self.shell.show_chat(persona), "input", None)
        if isinstance(box, QPlainTextEdit):
            insert_hint(box, agent)

    def update(self) -> None:
        """Icon, tooltip and (when open) the menu follow the shell's state."""
        state, count = self.shell.icon_state()
        # Changing the icon or tooltip closes an open menu on XEmbed trays: wait until it closes
        # (aboutToHide runs update() again).
        if self.tray is not None and not self.menu.isVisible():
            if self._icon_key != (state, count):
                self._icon_key = (state, count)
                self.tray.setIcon(hearth_icon(state=state, count=count))
            tip_text = tip(self.shell.tooltip())  # persona names and errors: shown as text
            if tip_text != self.tray.toolTip():
                self.tray.setToolTip(tip_text)  # safe: made by tip() above
        if not self.menu.isVisible():  # an open menu is left alone (aboutToHide updates it)
            self.rebuild_menu(force=False)

    def show(self) -> str:
        """Show the tray icon when the desktop has a tray, else the main window."""
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(hearth_icon(), QApplication.instance())
            self.tray.setContextMenu(self.menu)
            self.tray.activated.connect(self._on_activated)
            self.tray.messageClicked.connect(lambda: self.shell.open_notice(self.last_notice))
            self.tray.show()
            self.update()
            return "tray"
        self.window = self.shell.show_main()
        return "window"

    def hide(self) -> None:
        if self.tray is not None:
            self.tray.hide()

    def show_message(self, notice: Notice) -> None:
        assert self.tray is not None
        self.last_notice = notice
        # a model's reply or a file name: never markup, whichever balloon the platform shows
        self.tray.showMessage(balloon_text(one_line(notice.title)), balloon_text(notice.body),
                              hearth_icon(), 10_000)

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger and self.tray is not None:
            self.menu.popup(self.tray.geometry().center())


class MainWindow(QWidget):
    """The same actions as the tray menu, in a window (no tray, or a second launch)."""

    def __init__(self, shell: TrayShell) -> None:
        super().__init__()
        self.shell = shell
        self.setWindowTitle("Hearthside")
        self.setWindowIcon(hearth_icon())
        layout = QVBoxLayout(self)
        self.status = PlainLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        title = PlainLabel("Your personas")
        layout.addWidget(title)
        self.list = QListWidget()
        self.list.setAccessibleName("Personas")
        title.setBuddy(self.list)
        self.list.itemActivated.connect(lambda _i: self._chat())
        self.list.currentRowChanged.connect(lambda _r: self._update_buttons())
        layout.addWidget(self.list)
        per = QGridLayout()
        self.chat_btn = self._button("Chat…", self._chat)
        self.check_btn = self._button("Check in now", lambda: self._with(self.shell.check_in_now))
        self.pause_btn = self._button("Pause check-ins", self._toggle_pause)
        self.review_btn = self._button("Review changes…", lambda: self._with(self.shell.show_review))
        self.folder_btn = self._button("Open folder", lambda: self._with_row(lambda r: self.shell.open_folder(r.path)))
        self.memory_btn = self._button("Memory…", lambda: self._with(self.shell.show_memory))
        for i, b in enumerate((self.chat_btn, self.check_btn, self.pause_btn, self.review_btn, self.folder_btn,
                               self.memory_btn)):
            per.addWidget(b, i // 3, i % 3)
        layout.addLayout(per)
        general = QHBoxLayout()
        self.new_btn = self._button("New persona…", shell.show_welcome)
        self.all_review_btn = self._button("Review all changes…", lambda: shell.show_review())
        self.notes_btn = self._button("Notifications…", shell.show_notifications)
        self.plugins_btn = self._button("Plugins…", shell.show_plugins)
        self.mcp_btn = self._button("MCP servers…", shell.show_mcp)
        self.settings_btn = self._button("Settings…", shell.show_settings)
        for b in (self.new_btn, self.all_review_btn, self.notes_btn, self.plugins_btn, self.mcp_btn,
                  self.settings_btn):
            general.addWidget(b)
        layout.addLayout(general)
        bottom = QHBoxLayout()
        self.login = QCheckBox("Start at login")
        self.login.setAccessibleName("Start at login")
        self.login.clicked.connect(lambda on: shell.set_autostart(bool(on)))
        bottom.addWidget(self.login)
        bottom.addStretch(1)
        self.about_btn = self._button("About / Diagnostics", shell.show_about)
        self.quit_btn = self._button("Quit", shell.quit)
        bottom.addWidget(self.about_btn)
        bottom.addWidget(self.quit_btn)
        layout.addLayout(bottom)
        shell.state_changed.connect(self.refresh)
        self.refresh()
        self.resize(560, 420)

    def _button(self, text: str, slot: Callable[[], object]) -> QPushButton:
        b = QPushButton(text)
        b.setAccessibleName(text.rstrip("…"))
        b.clicked.connect(lambda _=False: slot())
        return b

    def selected(self) -> PersonaRow | None:
        item = self.list.currentItem()
        return self.shell.row(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _with_row(self, fn: Callable[[PersonaRow], object]) -> None:
        r = self.selected()
        if r is not None:
            fn(r)

    def _with(self, fn: Callable[[str], object]) -> None:
        self._with_row(lambda r: fn(r.name))

    def _chat(self) -> None:
        self._with(self.shell.show_chat)

    def _toggle_pause(self) -> None:
        self._with_row(lambda r: self.shell.set_paused(r.name, not r.paused))

    def changeEvent(self, event: QEvent) -> None:
        """Re-read the personas when the user comes back to the window (they may have added one)."""
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self.shell.refresh()
        super().changeEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Without a tray this window is the app: closing it quits (with a tray it only hides)."""
        if (self.shell.tray is None or self.shell.tray.tray is None) and not self.shell.quitting:
            self.shell.quit()
        super().closeEvent(event)

    def refresh(self) -> None:
        shell = self.shell
        current = self.list.currentItem()
        keep = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        self.list.clear()
        for r in shell.rows:
            label = one_line(r.name) if r.exists else f"{one_line(r.name)} (folder missing)"
            item = QListWidgetItem(f"{label} — {one_line(status_line(r))}")
            item.setData(Qt.ItemDataRole.UserRole, r.name)
            self.list.addItem(item)
            if r.name == keep:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)
        waiting = len(shell.waiting())
        parts = []
        if not shell.rows_loaded:
            parts.append("Starting…")
        elif not shell.rows:
            parts.append("No personas yet: press “Create your first persona…”.")
        if waiting:
            parts.append(f"{waiting} file(s) changed and wait for review.")
        if shell.unread:
            parts.append(f"{shell.unread} new notification(s).")
        parts += [f"Problem: {e}" for e in list(shell.errors.values())[:3]]
        self.status.setText(" ".join(parts) or "All quiet.")
        self.new_btn.setText("New persona…" if shell.rows or not shell.rows_loaded else FIRST_PERSONA)
        self.all_review_btn.setText(f"Review all changes ({waiting})…" if waiting else "Review all changes…")
        self.notes_btn.setText(f"Notifications ({shell.unread} new)…" if shell.unread else "Notifications…")
        self.login.setChecked(shell.autostart_on)
        self._update_buttons()

    def _update_buttons(self) -> None:
        r = self.selected()
        for b in (self.chat_btn, self.check_btn, self.pause_btn):
            b.setEnabled(r is not None and r.exists)
        self.review_btn.setEnabled(r is not None)
        self.folder_btn.setEnabled(r is not None)
        self.memory_btn.setEnabled(r is not None)
        self.pause_btn.setText("Resume check-ins" if r is not None and r.paused else "Pause check-ins")
        self.review_btn.setText(f"Review changes ({r.waiting})…" if r is not None else "Review changes…")
