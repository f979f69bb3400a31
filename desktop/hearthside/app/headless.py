"""``hearthside --headless``: watchers, heartbeats and notifications without any window.

For people who run Hearthside as a service. Alerts go to the log and, when a D-Bus session bus
exists, to the desktop notification service; every alert is also in the notification history.
SIGTERM or SIGINT stops it cleanly (schedules cancelled, MCP sessions closed, watchers
stopped) with exit code 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

log = logging.getLogger("hearthside.headless")


def run_headless(app: Any, stop: threading.Event | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set); returns the process exit code.

    Logging is already set up by the entry point (the CLI's redacting handlers); setting it up
    again here would reopen the log file and, on failure, fall back to unredacted handlers.
    """
    stop = stop or threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: stop.set())
    hb = app.heartbeat
    unsubscribe = None
    try:
        try:
            app.plugins.load()
        except Exception as exc:  # noqa: BLE001
            log.warning("plugin packs not loaded: %s", exc)
        try:
            app.drift.start()

            def on_drift(ev: Any) -> None:
                if ev.state in ("drifted", "new", "rejected"):
                    text = f"{ev.file} changed: {ev.summary}" if ev.summary else f"{ev.file} is {ev.state}"
                    hb.notifier.notify(ev.persona or "Hearthside", text)

            unsubscribe = app.drift.subscribe(on_drift)
        except Exception as exc:  # noqa: BLE001
            log.warning("file watching unavailable: %s", exc)
        try:
            if app.mcp.servers():
                app.runtime.run(app.mcp.connect_all(), timeout=120)
        except Exception as exc:  # noqa: BLE001
            log.warning("MCP servers unavailable: %s", exc)
        names = app.runtime.run(hb.start(), timeout=30)
        log.info("headless: heartbeats scheduled for %s", ", ".join(names) or "no personas")
        print("hearthside: running headless; stop with Ctrl-C or SIGTERM", flush=True)
        while not stop.wait(0.5):
            pass
        log.info("headless: stopping")
        return 0
    finally:
        try:
            app.runtime.run(hb.stop(), timeout=15)
        except Exception as exc:  # noqa: BLE001
            log.warning("stopping heartbeats: %s", exc)
        if unsubscribe is not None:
            unsubscribe()
        try:
            app.drift.stop()
        except Exception as exc:  # noqa: BLE001
            log.warning("stopping the watchers: %s", exc)
        try:
            app.runtime.run(app.mcp.close(), timeout=15)
        except Exception as exc:  # noqa: BLE001
            log.warning("closing MCP sessions: %s", exc)
        app.runtime.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
