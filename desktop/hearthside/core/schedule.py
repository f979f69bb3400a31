"""Check-in slot arithmetic: which check-ins are due, missed or next, from the wall clock.

Pure functions of aware datetimes and a zone (no I/O, no clock of its own), so the scheduler in
``app/heartbeat.py`` only asks and the rules are testable in milliseconds. Two kinds of slot:

* **interval** slots form a chain anchored on the last one that was settled: the next is the
  first instant inside the active hours (and on a check-in day) at least one interval after it.
  Intervals are real durations (a 30-minute interval stays 30 minutes across a DST change).
  Overdue interval slots always collapse into one catch-up run, when the clock is inside the
  active hours; the earlier ones are recorded as missed.
* **set-time** slots (``heartbeat_at`` on ``heartbeat_days``) are local times in the persona's
  zone. A local time that a DST change skips runs when the clock jumps past it (02:30 on the
  spring-forward night runs at 03:30); one that occurs twice runs once, at the first. Set times
  are the user's explicit choice, so active hours do not hold them back. A set time that was
  slept through runs on wake when it is at most ``catch_up`` late, else it is missed.

Nothing is ever due twice: set-time slots are taken only after ``settled`` (the latest instant
up to which every set time is settled) and interval slots only after ``anchor``. A clock that
jumps backwards leaves both in the future, so the slots they cover are not run again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal

#: Minutes a set time may be late and still run on wake (``heartbeat_catch_up_minutes``).
DEFAULT_CATCH_UP_MINUTES = 120.0
#: How late a slot may be found and still count as "on time" (the scheduler wakes every 30 s).
ON_TIME = timedelta(seconds=90)
#: At most this many slots are listed per burst; a week asleep with a 1-minute interval would
#: otherwise fill the ledger with ten thousand lines. The rest are counted (``Decision.dropped``).
MAX_LISTED = 200
#: How far back set times are looked for (a machine off for a year does not list a year).
LOOKBACK = timedelta(days=31)

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

SlotKind = Literal["interval", "at"]


@dataclass(frozen=True)
class Schedule:
    """A persona's check-in schedule as values. ``interval`` None: no interval check-ins.
    ``at``: set times as minutes after midnight (sorted, unique). ``days``: weekday numbers
    (0 = Monday) for set times and interval slots; empty means every day. ``active``: the active
    hours as (start, end) minutes, start inclusive, end exclusive, start after end spanning
    midnight; None means all day."""

    zone: tzinfo
    interval: timedelta | None = None
    at: tuple[int, ...] = ()
    days: frozenset[int] = frozenset()
    active: tuple[int, int] | None = None
    catch_up: timedelta = timedelta(minutes=DEFAULT_CATCH_UP_MINUTES)

    @property
    def empty(self) -> bool:
        """No slot ever falls due (interval off and no set times)."""
        return self.interval is None and not self.at


@dataclass(frozen=True)
class ScheduleState:
    """What is saved per persona. ``anchor``: the due time of the last settled interval slot;
    ``settled``: every set time at or before it is settled (run, skipped or missed)."""

    anchor: datetime | None = None
    settled: datetime | None = None


@dataclass(frozen=True)
class Slot:
    due: datetime
    kind: SlotKind


@dataclass(frozen=True)
class Decision:
    """What to do now: run ``run`` (one slot at most), record ``missed`` (slot, reason), save
    ``state`` before running. ``dropped``: older missed slots not listed (see MAX_LISTED)."""

    state: ScheduleState
    run: Slot | None = None
    missed: tuple[tuple[Slot, str], ...] = field(default_factory=tuple)
    dropped: int = 0

    @property
    def changed(self) -> bool:
        return self.run is not None or bool(self.missed)


# -- reading the settings ----------------------------------------------------------------------
def parse_clock_time(value: object) -> int:
    """Minutes after midnight for a set time ``HH:MM`` (00:00-23:59); ValueError with a sentence."""
    text = value.strip() if isinstance(value, str) else ""
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text)
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError(f"{value!r} is not a time of day; write it as HH:MM between 00:00 and 23:59, e.g. 08:30")
    return int(m.group(1)) * 60 + int(m.group(2))


def parse_times(value: object) -> tuple[tuple[int, ...], str]:
    """Set times from ``heartbeat_at``: the usable ones (sorted, unique) and what was wrong
    ("" when nothing). One bad entry does not lose the others."""
    if value is None or value == []:
        return (), ""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None:
        return (), f"it is {value!r}, not a list of times like [\"08:00\", \"13:30\"]"
    got: list[int] = []
    problems: list[str] = []
    for item in items:
        try:
            minute = parse_clock_time(item)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if minute in got:
            problems.append(f"{item!r} is listed twice")
            continue
        got.append(minute)
    return tuple(sorted(got)), "; ".join(problems)


def parse_days(value: object) -> tuple[frozenset[int], str]:
    """Weekdays from ``heartbeat_days`` (``mon``..``sun`` or full English names, any case): the
    usable ones (empty = every day) and what was wrong ("" when nothing)."""
    if value is None or value == []:
        return frozenset(), ""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None:
        return frozenset(), f"it is {value!r}, not a list of days like [\"mon\", \"tue\"]"
    got: set[int] = set()
    problems: list[str] = []
    for item in items:
        name = item.strip().lower() if isinstance(item, str) else ""
        day = DAY_NAMES.index(name) if name in DAY_NAMES else _FULL_DAYS.index(name) if name in _FULL_DAYS else -1
        if day < 0:
            problems.append(f"{item!r} is not a day; use mon, tue, wed, thu, fri, sat or sun")
        elif day in got:
            problems.append(f"{item!r} is listed twice")
        else:
            got.add(day)
    return frozenset(got), "; ".join(problems)


def parse_catch_up(value: object) -> tuple[float, str]:
    """Minutes from ``heartbeat_catch_up_minutes`` (0 or more; 0 = never catch up) and what was
    wrong ("" when nothing; the default is used then)."""
    if value is None:
        return DEFAULT_CATCH_UP_MINUTES, ""
    if isinstance(value, bool):
        return DEFAULT_CATCH_UP_MINUTES, f"it is {value!r}, not a number of minutes"
    try:
        minutes = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_CATCH_UP_MINUTES, f"{value!r} is not a number of minutes"
    if not math.isfinite(minutes) or minutes < 0:
        return DEFAULT_CATCH_UP_MINUTES, f"{value!r} is not a number of minutes of 0 or more"
    return minutes, ""


# -- instants ----------------------------------------------------------------------------------
def local_instant(day: date, minute: int, zone: tzinfo) -> datetime:
    """The UTC instant of local ``day`` + ``minute`` in ``zone`` (fold 0: a skipped local time
    maps past the gap, a repeated one to its first occurrence)."""
    naive = datetime.combine(day, time(minute // 60, minute % 60))
    return naive.replace(tzinfo=zone).astimezone(UTC)


def _day_ok(s: Schedule, local: datetime) -> bool:
    return not s.days or local.weekday() in s.days


def is_active(s: Schedule, when: datetime) -> bool:
    """Is ``when`` inside the active hours, on a check-in day, in the schedule's zone?"""
    local = when.astimezone(s.zone)
    if not _day_ok(s, local):
        return False
    if s.active is None:
        return True
    start, end = s.active
    minute = local.hour * 60 + local.minute
    if start == end:
        return True
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


