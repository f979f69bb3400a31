"""Turning ICS text into something a query can expand quickly and correctly.

Parsing a whole calendar with ``icalendar`` costs about a quarter of a millisecond per event
(over a second for a 5,000-event export), and nearly all events of a real calendar are single
ones that need no recurrence engine. So the text is split into its components here: each
single event is read by a small content-line reader (its start, end, title, place, status),
and only the recurring series (a ``RRULE``/``RDATE``, or instances moved by ``RECURRENCE-ID``)
and the ``VTIMEZONE`` definitions go through ``icalendar`` and ``recurring-ical-events``, which
handle EXDATE, moved and cancelled instances, and DST the way RFC 5545 says.

A broken event (an unknown ``TZID``, a ``DTSTART`` that is not a date) is skipped with one
sentence in :attr:`ParsedCalendar.diagnostics`; the rest of the calendar still works.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import icalendar
import recurring_ical_events  # type: ignore[import-untyped]

#: Instances one series may contribute to one query: an RRULE that repeats every second
#: generates millions, and a calendar answer never needs more than this from one series.
MAX_INSTANCES_PER_SERIES = 500
#: Diagnostics kept per calendar (the model and the window see the first few).
MAX_DIAGNOSTICS = 20
_TEXT_CAP = 300

_DATE_RX = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_DT_RX = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$")
_DUR_RX = re.compile(r"^([+-])?P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_DENSE_RX = re.compile(r"FREQ=(SECONDLY|MINUTELY|HOURLY)", re.IGNORECASE)
_SERIES_PROPS = ("RRULE", "RDATE", "RECURRENCE-ID", "EXRULE")


@dataclass(frozen=True, slots=True)
class Instance:
    """One occurrence to show: start/end in the display zone (dates for all-day events)."""

    start: dt.datetime | dt.date
    end: dt.datetime | dt.date
    title: str
    location: str
    description: str = ""

    @property
    def all_day(self) -> bool:
        return not isinstance(self.start, dt.datetime)

    def start_in(self, tz: dt.tzinfo) -> dt.datetime:
        """The start as an aware datetime (an all-day event starts at midnight in ``tz``)."""
        return _aware(self.start, tz)

    def end_in(self, tz: dt.tzinfo) -> dt.datetime:
        return _aware(self.end, tz)


def _aware(v: dt.datetime | dt.date, tz: dt.tzinfo) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=tz) if v.tzinfo is None else v.astimezone(tz)
    return dt.datetime(v.year, v.month, v.day, tzinfo=tz)


class _Bad(ValueError):
    """An event that cannot be read; the message is the reason."""


@dataclass(slots=True)
class _Single:
    start: dt.datetime | dt.date
    end: dt.datetime | dt.date
    title: str
    location: str
    description: str


@dataclass
class ParsedCalendar:
    """A calendar ready to query. Build with :func:`parse_ics`."""

    singles_utc: list[tuple[float, float, _Single]] = field(default_factory=list)  # sorted by start
    singles_local: list[_Single] = field(default_factory=list)  # floating times and all-day dates
    series: list[Any] = field(default_factory=list)  # recurring_ical_events series objects
    diagnostics: list[str] = field(default_factory=list)
    dense: set[str] = field(default_factory=set)  # UIDs of series repeating hourly or faster
    events: int = 0
    _starts: list[float] = field(default_factory=list)
    _longest: float = 0.0

    def note(self, sentence: str) -> None:
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(sentence)

    def finish(self) -> None:
        self.singles_utc.sort(key=lambda t: t[0])
        self._starts = [t[0] for t in self.singles_utc]
        self._longest = max((t[1] - t[0] for t in self.singles_utc), default=0.0)

    def between(self, start: dt.datetime, end: dt.datetime, tz: dt.tzinfo) -> Iterator[Instance]:
        """Every instance overlapping ``[start, end)`` (aware, best in UTC), not in order; floating
        times and all-day dates are read in ``tz``. Each series yields at most
        :data:`MAX_INSTANCES_PER_SERIES`; a series that fails here is skipped with a note."""
        a, b = start.timestamp(), end.timestamp()
        lo = bisect.bisect_left(self._starts, a - self._longest)
        hi = bisect.bisect_left(self._starts, b)
        for s0, e0, ev in self.singles_utc[lo:hi]:
            if e0 > a or (s0 == e0 and s0 >= a):
                yield Instance(ev.start, ev.end, ev.title, ev.location, ev.description)
        for ev in self.singles_local:
            s, e = _aware(ev.start, tz), _aware(ev.end, tz)
            if s < end and (e > start or (s == e and s >= start)):
                yield Instance(ev.start, ev.end, ev.title, ev.location, ev.description)
        # recurring-ical-events reads floating times in the span's zone, so the span is given in
        # the viewer's zone (the callers compare the results in UTC, where a DST fold is no issue)
        s_local, e_local = start.astimezone(tz), end.astimezone(tz)
        for series in list(self.series):
            try:
                for occ in islice(self._occurrences(series, s_local, e_local), MAX_INSTANCES_PER_SERIES):
                    comp = occ.as_component(False)
                    if str(comp.get("STATUS", "")).upper() == "CANCELLED":
                        continue
                    yield Instance(occ.start, occ.end, _text(comp.get("SUMMARY")),
                                   _text(comp.get("LOCATION")), _text(comp.get("DESCRIPTION"))[:_TEXT_CAP])
            except Exception as exc:  # noqa: BLE001 - one bad series must not hide the others
                self.series.remove(series)
                self.note(f"a recurring event ({_series_uid(series)}) was skipped: {_why(exc)}")


    def _occurrences(self, series: Any, start: dt.datetime, end: dt.datetime) -> Iterator[Any]:
        """A series' occurrences in the span. recurring-ical-events (through dateutil) lists a
        span's instances eagerly, so a rule repeating every second, minute or hour is asked
        for growing pieces of the span, from an hour on, and stops at the instance cap."""
        if str(getattr(series, "uid", "")) not in self.dense:
            yield from series.between(start, end)
            return
        step, at, n = dt.timedelta(hours=1), start, 0
        while at < end and n < MAX_INSTANCES_PER_SERIES:
            stop = min(end, at + step)
            for occ in series.between(at, stop):
                # an instance across a piece's border was already given by the piece before
                if at == start or _aware(occ.start, start.tzinfo or dt.UTC).timestamp() >= at.timestamp():
                    n += 1
                    yield occ
            at, step = stop, step * 2


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        v = v[0] if v else ""
    return " ".join(str(v).split())


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:160]
    return text or type(exc).__name__


def _series_uid(series: Any) -> str:
    return str(getattr(series, "uid", "") or "no UID")[:80]


# --- a small content-line reader for single events ---------------------------------------------
def unfold(text: str) -> list[str]:
    """RFC 5545 §3.1: a line starting with a space or tab continues the one before."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("\n ", "").replace("\n\t", "").split("\n")


