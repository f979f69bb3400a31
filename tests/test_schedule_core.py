"""Check-in slot arithmetic (core/schedule.py): pure functions of wall-clock instants and zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hearthside.core.schedule import (
    MAX_LISTED,
    MISSED_ASLEEP,
    MISSED_NOT_RUNNING,
    Schedule,
    ScheduleState,
    decide,
    first_active,
    is_active,
    next_due,
    parse_catch_up,
    parse_days,
    parse_times,
    set_times_between,
    time_line,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
M30 = timedelta(minutes=30)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def local(zone: ZoneInfo, *args: int) -> datetime:
    return datetime(*args, tzinfo=zone)  # type: ignore[misc]


# -- intervals ----------------------------------------------------------------------------------
def test_a_persona_that_never_ran_is_due_at_once_and_then_every_interval() -> None:
    s = Schedule(UTC, interval=M30)
    now = utc(2026, 12, 1, 14, 0)
    d = decide(s, ScheduleState(), now)
    assert d.run is not None and d.run.due == now and d.run.kind == "interval" and not d.missed
    assert d.state.anchor == now
    assert next_due(s, d.state, now) == now + M30


def test_a_restart_soon_after_a_run_runs_nothing_and_keeps_the_next_time() -> None:
    s = Schedule(UTC, interval=timedelta(hours=2))
    ran = utc(2026, 12, 1, 13, 0)
    state = ScheduleState(anchor=ran, settled=ran)
    later = utc(2026, 12, 1, 14, 0)
    d = decide(s, state, later, started=later)
    assert d.run is None and not d.missed and d.state == state
    assert next_due(s, state, later) == utc(2026, 12, 1, 15, 0)


def test_a_long_absence_becomes_one_run_and_the_rest_are_missed() -> None:
    s = Schedule(UTC, interval=M30)
    anchor = utc(2026, 12, 1, 11, 0)
    now = utc(2026, 12, 1, 14, 5)  # slots 11:30 ... 14:00 passed: six of them
    d = decide(s, ScheduleState(anchor, anchor), now)
    assert d.run is not None and d.run.due == utc(2026, 12, 1, 14, 0)
    assert [m[0].due.strftime("%H:%M") for m in d.missed] == ["11:30", "12:00", "12:30", "13:00", "13:30"]
    assert {m[1] for m in d.missed} == {MISSED_ASLEEP}
    assert d.state.anchor == utc(2026, 12, 1, 14, 0)
    again = decide(s, d.state, now + timedelta(seconds=30))
    assert again.run is None and not again.missed  # settled: the next wake runs nothing


def test_slots_due_before_the_start_were_missed_because_hearthside_was_not_running() -> None:
    s = Schedule(UTC, interval=timedelta(hours=1))
    anchor = utc(2026, 12, 1, 8, 0)
    started = utc(2026, 12, 1, 11, 30)
    d = decide(s, ScheduleState(anchor, anchor), started, started=started)
    assert d.run is not None and d.run.due == utc(2026, 12, 1, 11, 0)
    assert [(m[0].due.hour, m[1]) for m in d.missed] == [(9, MISSED_NOT_RUNNING), (10, MISSED_NOT_RUNNING)]


def test_a_clock_that_jumps_back_never_runs_a_slot_twice() -> None:
    s = Schedule(UTC, interval=M30, at=(14 * 60 + 10,))
    now = utc(2026, 12, 1, 14, 10)
    state = ScheduleState(anchor=utc(2026, 12, 1, 14, 0), settled=utc(2026, 12, 1, 13, 0))
    first = decide(s, state, now)
    assert first.run is not None and first.run.kind == "at"
    runs = 0
    for minutes in range(-60, 25):  # the clock goes back an hour and then walks forward again
        d = decide(s, first.state, now + timedelta(minutes=minutes))
        assert not d.missed
        runs += d.run is not None
        if d.run is not None:
            assert d.run.due == utc(2026, 12, 1, 14, 30)  # only the new interval slot
        first = d if d.run is not None else first
    assert runs == 1


def test_an_interval_is_a_real_duration_across_a_dst_change() -> None:
    s = Schedule(BERLIN, interval=M30)
    before = local(BERLIN, 2026, 3, 29, 1, 45)  # 01:45 CET; 02:00 becomes 03:00 CEST
    d = decide(s, ScheduleState(before, before), before.astimezone(UTC) + M30)
    assert d.run is not None and d.run.due == utc(2026, 3, 29, 1, 15)
    assert d.run.due.astimezone(BERLIN).strftime("%H:%M") == "03:15"


# -- active hours -------------------------------------------------------------------------------
def test_active_hours_past_midnight() -> None:
    s = Schedule(BERLIN, interval=M30, active=(22 * 60, 6 * 60))
    assert is_active(s, local(BERLIN, 2026, 12, 1, 23, 0)) and is_active(s, local(BERLIN, 2026, 12, 2, 5, 59))
    assert not is_active(s, local(BERLIN, 2026, 12, 2, 6, 0)) and not is_active(s, local(BERLIN, 2026, 12, 2, 12, 0))
    assert first_active(s, local(BERLIN, 2026, 12, 2, 12, 0)) == local(BERLIN, 2026, 12, 2, 22, 0)
    anchor = local(BERLIN, 2026, 12, 2, 5, 45)  # 06:15 is outside: the next slot opens the night
    assert next_due(s, ScheduleState(anchor, anchor), anchor) == local(BERLIN, 2026, 12, 2, 22, 0)


def test_an_overdue_interval_slot_found_outside_the_active_hours_is_missed_not_run() -> None:
    s = Schedule(UTC, interval=M30, active=(9 * 60, 17 * 60))
    anchor = utc(2026, 12, 1, 16, 0)
    d = decide(s, ScheduleState(anchor, anchor), utc(2026, 12, 1, 20, 0))  # asleep 16:10-20:00
    assert d.run is None and [m[0].due.strftime("%H:%M") for m in d.missed] == ["16:30"]
    assert next_due(s, d.state, utc(2026, 12, 1, 20, 0)) == utc(2026, 12, 2, 9, 0)


def test_a_never_run_persona_outside_its_hours_waits_for_them() -> None:
    s = Schedule(UTC, interval=M30, active=(9 * 60, 17 * 60))
    night = utc(2026, 12, 1, 3, 0)
    d = decide(s, ScheduleState(), night)
    assert d.run is None and not d.missed
    assert next_due(s, d.state, night) == utc(2026, 12, 1, 9, 0)
    morning = decide(s, d.state, utc(2026, 12, 1, 9, 0, 20))
    assert morning.run is not None and morning.run.due == utc(2026, 12, 1, 9, 0, 20)


# -- set times and days -------------------------------------------------------------------------
def test_set_times_on_weekdays_skip_the_weekend() -> None:
    s = Schedule(BERLIN, at=(8 * 60, 13 * 60 + 30), days=frozenset(range(5)))
    friday_afternoon = local(BERLIN, 2026, 12, 4, 14, 0)  # a Friday
    assert next_due(s, ScheduleState(settled=friday_afternoon), friday_afternoon) == \
        local(BERLIN, 2026, 12, 7, 8, 0)  # Monday 08:00
    got = set_times_between(s, local(BERLIN, 2026, 12, 3, 0, 0), local(BERLIN, 2026, 12, 8, 0, 0))
    assert [t.astimezone(BERLIN).strftime("%a %H:%M") for t in got] == [
        "Thu 08:00", "Thu 13:30", "Fri 08:00", "Fri 13:30", "Mon 08:00", "Mon 13:30"]


def test_a_set_time_reached_while_running_runs_on_time() -> None:
    s = Schedule(BERLIN, at=(13 * 60 + 30,))
    before = local(BERLIN, 2026, 12, 1, 13, 29, 50)
    assert decide(s, ScheduleState(settled=before), before).run is None
    d = decide(s, ScheduleState(settled=before), local(BERLIN, 2026, 12, 1, 13, 30, 20))
    assert d.run is not None and d.run.kind == "at" and d.run.due == local(BERLIN, 2026, 12, 1, 13, 30)


def test_a_slept_through_set_time_catches_up_within_the_limit_and_is_missed_after() -> None:
    s = Schedule(BERLIN, at=(8 * 60,), catch_up=timedelta(minutes=120))
    night = local(BERLIN, 2026, 12, 1, 23, 0)
    soon = decide(s, ScheduleState(settled=night), local(BERLIN, 2026, 12, 2, 9, 30))
    assert soon.run is not None and soon.run.due == local(BERLIN, 2026, 12, 2, 8, 0) and not soon.missed
    late = decide(s, ScheduleState(settled=night), local(BERLIN, 2026, 12, 2, 10, 30))
    assert late.run is None and len(late.missed) == 1
    assert late.missed[0][1].startswith("too late to catch up (2 hours 30 minutes late; the limit is 120 minutes)")


def test_several_slept_through_slots_become_one_run() -> None:
    s = Schedule(UTC, interval=timedelta(hours=1), at=(8 * 60, 9 * 60 + 15), catch_up=timedelta(hours=3))
    start = utc(2026, 12, 1, 7, 0)
    d = decide(s, ScheduleState(start, start), utc(2026, 12, 1, 10, 0))
    assert d.run is not None and d.run.due == utc(2026, 12, 1, 10, 0)
    assert [(m[0].kind, m[0].due.strftime("%H:%M")) for m in d.missed] == [
        ("interval", "08:00"), ("at", "08:00"), ("interval", "09:00"), ("at", "09:15")]


@pytest.mark.parametrize(("zone", "day", "expect_utc"), [
    (BERLIN, (2026, 3, 29), (2026, 3, 29, 1, 30)),     # 02:30 does not exist: runs at 03:30 CEST
    (BERLIN, (2026, 10, 25), (2026, 10, 25, 0, 30)),   # 02:30 happens twice: runs at the first
    (NEW_YORK, (2026, 3, 8), (2026, 3, 8, 7, 30)),     # 02:30 does not exist: runs at 03:30 EDT
    (NEW_YORK, (2026, 11, 1), (2026, 11, 1, 7, 30)),   # 02:30 EST (the repeated hour is 01:00-02:00)
])
def test_a_set_time_on_a_dst_night_runs_exactly_once(zone, day, expect_utc) -> None:  # type: ignore[no-untyped-def]
    s = Schedule(zone, at=(2 * 60 + 30,))
    got = set_times_between(s, utc(*day, 0, 0) - timedelta(days=1), utc(*day, 0, 0) + timedelta(days=1))
    on_the_day = [t for t in got if t.astimezone(zone).date() == datetime(*day).date()]
    assert on_the_day == [utc(*expect_utc)]


def test_the_repeated_hour_in_new_york_runs_its_set_time_once() -> None:
    s = Schedule(NEW_YORK, at=(60 + 30,))
    got = set_times_between(s, utc(2026, 10, 31, 12, 0), utc(2026, 11, 1, 20, 0))
    assert got == [utc(2026, 11, 1, 5, 30)]  # 01:30 EDT, not again at 01:30 EST


def test_a_week_away_with_a_one_minute_interval_lists_a_bounded_number_of_slots() -> None:
    s = Schedule(UTC, interval=timedelta(minutes=1))
    anchor = utc(2026, 12, 1, 0, 0)
    d = decide(s, ScheduleState(anchor, anchor), anchor + timedelta(days=7))
    assert d.run is not None and len(d.missed) <= MAX_LISTED
    assert len(d.missed) + d.dropped + 1 == 7 * 24 * 60


# -- settings -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "times", "problem"), [
    (["08:00", "13:30"], (480, 810), ""),
    (["25:00", "09:00"], (540,), "'25:00' is not a time of day"),
    (["8am"], (), "'8am' is not a time of day"),
    (["08:00", "8:00"], (480,), "'8:00' is listed twice"),
    ("07:15", (435,), ""),
    (5, (), "not a list of times"),
])
def test_set_times_keep_the_good_ones_and_name_the_bad(value, times, problem) -> None:  # type: ignore[no-untyped-def]
    got, why = parse_times(value)
    assert got == times and (problem in why if problem else why == "")


def test_days_and_catch_up_name_what_is_wrong() -> None:
    assert parse_days(["mon", "Tuesday", "FRI"]) == (frozenset({0, 1, 4}), "")
    days, why = parse_days(["mon", "funday", "mon"])
    assert days == frozenset({0}) and "'funday' is not a day" in why and "'mon' is listed twice" in why
    assert parse_catch_up(-5) == (120.0, "-5 is not a number of minutes of 0 or more")
    assert parse_catch_up("30") == (30.0, "") and parse_catch_up(True)[1]


# -- the time line ------------------------------------------------------------------------------
def test_the_time_line_names_the_weekday_the_zone_and_the_last_check_in() -> None:
    now = utc(2026, 12, 1, 13, 5)
    assert time_line(now, BERLIN, "Europe/Berlin", None) == \
        "Current time: Tuesday 2026-12-01 14:05 (Europe/Berlin). Last check-in: none yet."
    assert time_line(now, BERLIN, "Europe/Berlin", now - M30) == \
        "Current time: Tuesday 2026-12-01 14:05 (Europe/Berlin). Last check-in: 13:35, 30 minutes ago."
    assert time_line(now, NEW_YORK, "America/New_York", with_last=False) == \
        "Current time: Tuesday 2026-12-01 08:05 (America/New_York)."
    yesterday = time_line(now, BERLIN, "Europe/Berlin", now - timedelta(hours=20))
    assert yesterday.endswith("Last check-in: Monday 2026-11-30 18:05, 20 hours ago.")


def test_check_in_days_hold_interval_slots_too() -> None:
    s = Schedule(BERLIN, interval=timedelta(hours=1), days=frozenset(range(5)), active=(9 * 60, 17 * 60))
    friday = local(BERLIN, 2026, 12, 4, 16, 30)
    assert next_due(s, ScheduleState(friday, friday), friday) == local(BERLIN, 2026, 12, 7, 9, 0)  # Monday
    assert not is_active(s, local(BERLIN, 2026, 12, 5, 12, 0))  # Saturday noon