def first_active(s: Schedule, when: datetime) -> datetime | None:
    """The first instant at or after ``when`` inside the active hours (None: never, which only a
    schedule without any active minute could give)."""
    if is_active(s, when):
        return when
    starts = (0,) if s.active is None else tuple(sorted({0, s.active[0] % (24 * 60)}))
    first_day = when.astimezone(s.zone).date()
    for offset in range(9):
        day = first_day + timedelta(days=offset)
        for minute in starts:
            at = local_instant(day, minute, s.zone)
            if at > when and is_active(s, at):
                return at
    return None


def next_interval_slot(s: Schedule, anchor: datetime | None, now: datetime) -> datetime | None:
    """The interval slot after ``anchor`` (the first active instant at least one interval later);
    with no anchor (never ran) the first active instant from ``now``."""
    if s.interval is None:
        return None
    if anchor is None:
        return first_active(s, now.astimezone(UTC))
    return first_active(s, anchor.astimezone(UTC) + s.interval)  # in UTC: a real duration, not wall time


def set_times_between(s: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """Set-time instants in (``after``, ``until``], oldest first (at most :data:`LOOKBACK`)."""
    if not s.at or until <= after:
        return []
    after = max(after, until - LOOKBACK)
    out: list[datetime] = []
    day = after.astimezone(s.zone).date() - timedelta(days=1)
    last = until.astimezone(s.zone).date() + timedelta(days=1)
    while day <= last:
        if not s.days or day.weekday() in s.days:
            for minute in s.at:
                at = local_instant(day, minute, s.zone)
                if after < at <= until:
                    out.append(at)
        day += timedelta(days=1)
    return sorted(set(out))


def next_set_time(s: Schedule, after: datetime) -> datetime | None:
    """The first set-time instant after ``after``."""
    if not s.at:
        return None
    found = set_times_between(s, after, after + timedelta(days=8))
    return found[0] if found else None


def next_due(s: Schedule, state: ScheduleState, now: datetime) -> datetime | None:
    """When the next slot falls due (may be at or before ``now`` when one is overdue): what the
    menu shows as "Next check-in" and what the scheduler sleeps towards."""
    now, state = now.astimezone(UTC), _in_utc(state)
    after = state.settled if state.settled is not None else now
    candidates = [t for t in (next_interval_slot(s, state.anchor, now), next_set_time(s, after)) if t is not None]
    return min(candidates) if candidates else None


def _in_utc(state: ScheduleState) -> ScheduleState:
    return ScheduleState(state.anchor.astimezone(UTC) if state.anchor else None,
                         state.settled.astimezone(UTC) if state.settled else None)


def _interval_due(s: Schedule, anchor: datetime | None, now: datetime) -> tuple[list[datetime], int]:
    """Interval slots due at or before ``now`` (the newest :data:`MAX_LISTED`) and how many older
    ones were not listed."""
    if s.interval is None:
        return [], 0
    dropped = 0
    if anchor is not None and s.interval > timedelta(0):
        behind = (now - anchor) / s.interval
        if behind > 4 * MAX_LISTED:  # fast-forward a long absence instead of walking it slot by slot
            skip = int(behind) - 2 * MAX_LISTED
            anchor, dropped = anchor + skip * s.interval, skip
    out: list[datetime] = []
    slot = next_interval_slot(s, anchor, now)
    while slot is not None and slot <= now:
        out.append(slot)
        slot = first_active(s, slot + s.interval)
    if len(out) > MAX_LISTED:
        dropped += len(out) - MAX_LISTED
        out = out[-MAX_LISTED:]
    return out, dropped


MISSED_ASLEEP = "asleep"
MISSED_NOT_RUNNING = "Hearthside was not running"


def decide(s: Schedule, state: ScheduleState, now: datetime, *, started: datetime | None = None,
           on_time: timedelta = ON_TIME) -> Decision:
    """Settle every slot due at or before ``now``: at most one runs, the rest are missed.

    A slot missed while the scheduler was running was missed because the computer was asleep
    (or its clock jumped); one due before ``started`` (the scheduler's start) because Hearthside
    was not running. The newest runnable slot runs: an overdue interval
    slot when ``now`` is inside the active hours, a set time no more than ``catch_up`` late.
    The returned state is to be saved before the run starts, so a restart never runs it again.
    """
    now = now.astimezone(UTC)  # every sum below is a real duration (aware + timedelta is wall time)
    state = _in_utc(state)
    settled = state.settled if state.settled is not None else now
    interval, dropped = _interval_due(s, state.anchor, now)
    at = set_times_between(s, settled, now)
    if len(at) > MAX_LISTED:
        dropped += len(at) - MAX_LISTED
        at = at[-MAX_LISTED:]
    new_state = ScheduleState(anchor=interval[-1] if interval else state.anchor,
                              settled=max(settled, now))
    if not interval and not at:
        return Decision(new_state if state.settled is None else state)
    runnable: list[Slot] = []
    missed: list[tuple[Slot, str]] = []

    def missed_reason(due: datetime) -> str:
        return MISSED_NOT_RUNNING if started is not None and due < started else MISSED_ASLEEP

    for t in interval[:-1]:
        missed.append((Slot(t, "interval"), missed_reason(t)))
    if interval:
        last = Slot(interval[-1], "interval")
        if now - last.due <= on_time or is_active(s, now):
            runnable.append(last)
        else:
            missed.append((last, missed_reason(last.due)))
    limit = s.catch_up.total_seconds() / 60
    for t in at:
        slot = Slot(t, "at")
        late = now - t
        if late <= on_time or late <= s.catch_up:
            runnable.append(slot)
        else:
            missed.append((slot, f"too late to catch up ({_minutes(late)} late; the limit is {limit:g} minutes)"))
    run: Slot | None = None
    if runnable:
        run = max(runnable, key=lambda x: (x.due, x.kind == "at"))
        missed += [(x, missed_reason(x.due)) for x in runnable if x is not run]
    missed.sort(key=lambda m: m[0].due)
    return Decision(new_state, run, tuple(missed), dropped)


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} minute{'' if minutes == 1 else 's'}"
    return f"{minutes // 60} hours {minutes % 60} minutes" if minutes % 60 else f"{minutes // 60} hours"


