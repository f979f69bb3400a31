"""The calendars, ready to query: parsed copies kept warm, subscriptions refreshed in the background.

A tool call asks :meth:`CalendarService.snapshot`. Remote calendars whose copy is older than
:data:`REFRESH_AFTER` get a fetch started on a daemon thread (never the Qt thread, never the
event loop), and the call waits for those fetches at most :data:`WAIT_SECONDS` in all; whatever
has not answered by then is served from the cached copy with a note saying how old it is. A
parsed calendar is kept in memory until its file (or cached copy) changes, so a warm query
costs only the expansion of the window asked for.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from hearthside.plugin import PackSecretError, read_bounded

from . import cache, store
from .fetch import MAX_BYTES, FetchError, fetch_caldav, fetch_ics
from .parse import ParsedCalendar, parse_ics
from .sources import SourceError

REFRESH_AFTER = 15 * 60
WAIT_SECONDS = 3.0
CALDAV_PAST_DAYS = 60
CALDAV_FUTURE_DAYS = 400


@dataclass
class CalendarView:
    """One calendar as a query sees it: parsed events (None when unusable) and notes."""

    entry: store.CalendarEntry
    parsed: ParsedCalendar | None
    notes: list[str] = field(default_factory=list)


def age_text(seconds: float) -> str:
    """'5 minutes', '2 hours', '3 days' (rounded down, at least 1 minute)."""
    minutes = int(seconds // 60)
    if minutes < 60:
        n, unit = max(1, minutes), "minute"
    elif minutes < 48 * 60:
        n, unit = minutes // 60, "hour"
    else:
        n, unit = minutes // (24 * 60), "day"
    return f"{n} {unit}{'s' if n != 1 else ''}"


def decode(data: bytes, name: str, notes: list[str]) -> str:
    """UTF-8 text; invalid bytes are replaced (and said), so one bad byte loses no events."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        notes.append(f"{name}: the calendar is not valid UTF-8 (a bad byte at offset {exc.start}); "
                     "unreadable characters are shown as \ufffd")
        text = data.decode("utf-8", "replace")
    return text.removeprefix("\ufeff")


