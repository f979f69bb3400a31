"""Notifications: where a persona's alerts go, and the bounded history of them.

A :class:`Notifier` shows one alert (title = persona, body = text). The log notifier always
works; the desktop notifier speaks ``org.freedesktop.Notifications`` over the D-Bus session bus
with ``jeepney`` when a bus exists (headless mode); the tray shows its own. The history is a
JSON-lines file in the state dir, trimmed to the newest entries, written under a file lock so
the tray, the CLI and headless mode can share it. :class:`DesktopNotices` is the service a
front end without a tray subscribes to: it shows a notice on the desktop and says when one of
its notices is clicked (the UI never reaches the D-Bus adapter itself).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from ..adapters.atomicfile import write_atomic
from ..adapters.locks import LockUnusable, lock_for
from ..adapters.notifications import ClickableNotifications, DesktopNotifier
from ..core.boundedread import read_text_bounded
from ..core.redact import redact
from ..core.safeparse import loads_json
from .alerts import Notice, is_drift_text

__all__ = ["OPEN_CHAT", "REVIEW", "SNOOZE", "DesktopNotices", "DesktopNotifier", "FanoutNotifier", "HistoryEntry",
           "LogNotifier", "NotificationHistory", "Notifier", "default_notifier", "notice_actions"]

log = logging.getLogger(__name__)

HISTORY_MAX_ENTRIES = 500
#: 500 entries of at most a few KiB each; far more is not this file.
MAX_HISTORY_BYTES = 16 * 1024 * 1024


class Notifier(Protocol):
    """Shows an alert to the user; returns True when it was shown."""

    def notify(self, title: str, body: str) -> bool: ...


class LogNotifier:
    """Writes alerts to the log (always available)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or logging.getLogger("hearthside.notifications")

    def notify(self, title: str, body: str) -> bool:
        self.log.warning("notification from %s: %s", title, body)
        return True


class FanoutNotifier:
    """Sends to every notifier; shown when any of them showed it."""

    def __init__(self, notifiers: Sequence[Notifier]) -> None:
        self.notifiers = list(notifiers)

    def notify(self, title: str, body: str) -> bool:
        shown = False
        for n in self.notifiers:
            try:
                shown = n.notify(title, body) or shown
            except Exception as exc:  # noqa: BLE001
                log.warning("notifier %r failed: %s", n, exc)
        return shown


#: ``snoozed``: an alert held back by *Snooze 1 hour* (kept here, not shown).
HistoryStatus = Literal["notified", "duplicate", "failed", "snoozed"]
_HISTORY_STATUSES: frozenset[str] = frozenset(get_args(HistoryStatus))
#: What a history line is about: a check-in alert or a file change (drift).
HistoryKind = Literal["checkin", "drift"]
#: How history files written before lines had a ``kind`` named the user soul.
_OLD_SOUL_NAME = "your soul"


@dataclass(frozen=True)
class HistoryEntry:
    """One line of the notification history. ``status``: notified, duplicate or failed;
    ``kind``: a check-in alert or a file change; ``persona`` is "" for the user soul (shown as
    "your soul", never stored as a name a persona could also have)."""

    persona: str
    time: str
    text: str
    status: HistoryStatus
    kind: HistoryKind = "checkin"

    @property
    def when(self) -> datetime:
        return datetime.fromisoformat(self.time)


