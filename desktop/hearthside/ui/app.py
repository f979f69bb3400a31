"""The running app: QApplication, single instance, the lifecycle, the tray and every window.

:class:`Shell` is the window manager and the one place UI intents go (check in now, pause,
open a folder, quit). It is also the tray's :class:`~hearthside.app.events.AppEvents`: the
lifecycle calls it on service threads and each call only emits the bridge's signal, which
the Qt thread handles. It keeps a copy of the service state the tray shows (persona rows,
files waiting for review, errors) that is refreshed on a worker thread through the
:class:`~hearthside.ui.bridge.Bridge`, so the menu is built from memory and the Qt thread never
touches files, the keyring or the network.

The review, chat and welcome windows are built elsewhere and imported lazily; while one is not
there, its menu entry shows what exists today instead of failing.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QInputDialog, QSystemTrayIcon, QWidget

from ..app.alerts import Notice
from ..app.autostart import Autostart
from ..app.context import AppContext
from ..app.lifecycle import Lifecycle, PersonaRow, settings_problem
from ..app.notify import DesktopNotices, notifications_allowed
from .bridge import Bridge
from .dialogs import show_message
from .icon import ERROR, NORMAL, PAUSED, REVIEW, hearth_icon

if TYPE_CHECKING:
    import concurrent.futures

    from ..app.drift_types import DriftEvent
    from ..app.heartbeat import HeartbeatOutcome
    from ..core.mcpconfig import ServerStatus
    from .windows.chat import ChatWindow
    from .windows.review import ReviewWindow
    from .windows.welcome import WelcomeWindow

log = logging.getLogger("hearthside.ui")

Opener = Callable[[Path], bool]

#: Windows built by other modules: (module under ui/windows, class name, what exists meanwhile).
LAZY_WINDOWS: dict[str, tuple[str, str, str]] = {
    "review": ("review", "ReviewWindow",
               ("The review window is not available in this version yet. Meanwhile "
                "'hearthside soul status' lists the files waiting, 'hearthside soul diff FILE' shows "
                "what changed and 'hearthside soul approve FILE' approves it.")),
    "chat": ("chat", "ChatWindow",
             ("The chat window is not available in this version yet. Meanwhile "
              "'hearthside chat PERSONA' chats in a terminal.")),
    "welcome": ("welcome", "WelcomeWindow",
                "The welcome window is not available in this version yet."),
}


def open_with_desktop(path: Path) -> bool:
    """Ask the desktop to open ``path``; False when it could not (no handler, no launcher)."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


@overload
def window_class(key: Literal["review"]) -> type[ReviewWindow] | None: ...
@overload
def window_class(key: Literal["chat"]) -> type[ChatWindow] | None: ...
@overload
def window_class(key: Literal["welcome"]) -> type[WelcomeWindow] | None: ...
def window_class(key: str) -> type[QWidget] | None:
    """The class of a lazily built window, or None while its module does not exist."""
    module, name, _ = LAZY_WINDOWS[key]
    full = f"hearthside.ui.windows.{module}"
    try:
        mod = importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name == full:
            return None
        raise
    cls: type[QWidget] | None = getattr(mod, name, None)
    return cls


