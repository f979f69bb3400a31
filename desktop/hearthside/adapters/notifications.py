"""Desktop notifications over D-Bus (``org.freedesktop.Notifications``): the one jeepney client.

Why the body is escaped: the notification spec lets a server render a small markup language in
the body (``<b>``, ``<a href>``, ``<img src>``) when it lists ``body-markup`` among its
capabilities. A check-in reply is model text, so ``<img src="file:///…">`` or a link must show
as the characters it is, never be rendered or followed. When the server has ``body-markup`` the
body is escaped (``&`` ``<`` ``>``), and the length cut never splits an entity; when it has not,
the body is plain text already and is only cut. The summary is plain text by the spec.
"""

from __future__ import annotations

import logging
import os

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