def content_line(line: str) -> tuple[str, dict[str, str], str]:
    """``NAME;PARAM=V:value`` → (NAME, {PARAM: V}, value). Quoted parameter values may hold ``:``."""
    if '"' not in line:
        head, sep, value = line.partition(":")
        if not sep:
            raise _Bad(f"the line {line[:40]!r} has no ':'")
        name, *params = head.split(";")
        out = {}
        for p in params:
            k, _, v = p.partition("=")
            out[k.upper()] = v
        return name.upper(), out, value
    from icalendar.parser import Contentline

    cname, cparams, cvalue = Contentline(line).parts()  # type: ignore[no-untyped-call]
    return str(cname).upper(), {str(k).upper(): str(v) for k, v in cparams.items()}, str(cvalue)


def unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return (value.replace("\\N", "\n").replace("\\n", "\n").replace("\\,", ",")
            .replace("\\;", ";").replace("\\\\", "\\"))


class Zones:
    """TZID → tzinfo: the IANA database, Windows names (Outlook), or the file's own VTIMEZONE."""

    def __init__(self, vtimezones: dict[str, Any]) -> None:
        self._defs = vtimezones
        self._cache: dict[str, dt.tzinfo | None] = {}

    def get(self, tzid: str) -> dt.tzinfo | None:
        tzid = tzid.strip('"')
        if tzid in self._cache:
            return self._cache[tzid]
        tz: dt.tzinfo | None = None
        try:
            tz = zoneinfo.ZoneInfo(tzid)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            tz = None
        if tz is None and tzid in self._defs:
            try:
                tz = self._defs[tzid].to_tz()
            except Exception:  # noqa: BLE001 - a broken VTIMEZONE is an unknown zone
                tz = None
        if tz is None:
            try:
                tz = icalendar.timezone.tzp.timezone(tzid)
            except Exception:  # noqa: BLE001
                tz = None
        self._cache[tzid] = tz
        return tz


