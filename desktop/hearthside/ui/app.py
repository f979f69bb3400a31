"""The running app: QApplication, single instance, the lifecycle, the tray and every window.

:class:`Shell` is the window manager and the one place UI intents go (check in now, pause,
open a folder, quit). It is also the tray's :class:`~hearthside.app.events.AppEvents`: the
lifecycle calls it on service threads and each call only emits the bridge's signal, which
the Qt thread handles. What the tray shows (persona rows, errors, notices, the notification
preferences) is a :class:`~hearthside.ui.state.UiState`, refreshed on a worker thread through the
:class:`~hearthside.ui.bridge.Bridge`, so the menu is built from memory and the Qt thread never
touches files, locks, the keyring or the network (``tests/test_ui_io.py`` lints for it).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from ..app.alerts import Notice
from ..app.autostart import Autostart
from ..app.context import AppContext
from ..app.display import display_problem
from ..app.lifecycle import Lifecycle, PersonaRow, settings_problem
from ..app.notify import OPEN_CHAT, SNOOZE, DesktopNotices, notification_prefs
from ..core.heartbeat import CHECKLIST_REASONS, EMPTY_CHECKLIST
from .bridge import Bridge
from .dialogs import could_not_open, show_message
from .icon import hearth_icon
from .state import Snapshot, UiState
from .tray import status_line

#: The button of the "no checklist yet" note (the tray's entry says the same).
NO_CHECKLIST_BUTTON = "Edit HEARTBEAT.md…"


def checklist_words(reason: str) -> str:
    """The skip reason of an empty or missing checklist as a sentence for the note."""
    return "HEARTBEAT.md is empty." if reason == EMPTY_CHECKLIST else "there is no HEARTBEAT.md yet."

if TYPE_CHECKING:
    import concurrent.futures

    from ..app.drift_types import DriftEvent
    from ..app.heartbeat import HeartbeatOutcome
    from ..core.mcpconfig import ServerStatus

log = logging.getLogger("hearthside.ui")

Opener = Callable[[Path], bool]

def open_with_desktop(path: Path) -> bool:
    """Ask the desktop to open ``path``; False when it could not (no handler, no launcher)."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