class CalendarService:
    """Owns the parsed copies and the background fetches of every configured calendar."""

    def __init__(self, wait: float = WAIT_SECONDS, refresh_after: float = REFRESH_AFTER) -> None:
        self.wait = wait
        self.refresh_after = refresh_after
        self._lock = threading.Lock()
        self._parsed: dict[str, tuple[object, ParsedCalendar, list[str]]] = {}
        self._inflight: dict[str, threading.Event] = {}

    # -- fetching -----------------------------------------------------------------------------
    def refresh(self, entry: store.CalendarEntry, force: bool = False) -> threading.Event | None:
        """Start a background fetch of a remote calendar when its copy is stale (or ``force``);
        returns the event set when it ends, or None when nothing needed doing."""
        if entry.kind == "file":
            return None
        with self._lock:
            running = self._inflight.get(entry.id)
            if running is not None:
                return running
            meta = cache.load_meta(entry.id)
            fresh = time.time() - max(meta.fetched_at, meta.tried_at) < self.refresh_after
            if fresh and not force and cache.body_stamp(entry.id) is not None:
                return None
            done = threading.Event()
            self._inflight[entry.id] = done
        t = threading.Thread(target=self._fetch, args=(entry, done), name=f"calendar-fetch-{entry.id}", daemon=True)
        t.start()
        return done

    def _fetch(self, entry: store.CalendarEntry, done: threading.Event) -> None:
        meta = cache.load_meta(entry.id)
        try:
            url = store.location_of(entry)
            if entry.kind == "caldav":
                now = time.gmtime(time.time() - CALDAV_PAST_DAYS * 86400)
                later = time.gmtime(time.time() + CALDAV_FUTURE_DAYS * 86400)
                got = fetch_caldav(url, entry.user, store.password_of(entry),
                                   start=time.strftime("%Y%m%dT%H%M%SZ", now),
                                   end=time.strftime("%Y%m%dT%H%M%SZ", later))
            else:
                have = cache.body_stamp(entry.id) is not None
                got = fetch_ics(url, meta.etag if have else "", meta.last_modified if have else "")
            if got.body is not None:
                cache.save_body(entry.id, got.body)
            meta.etag, meta.last_modified = got.etag, got.last_modified
            meta.fetched_at = meta.tried_at = time.time()
            meta.error = ""
        except (FetchError, SourceError, PackSecretError) as exc:
            meta.tried_at, meta.error = time.time(), str(exc)
        except Exception as exc:  # noqa: BLE001 - a background fetch must record, never crash
            meta.tried_at, meta.error = time.time(), f"the calendar could not be fetched ({type(exc).__name__})"
        finally:
            try:
                cache.save_meta(entry.id, meta)
            except OSError:
                pass
            with self._lock:
                self._inflight.pop(entry.id, None)
            done.set()

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self, wait: float | None = None) -> list[CalendarView]:
        """Every configured calendar, fetched (waiting at most ``wait`` seconds) and parsed."""
        entries = store.entries()
        pending = [(e, ev) for e in entries if (ev := self.refresh(e)) is not None]
        deadline = time.monotonic() + (self.wait if wait is None else wait)
        for _e, ev in pending:
            ev.wait(max(0.0, deadline - time.monotonic()))
        still = {e.id for e, ev in pending if not ev.is_set()}
        return [self.view(e, e.id in still) for e in entries]

    def view(self, entry: store.CalendarEntry, slow: bool = False) -> CalendarView:
        if entry.kind == "file":
            return self._file_view(entry)
        return self._remote_view(entry, slow)

    def _file_view(self, entry: store.CalendarEntry) -> CalendarView:
        path = entry.location
        try:
            st = os.stat(path)
            stamp: object = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
        except OSError:
            stamp = None
        if stamp is not None and (kept := self._kept(entry.id, stamp)) is not None:
            return kept
        got = read_bounded(path, MAX_BYTES)
        if got.data is None:
            return CalendarView(entry, None, [f"{entry.name}: {got.reason}"])
        if got.over_cap:
            return CalendarView(entry, None, [(f"{entry.name}: {path} is larger than {MAX_BYTES // (1024 * 1024)} MB, "
                                              "too large for a calendar; it was not read")])
        return self._parse(entry, got.data, stamp)

    def _remote_view(self, entry: store.CalendarEntry, slow: bool) -> CalendarView:
        meta = cache.load_meta(entry.id)
        stamp = cache.body_stamp(entry.id)
        view: CalendarView | None = None
        if stamp is not None:
            view = self._kept(entry.id, stamp)
            if view is None:
                body = cache.load_body(entry.id)
                if body is not None:
                    view = self._parse(entry, body, stamp)
        if view is None:
            if slow:
                why = f"not fetched yet; the calendar did not answer within {self.wait:.0f} s"
            else:
                why = meta.error or "not fetched yet"
            return CalendarView(entry, None, [f"{entry.name}: {why}"])
        age = age_text(meta.age())
        if slow:
            view.notes.append(f"{entry.name}: from a copy {age} old; the calendar did not answer")
        elif meta.error:
            view.notes.append(f"{entry.name}: from a copy {age} old; the last update failed: {meta.error}")
        return view

    def _kept(self, cal_id: str, stamp: object) -> CalendarView | None:
        with self._lock:
            held = self._parsed.get(cal_id)
        if held is None or held[0] != stamp:
            return None
        entry = next((e for e in store.entries() if e.id == cal_id), None)
        if entry is None:
            return None
        return CalendarView(entry, held[1], list(held[2]))

    def _parse(self, entry: store.CalendarEntry, data: bytes, stamp: object) -> CalendarView:
        notes: list[str] = []
        text = decode(data, entry.name, notes)
        try:
            parsed = parse_ics(text, entry.name)
        except ValueError as exc:
            return CalendarView(entry, None, [f"{entry.name}: {exc}"])
        notes.extend(f"{entry.name}: {d}" for d in parsed.diagnostics[:5])
        if len(parsed.diagnostics) > 5:
            notes.append(f"{entry.name}: {len(parsed.diagnostics) - 5} more events could not be read")
        parsed.diagnostics.clear()
        if stamp is not None:
            with self._lock:
                self._parsed[entry.id] = (stamp, parsed, notes)
        return CalendarView(entry, parsed, list(notes))

    def forget(self, cal_id: str) -> None:
        with self._lock:
            self._parsed.pop(cal_id, None)
        cache.forget(cal_id)


_service: CalendarService | None = None
_service_lock = threading.Lock()


def shared() -> CalendarService:
    """The one service of this process (the tools, the commands and the form share it)."""
    global _service
    with _service_lock:
        if _service is None:
            _service = CalendarService()
        return _service