def parse_time(value: str, params: dict[str, str], zones: Zones, what: str) -> dt.datetime | dt.date:
    """A DTSTART/DTEND value: a date, a UTC time, a time in a TZID, or a floating time."""
    value = value.strip()
    m = _DATE_RX.match(value)
    if m and params.get("VALUE", "DATE").upper() == "DATE":
        try:
            return dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            raise _Bad(f"its {what} {value!r} is not a date") from None
    m = _DT_RX.match(value)
    if not m:
        raise _Bad(f"its {what} {value[:40]!r} is not a date or time")
    try:
        naive = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), min(int(m[6]), 59))
    except ValueError:
        raise _Bad(f"its {what} {value!r} is not a date or time") from None
    if m[7]:
        return naive.replace(tzinfo=dt.UTC)
    tzid = params.get("TZID")
    if tzid:
        tz = zones.get(tzid)
        if tz is None:
            raise _Bad(f"its time zone {tzid[:60]!r} is unknown")
        return naive.replace(tzinfo=tz)
    return naive


def parse_duration(value: str) -> dt.timedelta:
    m = _DUR_RX.match(value.strip().upper())
    if not m or value.strip().upper() in ("P", "PT"):
        raise _Bad(f"its DURATION {value[:40]!r} is not a duration")
    sign = -1 if m[1] == "-" else 1
    w, d, h, mi, s = (int(x or 0) for x in m.groups()[1:])
    return sign * dt.timedelta(weeks=w, days=d, hours=h, minutes=mi, seconds=s)


def _single(block: list[str], zones: Zones) -> _Single | None:
    """A non-recurring VEVENT, or None when it is cancelled."""
    props: dict[str, tuple[dict[str, str], str]] = {}
    for line in block:
        # only the properties read below; the first letter is a cheap filter before parsing
        if line[:1] not in _WANTED_FIRST or _prop_name(line) not in _WANTED:
            continue
        name, params, value = content_line(line)
        props.setdefault(name, (params, value))
    if "STATUS" in props and props["STATUS"][1].strip().upper() == "CANCELLED":
        return None
    if "DTSTART" not in props:
        raise _Bad("it has no DTSTART")
    start = parse_time(props["DTSTART"][1], props["DTSTART"][0], zones, "DTSTART")
    if "DTEND" in props:
        end = parse_time(props["DTEND"][1], props["DTEND"][0], zones, "DTEND")
    elif "DURATION" in props:
        end = start + parse_duration(props["DURATION"][1])
    else:
        end = start + dt.timedelta(days=1) if not isinstance(start, dt.datetime) else start
    if isinstance(start, dt.datetime) != isinstance(end, dt.datetime) or (
            isinstance(start, dt.datetime) and isinstance(end, dt.datetime)
            and (start.tzinfo is None) != (end.tzinfo is None)):
        end = start + dt.timedelta(days=1) if not isinstance(start, dt.datetime) else start
    end = max(end, start)
    return _Single(start, end, unescape(_text(props.get("SUMMARY", ({}, ""))[1])) or "(no title)",
                   unescape(_text(props.get("LOCATION", ({}, ""))[1])),
                   unescape(props.get("DESCRIPTION", ({}, ""))[1])[:_TEXT_CAP])


_WANTED = frozenset({"DTSTART", "DTEND", "DURATION", "SUMMARY", "LOCATION", "DESCRIPTION", "STATUS"})
_WANTED_FIRST = frozenset("DSLdsl")


def _prop_name(line: str) -> str:
    end = len(line)
    for sep in (";", ":"):
        i = line.find(sep, 0, end)
        if i >= 0:
            end = i
    return line[:end].upper()


def _uid_of(block: list[str]) -> str:
    for line in block:
        if line[:4].upper() == "UID:" or line[:4].upper() == "UID;":
            return line.partition(":")[2].strip()
    return ""


def _summary_of(block: list[str]) -> str:
    for line in block:
        if line[:8].upper() == "SUMMARY:" or line[:8].upper() == "SUMMARY;":
            return _text(unescape(line.partition(":")[2]))[:60]
    return ""


def _name(block: list[str]) -> str:
    title = _summary_of(block)
    return f"the event {title!r}" if title else f"an event ({_uid_of(block)[:60] or 'no UID'})"