class Shell(QObject):
    """Holds the app's UI state and opens windows; the tray and the main window call it."""

    state_changed = Signal()
    _dbus_failed = Signal(str)  # why a desktop notification was not shown
    _dbus_clicked = Signal(Notice)

    def __init__(self, app: AppContext, bridge: Bridge | None = None, lifecycle: Lifecycle | None = None,
                 opener: Opener = open_with_desktop, autostart: Autostart | None = None) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge or Bridge(lambda: app.runtime)
        self.lifecycle = lifecycle or Lifecycle(app, self)
        self.opener = opener
        self.autostart = autostart or Autostart()
        self.autostart_on = False
        self.rows: list[PersonaRow] = []
        self.rows_loaded = False
        self.errors: dict[str, str] = {}
        self.notices: list[Notice] = []  # this session, newest last (the in-app list's top)
        self.unread = 0
        self.delivery = ""  # how the last notice was shown: tray, dbus, in-app
        self.started = False
        self.quitting = False
        self.windows: dict[object, QWidget] = {}
        self.dialogs: list[QWidget] = []
        self.tray: Any = None  # TrayController, set when it is built
        self.clickable: DesktopNotices | None = None  # D-Bus notices, when no tray
        self._dbus_failed.connect(self._on_dbus_failed)
        self._dbus_clicked.connect(self._on_dbus_clicked)  # a method, so Qt queues it to this thread
        self.exit: Callable[[], None] = _quit_qt  # leaves the event loop (tests replace it)
        b = self.bridge
        b.notification.connect(self.on_notice)
        b.drift_event.connect(self._on_drift)
        b.heartbeat_outcome.connect(self._on_outcome)
        b.mcp_status.connect(self._on_mcp)
        b.service_error.connect(self.on_service_error)
        b.packs_changed.connect(self.refresh)

    # --- start and state ---------------------------------------------------------------
    def start(self) -> None:
        """Start the services on a worker thread; the tray is already visible meanwhile."""
        def begin() -> tuple[str, list[str], bool]:
            if (self.tray is None or self.tray.tray is None) and DesktopNotices.available():
                clickable = DesktopNotices()
                clickable.subscribe(self._dbus_clicked.emit)
                self.clickable = clickable if clickable.start() else None
            told = settings_problem(self.app.settings)
            problems = self.lifecycle.start()
            return told, problems, self.autostart.enabled()

        self.bridge.call(begin, self._started, lambda exc: self.on_service_error(f"starting failed: {exc}"))

    def _started(self, result: tuple[str, list[str], bool]) -> None:
        told, problems, autostart_on = result
        self.started = True
        log.info("tray ready: services started%s", f" ({len(problems)} problem(s))" if problems else "")
        self.autostart_on = autostart_on
        if told:
            self.dialogs.append(show_message("Settings cannot be used", told, str(self.app.paths.settings_file)))
        self.refresh(first=True)

    def refresh(self, first: bool = False) -> None:
        """Re-read persona rows on a worker; the tray updates when they arrive."""
        def done(rows: list[PersonaRow]) -> None:
            self.rows = rows
            self.rows_loaded = True
            self.state_changed.emit()
            if first and os.environ.get("HEARTHSIDE_REPORT_READY"):  # benchmarks time the start
                print(f"hearthside: ready with {len(rows)} persona(s)", flush=True)
            if first and not rows and window_class("welcome") is not None:
                self.show_welcome()

        self.bridge.call(self.lifecycle.snapshot, done)

    def waiting(self) -> dict[str, tuple[str, str, str]]:
        return self.lifecycle.drift_alerts.waiting()

    def icon_state(self) -> tuple[str, int]:
        """(state, count) for the icon: error, review (with the number of files), paused, normal."""
        count = len(self.waiting())
        if self.errors:
            return ERROR, count
        if count:
            return REVIEW, count
        if self.rows and all(r.paused for r in self.rows if r.exists):
            return PAUSED, 0
        return NORMAL, 0

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
        key = f"check-in {out.persona}"
        if out.status == "failed":
            self.errors[key] = f"the check-in of {out.persona} failed: {out.reason}"
        elif out.status in ("silent", "notified"):
            self.errors.pop(key, None)
        self.refresh()

    def _on_mcp(self, status: ServerStatus) -> None:
        key = f"mcp {status.name}"
        if status.state == "failed" and not self.quitting:
            self.errors[key] = f"MCP server {status.name}: {status.reason}"
        else:
            self.errors.pop(key, None)
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
        self.notices.append(notice)
        del self.notices[:-200]
        self.unread += 1
        tray = self.tray.tray if self.tray is not None else None
        if not notifications_allowed(self.app.settings):  # off, or quiet hours: the list only
            self.delivery = "in-app"
        elif tray is not None and tray.isVisible() and QSystemTrayIcon.supportsMessages():
            self.tray.show_message(notice)
            self.delivery = "tray"
        elif self.clickable is not None:
            self.delivery = "dbus"
            self.clickable.show(notice).add_done_callback(self._after_dbus)
        else:
            self.delivery = "in-app"
        self.state_changed.emit()

    def _on_dbus_clicked(self, notice: Notice) -> None:
        self.open_notice(notice)  # the service tells only of clicks on notices it showed

    def _after_dbus(self, fut: concurrent.futures.Future[int]) -> None:
        """Runs on the notification thread (or here, when it failed at once): report failure."""
        exc = None if fut.cancelled() else fut.exception()
        if fut.cancelled() or exc is not None:
            self._dbus_failed.emit(str(exc) if exc is not None else "cancelled")

    def _on_dbus_failed(self, why: str) -> None:
        # no notification service answered: the in-app list (the window says so)
        log.info("desktop notification not shown: %s", why)
        self.delivery = "in-app"
        self.state_changed.emit()

    def open_notice(self, notice: Notice | None) -> None:
        """A click on a notice: the chat with that alert, the review of that file, or the list."""
        if notice is None:
            self.show_notifications()
            return
        alerts = notice.alerts
        if len(alerts) == 1 and alerts[0].kind == "checkin":
            self.show_chat(alerts[0].persona, alerts[0].text)
        elif alerts and all(a.kind == "drift" for a in alerts):
            first = alerts[0]
            self.show_review(first.persona if len({a.persona for a in alerts}) == 1 else None,
                             first.path if len(alerts) == 1 else None)
        else:
            self.show_notifications()

    # --- windows -------------------------------------------------------------------------
    def _raise(self, w: QWidget) -> QWidget:
        w.show()
        w.raise_()
        w.activateWindow()
        return w

    def _not_yet(self, key: str) -> QWidget:
        dlg = show_message("Not available yet", LAZY_WINDOWS[key][2])
        self.dialogs.append(dlg)
        return dlg

    def show_review(self, persona: str | None = None, path: str | None = None) -> QWidget:
        cls = window_class("review")
        if cls is None:
            return self._not_yet("review")
        w = self.windows.get("review")
        if not isinstance(w, cls) or getattr(w, "persona", persona) != persona:
            w = cls(self.app, self.bridge, persona=persona)
            self.windows["review"] = w
        if path:
            w.focus_file(path)
        return self._raise(w)

    def show_chat(self, persona: str, alert: str | None = None) -> QWidget:
        cls = window_class("chat")
        if cls is None:
            return self._not_yet("chat")
        key = ("chat", persona)
        w = self.windows.get(key)
        if w is None or alert:
            w = cls(self.app, self.bridge, persona, alert=alert)
            self.windows[key] = w
        return self._raise(w)

    def show_welcome(self) -> QWidget:
        cls = window_class("welcome")
        if cls is None:
            return self.new_persona_simple()
        w = self.windows.get("welcome")
        if w is None:
            w = cls(self.app, self.bridge)
            finished = getattr(w, "finished", None)
            if finished is not None:
                finished.connect(lambda *_: self.refresh())
            self.windows["welcome"] = w
        return self._raise(w)

    def new_persona_simple(self) -> QWidget:
        """Without the welcome window: ask for a name and create the persona from the templates."""
        dlg = QInputDialog()
        dlg.setWindowTitle("New persona")
        dlg.setLabelText("Name of the new persona (letters, digits, - and _):")
        dlg.setWindowIcon(hearth_icon())
        dlg.textValueSelected.connect(self.create_persona)
        self.dialogs.append(dlg)
        return self._raise(dlg)

    def create_persona(self, name: str) -> None:
        name = name.strip()
        if not name:
            return

        def failed(exc: BaseException) -> None:
            self.dialogs.append(show_message("Persona not created", str(exc)))

        def done(path: Path) -> None:
            self.dialogs.append(show_message(
                "Persona created", f"{name} is ready. Its files are in this folder; edit them by hand.", str(path)))
            self.refresh()

        self.bridge.call(lambda: self.app.personas.create(name), done, failed)

    def _own(self, key: str, factory: Callable[[], QWidget]) -> QWidget:
        w = self.windows.get(key)
        if w is None:
            w = factory()
            self.windows[key] = w
        return self._raise(w)

    def show_notifications(self) -> QWidget:
        from .windows.notifications import NotificationsWindow

        self.unread = 0
        self.state_changed.emit()
        w = self._own("notifications", lambda: NotificationsWindow(self))
        if isinstance(w, NotificationsWindow):
            w.reload()
        return w

    def show_about(self) -> QWidget:
        from .windows.about import AboutWindow

        self.clear_errors()
        w = self._own("about", lambda: AboutWindow(self))
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

        return self._managed("settings", lambda: SettingsWindow(self.app, self.bridge))

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
        self.dialogs.append(show_message(
            "Could not open", f"The desktop could not open this {what}. Open it yourself; the path is below.",
            str(p)))
        return False

    def check_in_now(self, persona: str) -> None:
        def done(out: HeartbeatOutcome) -> None:
            if out.status == "failed":
                self.dialogs.append(show_message(
                    f"Check-in of {persona} failed", f"{out.reason}\n\nCheck the model settings "
                    "('hearthside model show') and try again."))
            elif out.status == "skipped":
                self.dialogs.append(show_message(f"Check-in of {persona} skipped", out.reason))
            elif out.status == "silent":
                self.dialogs.append(show_message(f"{persona} checked in", "Nothing needs your attention."))

        self.bridge.call(lambda: self.lifecycle.check_in_now(persona).result(), done)

    def set_paused(self, persona: str, paused: bool) -> None:
        self.bridge.call(lambda: self.lifecycle.set_paused(persona, paused), lambda _: self.refresh())

    def set_autostart(self, on: bool) -> None:
        def failed(exc: BaseException) -> None:
            self.autostart_on = self.autostart.enabled()
            self.state_changed.emit()
            self.dialogs.append(show_message("Start at login", f"Could not change start at login: {exc}",
                                             str(self.autostart.path)))

        def done(_: object) -> None:
            self.autostart_on = on
            self.state_changed.emit()

        self.bridge.call(lambda: self.autostart.set(on), done, failed)

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
        if self.clickable is not None:
            self.clickable.stop()
        self.bridge.call(self.lifecycle.stop, lambda _: self.exit(), lambda _: self.exit())
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


def status_line(r: PersonaRow) -> str:
    """A persona's status row: folder missing, or check-ins (paused / next) and drift."""
    if not r.exists:
        return "folder missing"
    if r.paused:
        hb = "check-ins paused"
    elif r.interval_minutes <= 0:
        hb = "check-ins off"
    elif r.next_run is not None:
        hb = f"next check-in {r.next_run.astimezone().strftime('%H:%M')}"
    else:
        hb = f"check-in every {r.interval_minutes:g} min"
    if r.last_status == "failed":
        hb += " (last one failed)"
    drift = f"{r.waiting} change(s) to review" if r.waiting else "no changes waiting"
    return f"{hb} · {drift}"


def display_problem() -> str:
    """A sentence when Qt has no screen to use (it would abort the process), else ""."""
    if sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return (
                "There is no graphical display here (DISPLAY and WAYLAND_DISPLAY are unset). "
                "Run 'hearthside --headless' to keep watching and checking in without a window."
            )
    return ""


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
    shell.lifecycle.stop()  # a no-op after Quit; stops services after a signal ended the loop
    shell.bridge.close()
    single.close()
    return code
