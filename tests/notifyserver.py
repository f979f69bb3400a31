"""A real ``org.freedesktop.Notifications`` service on the test D-Bus session bus (jeepney).

It records every ``Notify`` call so tests can check what reached the desktop, and answers
``GetCapabilities`` with the capabilities it was given (``None``: it does not implement the
method, like a broken server). Only usable
inside the private D-Bus session that ``scripts/run-tests.sh`` starts.
"""

from __future__ import annotations

import threading
from typing import Any, Self

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection


class NotificationServer:
    def __init__(self, capabilities: tuple[str, ...] | None = ("body", "body-markup")) -> None:
        self.capabilities = capabilities
        self.received: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.error = ""
        self._signals: list[tuple[int, str]] = []
        self.actions: list[list[str]] = []

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10) or self.error:
            raise RuntimeError(f"notification server did not start: {self.error}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def click(self, nid: int, action: str = "default") -> None:
        """The user clicks notification ``nid`` (ids count from 1): ActionInvoked is emitted."""
        self._signals.append((nid, action))

    def _serve(self) -> None:
        try:
            conn = open_dbus_connection(bus="SESSION")
        except Exception as exc:  # noqa: BLE001
            self.error = str(exc)
            self._ready.set()
            return
        with conn:
            reply = conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.Notifications", 4))
            if reply.body[0] != 1:
                self.error = f"could not own the name (reply {reply.body})"
                self._ready.set()
                return
            self._ready.set()
            while not self._stop.is_set():
                while self._signals:
                    nid, action = self._signals.pop(0)
                    addr = DBusAddress("/org/freedesktop/Notifications",
                                       interface="org.freedesktop.Notifications")
                    conn.send(new_signal(addr, "ActionInvoked", "us", (nid, action)))
                try:
                    msg = conn.receive(timeout=0.1)
                except TimeoutError:
                    continue
                if msg.header.message_type != MessageType.method_call:
                    continue
                member = msg.header.fields.get(HeaderFields.member)
                if member == "Notify":
                    app, _id, _icon, summary, body, actions, *_ = msg.body
                    self.received.append({"app": app, "summary": summary, "body": body})
                    self.actions.append(list(actions))
                    conn.send(new_method_return(msg, "u", (len(self.received),)))
                elif member == "GetCapabilities" and self.capabilities is not None:
                    conn.send(new_method_return(msg, "as", (list(self.capabilities),)))
                else:
                    conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),)))
