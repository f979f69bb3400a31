"""Desktop notifications with a click: ``org.freedesktop.Notifications`` over D-Bus (jeepney).

For desktops without a system tray. Each notification carries the ``default`` action, so a
click on it comes back as an ``ActionInvoked`` signal with its id. Servers may send that signal
only to the connection that created the notification, so one thread owns one connection for
both: it sends queued ``Notify`` calls and listens for ``ActionInvoked``. The body is escaped,
since servers may read it as markup (the spec's ``body-markup``).
"""

from __future__ import annotations

import concurrent.futures
import html
import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

APP_LABEL = "Hearthside"
PATH = "/org/freedesktop/Notifications"
NAME = "org.freedesktop.Notifications"


class ClickableNotifications:
    """``notify()`` returns a future with the notification's id; ``on_click(id)`` on a click."""

    def __init__(self, on_click: Callable[[int], None], timeout: float = 5.0) -> None:
        self.on_click = on_click
        self.timeout = timeout
        self._jobs: queue.Queue[tuple[str, str, concurrent.futures.Future[int]]] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.error = ""

    @staticmethod
    def available() -> bool:
        return bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS"))

    def start(self) -> bool:
        """Open the connection on its own thread; False (with ``error``) when there is no bus."""
        self._thread = threading.Thread(target=self._run, name="hearthside-notifications", daemon=True)
        self._thread.start()
        self._ready.wait(self.timeout)
        return not self.error and self._ready.is_set()

    def notify(self, title: str, body: str) -> concurrent.futures.Future[int]:
        fut: concurrent.futures.Future[int] = concurrent.futures.Future()
        if self.error or self._stop.is_set():
            fut.set_exception(RuntimeError(self.error or "stopped"))
        else:
            self._jobs.put((title, body, fut))
        return fut

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _run(self) -> None:
        from jeepney import DBusAddress, MatchRule, message_bus, new_method_call  # type: ignore[import-untyped]
        from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]

        try:
            conn = open_dbus_connection(bus="SESSION")
        except Exception as exc:  # noqa: BLE001 - no bus: the caller falls back to the in-app list
            self.error = f"{type(exc).__name__}: {exc}"
            self._ready.set()
            return
        addr = DBusAddress(PATH, bus_name=NAME, interface=NAME)
        rule = MatchRule(type="signal", interface=NAME, member="ActionInvoked", path=PATH)
        with conn, conn.filter(rule, bufsize=64) as clicks:
            conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=self.timeout)
            self._ready.set()
            while not self._stop.is_set():
                self._send_pending(conn, addr, new_method_call)
                try:  # returns (and takes off the queue) the next matching message
                    got = [conn.recv_until_filtered(clicks, timeout=0.1)]
                except TimeoutError:
                    got = []
                while clicks:  # more that arrived meanwhile
                    got.append(clicks.popleft())
                for msg in got:
                    try:
                        nid, action = msg.body
                    except ValueError:
                        continue
                    if action == "default":
                        try:
                            self.on_click(int(nid))
                        except Exception:  # a click handler must not end the listener
                            log.exception("notification click handler failed")

    def _send_pending(self, conn: object, addr: object, new_method_call: Callable[..., object]) -> None:
        while True:
            try:
                title, body, fut = self._jobs.get_nowait()
            except queue.Empty:
                return
            msg = new_method_call(addr, "Notify", "susssasa{sv}i",
                                  (APP_LABEL, 0, "", title, html.escape(body[:1000], quote=False),
                                   ["default", "Open"], {}, -1))
            try:
                reply = conn.send_and_get_reply(msg, timeout=self.timeout)  # type: ignore[attr-defined]
                if reply.header.message_type.name == "error":
                    fut.set_exception(RuntimeError(str(reply.body)))
                else:
                    fut.set_result(int(reply.body[0]))
            except Exception as exc:  # noqa: BLE001 - no service: the in-app list has it
                fut.set_exception(exc)