class Shell(QObject):
    """Holds the app's UI state and opens windows; the tray and the main window call it."""

    state_changed = Signal()
    _dbus_failed = Signal(str)  # why a desktop notification was not shown
    _dbus_clicked = Signal(Notice)
    _dbus_action = Signal(Notice, str)  # a button on a desktop notification (Open chat, Snooze, Review)

    def __init__(self, app: AppContext, bridge: Bridge | None = None, lifecycle: Lifecycle | None = None,
                 opener: Opener = open_with_desktop, autostart: Autostart | None = None) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge or Bridge(lambda: app.runtime)
        self.lifecycle = lifecycle or Lifecycle(app, self)
        self.opener = opener
        self.autostart = autostart or Autostart()
        self.state = UiState(self.bridge, self._read_state)
        self.state.changed.connect(self.state_changed)
        self.started = False
        self.quitting = False
        self.windows: dict[object, QWidget] = {}
        self.dialogs: list[QWidget] = []
        self.tray: Any = None  # TrayController, set when it is built
        self.clickable: DesktopNotices | None = None  # D-Bus notices (no tray, or a server with buttons)
        self._dbus_failed.connect(self._on_dbus_failed)
        self._dbus_clicked.connect(self._on_dbus_clicked)  # a method, so Qt queues it to this thread
        self._dbus_action.connect(self._on_dbus_action)
        self.exit: Callable[[], None] = _quit_qt  # leaves the event loop (tests replace it)
        b = self.bridge
        b.notification.connect(self.on_notice)
        b.drift_event.connect(self._on_drift)
        b.heartbeat_outcome.connect(self._on_outcome)
        b.mcp_status.connect(self._on_mcp)
        b.service_error.connect(self.on_service_error)
        b.packs_changed.connect(self.refresh)

    # --- the state (read on a worker; see ui/state.py) -------------------------------------
    @property
    def rows(self) -> tuple[PersonaRow, ...]:
        return self.state.snapshot.rows

    @property
    def rows_loaded(self) -> bool:
        return self.state.snapshot.loaded

    @property
    def errors(self) -> dict[str, str]:
        return self.state.errors

    @property
    def notices(self) -> list[Notice]:
        return self.state.notices

    @property
    def unread(self) -> int:
        return self.state.unread

    @property
    def delivery(self) -> str:
        return self.state.delivery

    @property
    def autostart_on(self) -> bool:
        return self.state.autostart_on

    def _read_state(self) -> Snapshot:
        """Runs on a worker: the persona rows (re-reading settings) and the notification prefs."""
        rows = self.lifecycle.snapshot()
        return Snapshot(tuple(rows), True, notification_prefs(self.app.settings))

    # --- start ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the services on a worker thread; the tray is already visible meanwhile."""
        def begin() -> tuple[str, list[str], bool]:
            # Also beside a tray: a notification server that shows buttons (the ``actions``
            # capability) gets the notices, with *Open chat*, *Snooze 1 hour* and *Review*.
            if DesktopNotices.available():
                clickable = DesktopNotices()
                clickable.subscribe(self._dbus_clicked.emit, self._dbus_action.emit)
                self.clickable = clickable if clickable.start() else None
            told = settings_problem(self.app.settings)
            problems = self.lifecycle.start()
            return told, problems, self.autostart.enabled()

        self.bridge.call(begin, self._started, lambda exc: self.on_service_error(f"starting failed: {exc}"))

    def _started(self, result: tuple[str, list[str], bool]) -> None:
        told, problems, autostart_on = result
        self.started = True
        log.info("tray ready: services started%s", f" ({len(problems)} problem(s))" if problems else "")
        self.state.autostart_on = autostart_on
        if told:
            self.dialogs.append(show_message("Settings cannot be used", told, str(self.app.paths.settings_file)))
        self.refresh(first=True)

    def refresh(self, first: bool = False) -> None:
        """Read the state afresh on a worker; the tray updates when it arrives (meanwhile it
        shows the last snapshot)."""
        def done(snap: Snapshot) -> None:
            if os.environ.get("HEARTHSIDE_REPORT_READY"):  # benchmarks time the start
                print(f"hearthside: ready with {len(snap.rows)} persona(s)", flush=True)
            if not snap.rows:
                self.show_welcome()

        self.state.refresh(done if first else None)

    def waiting(self) -> dict[str, tuple[str, str, str]]:
        return self.lifecycle.drift_alerts.waiting()

    def icon_state(self) -> tuple[str, int]:
        """(state, count) for the icon: error, review (with the number of files), paused, normal."""
        return self.state.icon(len(self.waiting()))

    def tooltip(self) -> str:
        lines = ["Hearthside"]
        if not self.rows_loaded:
            lines.append("starting…")
        elif not self.rows:
            lines.append("No personas yet")
        for r in self.rows:
            lines.append(f"{r.name}: {status_line(r)}")
        count = len(self.waiting())
        if count:
            lines.append(f"{count} file(s) waiting for review")
        for why in list(self.errors.values())[:3]:
            lines.append(f"Problem: {why}")
        return "\n".join(lines)

    # --- AppEvents: called by the lifecycle on service threads; each only emits -------------
    def on_drift(self, event: DriftEvent) -> None:
        self.bridge.drift_event.emit(event)

    def on_outcome(self, outcome: HeartbeatOutcome) -> None:
        self.bridge.heartbeat_outcome.emit(outcome)

    def on_mcp_status(self, status: ServerStatus) -> None:
        self.bridge.mcp_status.emit(status)

    def show(self, notice: Notice) -> None:
        """Hand a notice to the Qt thread (:meth:`on_notice` decides how it is shown)."""
        self.bridge.notification.emit(notice)

    def on_error(self, message: str) -> None:
        self.bridge.service_error.emit(message)

    # --- the same events on the Qt thread ------------------------------------------------
    def _on_drift(self, _ev: DriftEvent) -> None:
        self.state_changed.emit()  # the badge, at once (the rows follow)
        self.refresh()

    def _on_outcome(self, out: HeartbeatOutcome) -> None:
        self.state.note_outcome(out)
        self.refresh()

    def _on_mcp(self, status: ServerStatus) -> None:
        self.state.note_mcp(status, quitting=self.quitting)
        self.state_changed.emit()

    def on_service_error(self, message: str) -> None:
        """A service failed on a background thread: badge, tooltip and one note; keep running."""
        if self.quitting:
            return
        log.warning("service error: %s", message)
        first = "service" not in self.errors
        self.errors["service"] = message
        self.state_changed.emit()
        if first:
            self.dialogs.append(show_message(
                "Something went wrong", f"{message}\n\nHearthside keeps running. Details are in the log in "
                f"{self.app.paths.log_dir}.", str(self.app.paths.log_dir)))

    def clear_errors(self) -> None:
        self.errors.pop("service", None)
        self.state_changed.emit()

    # --- notices -----------------------------------------------------------------------
    def on_notice(self, notice: Notice) -> None:
        """Show a notice: the tray's balloon, else the desktop's service, else the in-app list."""
        st = self.state
        st.notices.append(notice)
        del st.notices[:-200]
        st.unread += 1
        tray = self.tray.tray if self.tray is not None else None
        buttons = self.clickable is not None and self.clickable.supports_actions
        if not st.snapshot.allows_popups():  # off, or quiet hours (as last read): the list only
            st.delivery = "in-app"
        elif buttons and self.clickable is not None:  # the desktop's own, with Open chat / Snooze
            st.delivery = "dbus"
            self.clickable.show(notice).add_done_callback(self._after_dbus)
        elif tray is not None and tray.isVisible() and QSystemTrayIcon.supportsMessages():
            self.tray.show_message(notice)
            st.delivery = "tray"
        elif self.clickable is not None:
            st.delivery = "dbus"
            self.clickable.show(notice).add_done_callback(self._after_dbus)
        else:
            st.delivery = "in-app"
        self.state_changed.emit()

    def _on_dbus_clicked(self, notice: Notice) -> None:
        self.open_notice(notice)  # the service tells only of clicks on notices it showed

    def _on_dbus_action(self, notice: Notice, key: str) -> None:
        """A button on one of our desktop notifications (only ones it had reach here)."""
        alerts = notice.alerts
        if key == OPEN_CHAT and notice.persona:
            self.show_chat(notice.persona, alerts[0].text or None if len(alerts) == 1 else None)
        elif key == SNOOZE and notice.persona:
            self.snooze(notice.persona)
        else:  # REVIEW: what a click on a drift notice opens
            self.open_notice(notice)

    def snooze(self, persona: str) -> None:
        """No check-in alerts from ``persona`` for an hour (they are kept, marked snoozed)."""
        self.bridge.call(lambda: self.lifecycle.snooze(persona), lambda _until: self.refresh(),
                         lambda exc: self.on_service_error(f"snoozing {persona} failed: {exc}"))

    def _after_dbus(self, fut: concurrent.futures.Future[int]) -> None:
        """Runs on the notification thread (or here, when it failed at once): report failure."""
        exc = None if fut.cancelled() else fut.exception()
        if fut.cancelled() or exc is not None:
            self._dbus_failed.emit(str(exc) if exc is not None else "cancelled")

    def _on_dbus_failed(self, why: str) -> None:
        # no notification service answered: the in-app list (the window says so)
        log.info("desktop notification not shown: %s", why)
        self.state.delivery = "in-app"
        self.state_changed.emit()

    def open_notice(self, notice: Notice | None) -> None:
        """A click on a notice: the chat with that alert, the review of that file, or the list."""
        if notice is None:
            self.show_notifications()
            return
        alerts = notice.alerts
        if len(alerts) == 1 and alerts[0].kind == "checkin":
            self.show_chat(alerts[0].persona, alerts[0].text or None)
        elif alerts and all(a.kind == "drift" for a in alerts):
            first = alerts[0]
            self.show_review(first.persona if len({a.persona for a in alerts}) == 1 else None,
                             first.path if len(alerts) == 1 else None)
        elif alerts and all(a.kind == "fork" for a in alerts):
            from .windows.review import ReviewWindow

            w = self.show_review()  # a specialist's fork waits there for Apply or Discard
            if isinstance(w, ReviewWindow):
                w.show_forks()
        else:
            self.show_notifications()

    # --- windows -------------------------------------------------------------------------
    def _raise(self, w: QWidget) -> QWidget:
        w.show()
        w.raise_()
        w.activateWindow()
        return w

    def show_review(self, persona: str | None = None, path: str | None = None) -> QWidget:
        from .windows.review import ReviewWindow

        w = self.windows.get("review")
        if not isinstance(w, ReviewWindow) or w.persona != persona:
            w = ReviewWindow(self.app, self.bridge, persona=persona)
            self.windows["review"] = w
        if path:
            w.focus_file(path)
        return self._raise(w)

    def show_chat(self, persona: str, alert: str | None = None) -> QWidget:
        from .windows.chat import ChatWindow

        key = ("chat", persona)
        w = self.windows.get(key)
        if w is None or alert:
            w = ChatWindow(self.app, self.bridge, persona, alert=alert)
            self.windows[key] = w
        return self._raise(w)

    def show_welcome(self) -> QWidget:
        from .windows.welcome import WelcomeWindow

        w = self.windows.get("welcome")
        if w is None:
            welcome = WelcomeWindow(self.app, self.bridge)
            welcome.finished.connect(lambda *_: self.refresh())
            welcome.chat_requested.connect(self.show_chat)  # the last page's Open chat
            self.windows["welcome"] = w = welcome
        return self._raise(w)

    def _own(self, key: str, factory: Callable[[], QWidget]) -> QWidget:
        w = self.windows.get(key)
        if w is None:
            w = factory()
            self.windows[key] = w
        return self._raise(w)

    def show_notifications(self) -> QWidget:
        from .windows.notifications import NotificationsWindow

        self.state.unread = 0
        self.state_changed.emit()
        w = self._own("notifications", lambda: NotificationsWindow(self.app, self.bridge, self.open_notice))
        if isinstance(w, NotificationsWindow):
            w.reload()
        return w

    def show_about(self) -> QWidget:
        from .windows.about import AboutWindow

        self.clear_errors()
        w = self._own("about", lambda: AboutWindow(self.app, self.bridge))
        if isinstance(w, AboutWindow):
            w.run_checks()
        return w

    def _managed(self, key: str, factory: Callable[[], QWidget]) -> QWidget:
        """A management window (issue 13): built once, read afresh each time it is shown, and
        its *Restart now* goes through this shell's clean quit."""
        fresh = key not in self.windows
        w = self._own(key, factory)
        if fresh and hasattr(w, "restart"):
            from .windows.managekit import restart_app

            w.restart = lambda safe=False: restart_app(safe, self.quit)
        elif not fresh and hasattr(w, "reload"):
            w.reload()
        return w

    def show_settings(self) -> QWidget:
        from .windows.settings import SettingsWindow

        fresh = "settings" not in self.windows
        w = self._managed("settings", lambda: SettingsWindow(self.app, self.bridge))
        if fresh and isinstance(w, SettingsWindow):  # saved notification prefs reach the snapshot
            w.finished_action.connect(lambda *_: self.refresh())
        return w

    def show_plugins(self) -> QWidget:
        from .windows.plugins import PluginsWindow

        return self._managed("plugins", lambda: PluginsWindow(self.app, self.bridge))

    def show_mcp(self) -> QWidget:
        from .windows.mcp import McpWindow

        return self._managed("mcp", lambda: McpWindow(self.app, self.bridge))

    def show_memory(self, persona: str) -> QWidget:
        from .windows.memory import MemoryWindow

        return self._managed(f"memory/{persona}", lambda: MemoryWindow(self.app, self.bridge, persona))

    def show_main(self) -> QWidget:
        """The main window (the no-tray window; a second launch brings it forward)."""
        from .tray import MainWindow

        return self._own("main", lambda: MainWindow(self))

    # --- intents ----------------------------------------------------------------------
    def row(self, persona: str) -> PersonaRow | None:
        return next((r for r in self.rows if r.name == persona), None)

    def open_folder(self, path: str | Path, what: str = "folder") -> bool:
        """Open a folder or file with the desktop; on failure say so with *Copy path*."""
        p = Path(path)
        if self.opener(p):
            return True
        self.dialogs.append(could_not_open(f"this {what}", str(p)))
        return False

    def check_in_now(self, persona: str) -> None:
        def done(out: HeartbeatOutcome) -> None:
            if out.status == "failed":
                self.dialogs.append(show_message(
                    f"Check-in of {persona} failed", f"{out.reason}\n\nCheck the model settings "
                    "('hearthside model show') and try again."))
            elif out.status == "skipped" and out.reason in CHECKLIST_REASONS:
                self.dialogs.append(show_message(
                    f"{persona} has no checklist yet", f"{persona} has nothing to check: {checklist_words(out.reason)} "
                    "Write in it what to look at, and check-ins will run. Hearthside never writes this file.",
                    actions=[(NO_CHECKLIST_BUTTON, lambda: self.edit_checklist(persona))]))
            elif out.status == "skipped":
                self.dialogs.append(show_message(f"Check-in of {persona} skipped", out.reason))
            elif out.status == "silent":
                self.dialogs.append(show_message(f"{persona} checked in", "Nothing needs your attention."))

        self.bridge.call(lambda: self.lifecycle.check_in_now(persona).result(), done)

    def edit_checklist(self, persona: str) -> None:
        """Open the persona's HEARTBEAT.md in the user's editor; when there is none, open the
        persona's folder and say so. Hearthside never creates or writes the file: what a
        persona checks is the user's to write."""
        r = self.row(persona)
        if r is None:
            return
        folder = Path(r.path)
        path = folder / "HEARTBEAT.md"

        def opened(exists: bool) -> None:
            if exists:
                self.open_folder(path, "file")
            elif self.open_folder(folder):
                self.dialogs.append(show_message(
                    f"{persona} has no HEARTBEAT.md yet",
                    f"There is no HEARTBEAT.md in {persona}'s folder yet, so the folder is open instead. Create "
                    "HEARTBEAT.md there with your editor and write in it what to check; Hearthside never writes it.",
                    str(path)))

        self.bridge.call(lambda: os.path.lexists(path), opened)

    def set_paused(self, persona: str, paused: bool) -> None:
        self.bridge.call(lambda: self.lifecycle.set_paused(persona, paused), lambda _: self.refresh())

    def set_autostart(self, on: bool) -> None:
        def failed(exc: BaseException) -> None:
            self.state_changed.emit()  # the switch goes back to what the state says
            self.dialogs.append(show_message("Start at login", f"Could not change start at login: {exc}",
                                             str(self.autostart.path)))
            self.bridge.call(self.autostart.enabled, done)

        def done(now_on: bool) -> None:
            self.state.autostart_on = now_on
            self.state_changed.emit()

        def work() -> bool:
            self.autostart.set(on)
            return on

        self.bridge.call(work, done, failed)

    def quit(self) -> None:
        """Stop everything (bounded), then leave the event loop."""
        if self.quitting:
            return
        self.quitting = True
        if self.tray is not None:
            self.tray.hide()
        for w in list(self.windows.values()) + list(self.dialogs):
            try:
                w.hide()
            except RuntimeError:  # already deleted by Qt
                pass
        clickable = self.clickable

        def stop() -> list[str]:  # on a worker: joining the D-Bus thread and the services waits
            if clickable is not None:
                clickable.stop()
            return self.lifecycle.stop()

        self.bridge.call(stop, lambda _: self.exit(), lambda _: self.exit())
        QTimer.singleShot(6000, self.exit)  # stop() is bounded at 5 s; this is the backstop