class NotificationHistory:
    """The newest ``max_entries`` alerts and failures, oldest first, in a JSON-lines file."""

    def __init__(self, path: Path, max_entries: int = HISTORY_MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._mutex = threading.Lock()

    def _lock(self) -> AbstractContextManager[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return lock_for(str(self.path) + ".lock").held(5)

    def entries(self) -> list[HistoryEntry]:
        # Bounded and non-blocking: a history that is a FIFO or a link to /dev/zero reads as empty.
        text, why = read_text_bounded(self.path, MAX_HISTORY_BYTES)
        if text is None:
            if why:
                log.warning("notification history not read: %s", why)
            return []
        out = []
        for line in text.splitlines():
            try:
                d = loads_json(line)
                status = d["status"]
                if status not in _HISTORY_STATUSES:
                    continue  # not a line Hearthside wrote
                entry = _entry(d, status)
                if entry.when.tzinfo is None:  # a time that does not parse, or has no zone, is damage
                    continue
                out.append(entry)
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line is skipped, the rest stays readable
        return out

    def append(self, persona: str, text: str, status: HistoryStatus, when: datetime | None = None,
               kind: HistoryKind = "checkin") -> HistoryEntry:
        when = when or datetime.now(UTC)
        # The same redaction as the log: a check-in reply may echo a known secret.
        entry = HistoryEntry(persona, when.isoformat(), redact(text), status, kind)
        try:
            with self._mutex, self._lock():
                kept = self.entries()[-(self.max_entries - 1):] if self.max_entries > 1 else []
                kept.append(entry)
                write_atomic(self.path, "".join(json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in kept))
        except LockUnusable as exc:  # the alert itself still goes out; only its record is lost
            log.warning("Notification history not written: %s.", exc)
        return entry

    def notified(self) -> list[tuple[str, str, datetime]]:
        """(persona, text, time) of alerts that were notified, for de-duplication."""
        out = []
        for e in self.entries():
            if e.status == "notified":
                try:
                    out.append((e.persona, e.text, e.when))
                except ValueError:
                    continue
        return out


def _entry(d: dict[str, Any], status: HistoryStatus) -> HistoryEntry:
    """One stored line as an entry. Lines written before entries had a ``kind`` are told apart
    by how a drift line starts, once, here; the soul's old stored name becomes ""."""
    persona, text = str(d["persona"]), str(d["text"])
    stored = d.get("kind")
    kind: HistoryKind
    if stored == "checkin" or stored == "drift":
        kind = stored
    else:
        kind = "drift" if is_drift_text(text) else "checkin"
        if kind == "drift" and persona == _OLD_SOUL_NAME:
            persona = ""
    return HistoryEntry(persona, str(d["time"]), text, status, kind)


def default_notifier() -> Notifier:
    """Log always; the desktop service too when a session bus exists."""
    parts: list[Notifier] = [LogNotifier()]
    if DesktopNotifier.available():
        parts.append(DesktopNotifier())
    return FanoutNotifier(parts)


#: The buttons a notice may carry (action keys sent to the notification server).
OPEN_CHAT = "open-chat"
SNOOZE = "snooze-1h"
REVIEW = "review"


def notice_actions(notice: Notice) -> tuple[tuple[str, str], ...]:
    """The buttons for ``notice`` (besides a click): a check-in alert from one persona offers
    *Open chat* and *Snooze 1 hour*, a drift notice *Review*; a mixed batch only the click."""
    if notice.kind == "checkin" and notice.persona:
        return ((OPEN_CHAT, "Open chat"), (SNOOZE, "Snooze 1 hour"))
    if notice.kind == "drift":
        return ((REVIEW, "Review"),)
    return ()


class DesktopNotices:
    """Desktop notifications that come back when clicked: for a front end without a tray.

    It owns the D-Bus adapter (one connection on its own thread, which the notification spec
    needs to hear clicks) and remembers which :class:`Notice` each notification it showed was,
    so a subscriber is told ``on_click(notice)``, never a D-Bus id, and a click on another
    application's notification reaches nobody. Subscribers are called on the adapter's thread.
    """

    #: How many shown notices are remembered for their clicks (the oldest are forgotten).
    KEEP = 200

    def __init__(self, timeout: float = 5.0) -> None:
        self._adapter = ClickableNotifications(self._clicked, timeout, self._acted)
        self._shown: dict[int, Notice] = {}
        self._listeners: list[Callable[[Notice], None]] = []
        self._actors: list[Callable[[Notice, str], None]] = []
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """Is there a session bus to try (the service itself may still not answer)?"""
        return ClickableNotifications.available()

    def start(self) -> bool:
        """Connect; False when there is no bus (the caller shows notices in its own list)."""
        return self._adapter.start()

    @property
    def supports_actions(self) -> bool:
        """Does the notification server show buttons (the ``actions`` capability)? Known once
        :meth:`start` returned."""
        return "actions" in self._adapter.capabilities

    def subscribe(self, on_click: Callable[[Notice], None],
                  on_action: Callable[[Notice, str], None] | None = None) -> Callable[[], None]:
        """Call ``on_click(notice)`` when a notice this service showed is clicked, and
        ``on_action(notice, key)`` when one of its buttons (:func:`notice_actions`: OPEN_CHAT,
        SNOOZE, REVIEW) is pressed; returns the function that unsubscribes."""
        with self._lock:
            self._listeners.append(on_click)
            if on_action is not None:
                self._actors.append(on_action)

        def unsubscribe() -> None:
            with self._lock:
                if on_click in self._listeners:
                    self._listeners.remove(on_click)
                if on_action in self._actors:
                    self._actors.remove(on_action)

        return unsubscribe

    def show(self, notice: Notice) -> concurrent.futures.Future[int]:
        """Show ``notice`` (with its buttons where the server shows them); the future holds the
        notification's id, or the reason it was not shown (no notification service answered)."""
        fut = self._adapter.notify(notice.title, notice.body, notice_actions(notice))
        fut.add_done_callback(lambda done: self._sent(notice, done))
        return fut

    def shown(self) -> list[Notice]:
        """The notices whose clicks are still recognised, oldest first."""
        with self._lock:
            return list(self._shown.values())

    def stop(self) -> None:
        self._adapter.stop()

    def _sent(self, notice: Notice, fut: concurrent.futures.Future[int]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        with self._lock:
            self._shown[fut.result()] = notice
            while len(self._shown) > self.KEEP:
                self._shown.pop(next(iter(self._shown)))

    def _acted(self, nid: int, key: str) -> None:
        with self._lock:
            notice = self._shown.get(nid)
            actors = list(self._actors)
        if notice is None or key not in {k for k, _ in notice_actions(notice)}:
            return  # another app's notification, or a button this notice never had
        for on_action in actors:
            try:
                on_action(notice, key)
            except Exception:  # a subscriber must not end the listener
                log.exception("notification action subscriber failed")

    def _clicked(self, nid: int) -> None:
        with self._lock:
            notice = self._shown.get(nid)
            listeners = list(self._listeners)
        if notice is None:  # a click on another app's notification is none of ours
            return
        for on_click in listeners:
            try:
                on_click(notice)
            except Exception:  # a subscriber must not end the listener
                log.exception("notification click subscriber failed")


# -- the user's notification preferences (settings.toml [notifications]) -------------------------

#: ``[notifications] enabled = true, quiet_start = "22:00", quiet_end = "07:00"`` (local time;
#: start after end spans midnight).
NOTIFY_ENABLED_KEY = "notifications.enabled"
QUIET_START_KEY = "notifications.quiet_start"
QUIET_END_KEY = "notifications.quiet_end"


@dataclass(frozen=True)
class NotificationPrefs:
    """Whether desktop notifications are on and the quiet hours in which none pop up."""

    enabled: bool = True
    quiet_start: str = ""
    quiet_end: str = ""


def notification_prefs(settings: Any) -> NotificationPrefs:
    """The preferences from settings; a hand-written ``enabled = "no"`` counts as off."""
    raw = settings.get("notifications", {}) or {}
    raw = raw if isinstance(raw, dict) else {}
    enabled = raw.get("enabled", True)
    if isinstance(enabled, str):
        enabled = enabled.strip().lower() not in ("false", "no", "off", "0")
    return NotificationPrefs(bool(enabled), str(raw.get("quiet_start", "") or ""),
                             str(raw.get("quiet_end", "") or ""))


def notifications_allowed(settings: Any, now: datetime | None = None) -> bool:
    """May a desktop notification pop up now? Off, or inside quiet hours, means no (the
    history still records everything). Every notifier (heartbeat, tray) asks this one rule
    (the tray through :func:`prefs_allow` on preferences it read on a worker)."""
    return prefs_allow(notification_prefs(settings), now)


def prefs_allow(prefs: NotificationPrefs, now: datetime | None = None) -> bool:
    """The rule of :func:`notifications_allowed` on preferences already read (reads no file).
    Quiet hours that cannot be read are ignored (notifying wrongly beats losing an alert)."""
    from ..core.heartbeat import within_active_hours

    if not prefs.enabled:
        return False
    if not prefs.quiet_start or not prefs.quiet_end:
        return True
    when = now or datetime.now(UTC)
    try:
        return not within_active_hours(when, prefs.quiet_start, prefs.quiet_end)
    except ValueError:
        log.warning("notifications.quiet_start/quiet_end in settings.toml cannot be read; ignoring them")
        return True


def save_notification_prefs(settings: Any, changes: dict[str, Any], overnight: bool | None = None) -> None:
    """Change some notification preferences (``enabled``, ``quiet_start``, ``quiet_end``) in one
    settings transaction, checked against the values stored at that moment; raises ValueError
    with the reason and saves nothing when the quiet hours are wrong."""
    from ..core.heartbeat import check_hours, parse_hhmm

    def mutate(data: dict[str, Any]) -> None:
        section = data.setdefault("notifications", {})
        merged = {**section, **changes}
        start, end = str(merged.get("quiet_start", "") or ""), str(merged.get("quiet_end", "") or "")
        wrap = overnight
        if wrap is None:
            try:
                wrap = bool(start and end and parse_hhmm(end) < parse_hhmm(start))
            except ValueError:
                wrap = False
        why = check_hours(start, end, wrap, "quiet hours")
        if why:
            raise ValueError(why)
        for key, value in changes.items():
            if value in ("", None):
                section.pop(key, None)
            else:
                section[key] = value

    settings.update(mutate)