# -- the time line every model turn gets ---------------------------------------------------------
def time_line(now: datetime, zone: tzinfo, zone_name: str, last: datetime | None = None, *,
              with_last: bool = True) -> str:
    """``Current time: Tuesday 2026-12-01 14:05 (Europe/Berlin).`` plus, for a check-in,
    `` Last check-in: 13:35, 30 minutes ago.`` (or ``Last check-in: none yet.``).

    The weekday is English whatever the locale (the model reads it, not the user)."""
    local = now.astimezone(zone)
    line = f"Current time: {_FULL_DAYS[local.weekday()].capitalize()} {local:%Y-%m-%d %H:%M} ({zone_name})."
    if not with_last:
        return line
    if last is None:
        return f"{line} Last check-in: none yet."
    then = last.astimezone(zone)
    ago = max(now - last, timedelta(0))
    stamp = f"{then:%H:%M}" if then.date() == local.date() else f"{_FULL_DAYS[then.weekday()].capitalize()} " \
                                                              f"{then:%Y-%m-%d %H:%M}"
    return f"{line} Last check-in: {stamp}, {_ago(ago)}."


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 1:
        return "just now"
    if minutes < 120:
        return f"{minutes} minute{'' if minutes == 1 else 's'} ago"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} hours ago"
    return f"{hours // 24} days ago"


def day_names(days: Iterable[int]) -> str:
    """``mon, wed, fri`` for weekday numbers (for messages)."""
    return ", ".join(DAY_NAMES[d] for d in sorted(days))


__all__ = [
    "DAY_NAMES",
    "DEFAULT_CATCH_UP_MINUTES",
    "MISSED_ASLEEP",
    "MISSED_NOT_RUNNING",
    "Decision",
    "Schedule",
    "ScheduleState",
    "Slot",
    "decide",
    "first_active",
    "is_active",
    "local_instant",
    "next_due",
    "next_interval_slot",
    "next_set_time",
    "parse_catch_up",
    "parse_clock_time",
    "parse_days",
    "parse_times",
    "set_times_between",
    "time_line",
]