def _quit_on_signals(shell: Shell) -> QTimer:
    """SIGTERM (logout, ``kill``) and SIGINT quit cleanly, like the menu's Quit.

    Python runs signal handlers only between bytecodes, and Qt's event loop waits in C, so a
    one-second timer lets the interpreter look (a negligible wake-up when idle).
    """
    import signal

    def handler(_signum: int, _frame: object) -> None:
        QTimer.singleShot(0, shell.quit)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(1000)
    return wake


def _quit_qt() -> None:
    qapp = QApplication.instance()
    if qapp is not None:
        qapp.quit()




def run_app(app: AppContext) -> int:
    """Start Qt, claim the single instance, show the tray (or window), start services."""
    problem = display_problem()
    if problem:
        print(f"hearthside: {problem}", file=sys.stderr)
        return 1
    existing = QApplication.instance()
    qapp = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    qapp.setApplicationName("Hearthside")
    qapp.setDesktopFileName("hearthside")
    qapp.setQuitOnLastWindowClosed(False)
    qapp.setWindowIcon(hearth_icon())
    from .single import SingleInstance

    single = SingleInstance(app.paths.config_dir, state_dir=app.paths.state_dir)
    if not single.claim():
        print("hearthside: already running; brought it forward", flush=True)
        return 0
    from .tray import TrayController

    shell = Shell(app)
    tray = TrayController(shell)
    single.show_requested.connect(shell.show_main)
    tray.show()
    shell.start()
    wake = _quit_on_signals(shell)
    qapp._hearthside = (shell, tray, single, wake)  # type: ignore[attr-defined]  # keep alive
    code = int(qapp.exec())
    shell.lifecycle.stop()  # io-ok: the event loop has ended; a no-op after Quit, else stops services
    shell.bridge.close()
    single.close()
    return code
