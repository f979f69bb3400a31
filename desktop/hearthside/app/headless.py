"""``hearthside --headless``: the app's lifecycle without any window.

For people who run Hearthside as a service. It is a thin loop around
:class:`~hearthside.app.lifecycle.Lifecycle` (the same one the tray runs on): drift changes and
check-in alerts go to the log and, when a D-Bus session bus exists, to the desktop notification
service; every alert is also in the notification history. SIGTERM or SIGINT stops it cleanly
(check-ins cancelled, MCP sessions closed, watchers stopped) with exit code 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import TYPE_CHECKING

from .lifecycle import Lifecycle, LifecycleDeps
from .notify import Notifier, default_notifier

if TYPE_CHECKING:
    from ..core.mcpconfig import ServerStatus
    from .alerts import Notice
    from .drift_types import DriftEvent
    from .heartbeat import HeartbeatOutcome

log = logging.getLogger("hearthside.headless")


class HeadlessEvents:
    """The headless front end's :class:`~hearthside.app.events.AppEvents`: notices go to the
    log and, when a session bus exists, to the desktop notification service; errors to the log.

    Drift events, check-in outcomes and MCP states need no screen here: the notices (and the
    history) already carry what the user must hear, and the services log the rest."""

    def __init__(self, notifier: Notifier | None = None) -> None:
        self.notifier = notifier or default_notifier()

    def on_drift(self, event: DriftEvent) -> None:
        pass

    def on_outcome(self, outcome: HeartbeatOutcome) -> None:
        pass

    def on_mcp_status(self, status: ServerStatus) -> None:
        pass

    def show(self, notice: Notice) -> None:
        self.notifier.notify(notice.title, notice.body)

    def on_error(self, message: str) -> None:
        log.warning("%s", message)


def run_headless(app: LifecycleDeps, stop: threading.Event | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set); returns the process exit code.

    Logging is already set up by the entry point (the CLI's redacting handlers).
    """
    stop = stop or threading.Event()
    # The handler only records the signal: calling stop.set() from it would deadlock when the
    # signal lands while this thread sits in stop.wait() holding the Event's own lock.
    signalled: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: signalled.append(signum))
    life = Lifecycle(app, HeadlessEvents())
    try:
        life.start()
        life.wait_for_mcp()
        print("hearthside: running headless; stop with Ctrl-C or SIGTERM", flush=True)
        while not signalled and not stop.wait(0.5):
            pass
        log.info("headless: stopping")
        return 0
    finally:
        life.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