def split_components(lines: list[str]) -> tuple[list[list[str]], list[list[str]], int]:
    """Top-level VEVENT and VTIMEZONE blocks (their lines, BEGIN/END included), and how many
    VCALENDARs there were. Nested components (VALARM) stay inside their event."""
    events: list[list[str]] = []
    zones: list[list[str]] = []
    calendars = 0
    depth = 0
    current: list[str] | None = None
    kind = ""
    for line in lines:
        up = line[:16].upper()
        if up.startswith("BEGIN:"):
            depth += 1
            comp = line[6:].strip().upper()
            if comp == "VCALENDAR" and depth == 1:
                calendars += 1
                continue
            if depth == 2 and comp in ("VEVENT", "VTIMEZONE"):
                current, kind = [], comp
        elif up.startswith("END:"):
            if current is not None and depth == 2:
                current.append(line)
                (events if kind == "VEVENT" else zones).append(current)
                current = None
                depth -= 1
                continue
            depth = max(0, depth - 1)
        if current is not None:
            current.append(line)
    return events, zones, calendars


def parse_ics(text: str, calendar: str = "the calendar") -> ParsedCalendar:
    """Read ICS text (one or more VCALENDARs); raises ValueError with a sentence when it is not
    an iCalendar file at all. Individual broken events only add diagnostics."""
    lines = unfold(text)
    events, zone_blocks, calendars = split_components(lines)
    if calendars == 0:
        raise ValueError(f"{calendar} is not an iCalendar file (it has no BEGIN:VCALENDAR)")
    out = ParsedCalendar()
    vtz: dict[str, Any] = {}
    for block in zone_blocks:
        try:
            comp = icalendar.Timezone.from_ical("\r\n".join(block))
            vtz[str(comp.get("TZID"))] = comp
        except Exception as exc:  # noqa: BLE001 - a broken VTIMEZONE only affects its events
            out.note(f"a time zone definition in {calendar} could not be read: {_why(exc)}")
    zones = Zones(vtz)
    moved = {_uid_of(b) for b in events if any(line[:14].upper().startswith("RECURRENCE-ID") for line in b)}
    groups: dict[str, list[list[str]]] = {}
    for block in events:
        out.events += 1
        uid = _uid_of(block)
        names = {line.split(":", 1)[0].split(";", 1)[0].upper() for line in block}
        if uid in moved or names.intersection(_SERIES_PROPS):
            groups.setdefault(uid or f"no-uid-{out.events}", []).append(block)
            continue
        try:
            ev = _single(block, zones)
        except _Bad as exc:
            out.note(f"{_name(block)} in {calendar} was skipped: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001
            out.note(f"{_name(block)} in {calendar} was skipped: {_why(exc)}")
            continue
        if ev is None:
            continue
        if isinstance(ev.start, dt.datetime) and ev.start.tzinfo is not None:
            assert isinstance(ev.end, dt.datetime)
            out.singles_utc.append((ev.start.timestamp(), ev.end.timestamp(), ev))
        else:
            out.singles_local.append(ev)
    _add_series(out, groups, zone_blocks, zones, calendar)
    out.finish()
    return out


def _precheck(blocks: list[list[str]], zones: Zones) -> None:
    """Refuse a series whose DTSTART our reader cannot read (icalendar may accept it silently)."""
    for block in blocks:
        for line in block:
            if line[:7].upper() == "DTSTART":
                name, params, value = content_line(line)
                if name == "DTSTART":
                    parse_time(value, params, zones, "DTSTART")
                break
        else:
            raise _Bad("it has no DTSTART")


def _add_series(out: ParsedCalendar, groups: dict[str, list[list[str]]], zone_blocks: list[list[str]],
                zones: Zones, calendar: str) -> None:
    good: list[list[str]] = []
    for blocks in groups.values():
        try:
            _precheck(blocks, zones)
        except Exception as exc:  # noqa: BLE001
            out.note(f"{_name(blocks[0])} in {calendar} was skipped: {exc}")
            continue
        good.append([line for b in blocks for line in b])
        if any(_DENSE_RX.search(line) for b in blocks for line in b if line[:6].upper() == "RRULE:"):
            out.dense.add(_uid_of(blocks[0]))
    if not good:
        return
    head = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//hearthside-calendar//EN"]
    tz_lines = [line for b in zone_blocks for line in b]

    def build(chosen: list[list[str]]) -> list[Any]:
        body = "\r\n".join(head + tz_lines + [line for b in chosen for line in b] + ["END:VCALENDAR"]) + "\r\n"
        cal = icalendar.Calendar.from_ical(body)
        return list(recurring_ical_events.of(cal).series)

    try:
        out.series = build(good)
    except Exception:  # noqa: BLE001 - find the series that breaks it, keep the rest
        for flat in good:
            try:
                out.series.extend(build([flat]))
            except Exception as exc:  # noqa: BLE001
                out.note(f"{_name(flat)} in {calendar} was skipped: {_why(exc)}")
