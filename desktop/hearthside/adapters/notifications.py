"""Desktop notifications over D-Bus (``org.freedesktop.Notifications``): the one jeepney client.

Why the body is escaped: the notification spec lets a server render a small markup language in
the body (``<b>``, ``<a href>``, ``<img src>``) when it lists ``body-markup`` among its
capabilities. A check-in reply is model text, so ``<img src="file:///…">`` or a link must show
as the characters it is, never be rendered or followed. When the server has ``body-markup`` the
body is escaped (``&`` ``<`` ``>``), and the length cut never splits an entity; when it has not,
the body is plain text already and is only cut. The summary is plain text by the spec.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

APP_LABEL = "Hearthside"
#: The longest body we send (in characters, after escaping); servers cut far shorter anyway.
BODY_LIMIT = 1000

_BUS_NAME = "org.freedesktop.Notifications"
_OBJECT_PATH = "/org/freedesktop/Notifications"
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_markup(text: str, limit: int = BODY_LIMIT) -> str:
    """``text`` with ``&``, ``<`` and ``>`` escaped, at most ``limit`` characters long, cut only
    between whole characters of the original (never inside ``&amp;``/``&lt;``/``&gt;``)."""
    out: list[str] = []
    used = 0
    for ch in text:
        piece = _ENTITIES.get(ch, ch)
        if used + len(piece) > limit:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out)


def body_for(text: str, capabilities: set[str] | frozenset[str], limit: int = BODY_LIMIT) -> str:
    """The body to send a server with these capabilities: escaped markup, or plain text."""
    if "body-markup" in capabilities:
        return escape_markup(text, limit)
    return text[:limit]


class DesktopNotifier:
    """The freedesktop notification service over the session bus (jeepney, blocking)."""

    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = timeout
        self.last_error = ""

    @staticmethod
    def available() -> bool:
        return bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS"))

    def notify(self, title: str, body: str) -> bool:
        """Show one notification; False (and ``last_error``) when it could not be shown."""
        try:
            from jeepney import DBusAddress, new_method_call  # type: ignore[import-untyped]
            from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]

            addr = DBusAddress(_OBJECT_PATH, bus_name=_BUS_NAME, interface=_BUS_NAME)
            with open_dbus_connection(bus="SESSION") as conn:
                caps_reply = conn.send_and_get_reply(new_method_call(addr, "GetCapabilities"),
                                                     timeout=self.timeout)
                # A server that cannot say what it renders gets escaped text (the safe side).
                caps = {"body-markup"}
                if caps_reply.header.message_type.name != "error" and caps_reply.body:
                    caps = {str(c) for c in caps_reply.body[0]}
                msg = new_method_call(addr, "Notify", "susssasa{sv}i",
                                      (APP_LABEL, 0, "", title, body_for(body, caps), [], {}, -1))
                reply = conn.send_and_get_reply(msg, timeout=self.timeout)
            if reply.header.message_type.name == "error":
                self.last_error = str(reply.body)
                return False
            return True
        except Exception as exc:  # noqa: BLE001 - no service, no bus: the log still has it
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.info("desktop notification not shown: %s", self.last_error)
            return False


# --- with a click: for desktops without a tray ---------------------------------------------
#
# Each notification carries the ``default`` action, so a click comes back as an
# ``ActionInvoked`` signal with its id. Servers may send that signal only to the connection that
# created the notification, so one thread owns one connection for both: it sends queued
# ``Notify`` calls and listens for ``ActionInvoked``.

#: (action key, button label) pairs, sent after ``default`` where the server lists ``actions``.
Actions = tuple[tuple[str, str], ...]


class ClickableNotifications:
    """``notify()`` returns a future with the notification's id; ``on_click(id)`` on a click,
    ``on_action(id, key)`` when one of the notification's own buttons is pressed.

    Buttons are sent only to a server that lists the ``actions`` capability (the spec's word for
    "shows buttons"); others get exactly what they got before, the ``default`` action alone."""

    def __init__(self, on_click: Callable[[int], None], timeout: float = 5.0,
                 on_action: Callable[[int, str], None] | None = None) -> None:
        self.on_click = on_click
        self.on_action = on_action
        self.timeout = timeout
        #: What the server said it can do (read once, at start).
        self.capabilities: frozenset[str] = frozenset()
        self._jobs: queue.Queue[tuple[str, str, Actions, concurrent.futures.Future[int]]] = queue.Queue()
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

    def notify(self, title: str, body: str, actions: Actions = ()) -> concurrent.futures.Future[int]:
        fut: concurrent.futures.Future[int] = concurrent.futures.Future()
        if self.error or self._stop.is_set():
            fut.set_exception(RuntimeError(self.error or "stopped"))
        else:
            self._jobs.put((title, body, actions, fut))
            if self.error:  # the connection was lost while this was being queued
                self._fail_pending(self.error)
        return fut

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _run(self) -> None:
        from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        try:
            conn = open_dbus_connection(bus="SESSION")
        except Exception as exc:  # noqa: BLE001 - no bus: the caller falls back to the in-app list
            self.error = f"{type(exc).__name__}: {exc}"
            self._ready.set()
            return
        addr = DBusAddress(_OBJECT_PATH, bus_name=_BUS_NAME, interface=_BUS_NAME)
        caps = {"body-markup"}  # a server that cannot say what it renders gets escaped text
        rule = MatchRule(type="signal", interface=_BUS_NAME, member="ActionInvoked", path=_OBJECT_PATH)
        with conn, conn.filter(rule, bufsize=64) as clicks:
            conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=self.timeout)
            try:
                got = conn.send_and_get_reply(new_method_call(addr, "GetCapabilities"), timeout=self.timeout)
                if got.header.message_type.name != "error" and got.body:
                    caps = {str(c) for c in got.body[0]}
            except Exception:  # noqa: BLE001 - keep the safe default
                log.info("the notification server did not list its capabilities")
            self.capabilities = frozenset(caps)
            self._ready.set()
            while not self._stop.is_set():
                self._send_pending(conn, addr, new_method_call, caps)
                try:  # returns (and takes off the queue) the next matching message
                    got = [conn.recv_until_filtered(clicks, timeout=0.1)]
                except TimeoutError:
                    got = []
                except OSError as exc:  # the session bus went away (logout, a test's bus ending)
                    self._gone(f"the desktop session's bus closed: {type(exc).__name__}: {exc}")
                    return
                while clicks:  # more that arrived meanwhile
                    got.append(clicks.popleft())
                for msg in got:
                    try:
                        nid, action = msg.body
                    except ValueError:
                        continue
                    try:
                        if action == "default":
                            self.on_click(int(nid))
                        elif self.on_action is not None:
                            self.on_action(int(nid), str(action))
                    except Exception:  # a click handler must not end the listener
                        log.exception("notification click handler failed")

    def _gone(self, why: str) -> None:
        """The connection is lost: say so once, and fail what waits, so no caller waits for a
        notification id that can never come (later notices go to the in-app list)."""
        self.error = why
        log.info("notifications: %s", why)
        self._fail_pending(why)

    def _fail_pending(self, why: str) -> None:
        while True:
            try:
                *_, fut = self._jobs.get_nowait()
            except queue.Empty:
                return
            fut.set_exception(RuntimeError(why))

    def _send_pending(self, conn: object, addr: object, new_method_call: Callable[..., object],
                      caps: set[str]) -> None:
        while True:
            try:
                title, body, actions, fut = self._jobs.get_nowait()
            except queue.Empty:
                return
            buttons = ["default", "Open"]
            if "actions" in caps:
                buttons += [part for key, label in actions for part in (key, label)]
            msg = new_method_call(addr, "Notify", "susssasa{sv}i",
                                  (APP_LABEL, 0, "", title, body_for(body, caps), buttons, {}, -1))
            try:
                reply = conn.send_and_get_reply(msg, timeout=self.timeout)  # type: ignore[attr-defined]
                if reply.header.message_type.name == "error":
                    fut.set_exception(RuntimeError(str(reply.body)))
                else:
                    fut.set_result(int(reply.body[0]))
            except Exception as exc:  # noqa: BLE001 - no service: the in-app list has it
                fut.set_exception(exc)
