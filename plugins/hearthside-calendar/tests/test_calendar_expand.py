"""hearthside-calendar: expansion of real-style exports (Google, Outlook, Apple) and broken input.

The fixtures are written from RFC 5545's examples in the shape each program exports: Google
(IANA TZIDs, a moved and a cancelled instance), Outlook (Windows zone names, quoted TZID, EXDATE,
an unknown zone and a broken DTSTART), Apple (floating times, all-day yearly, a VALARM inside).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import time
import zoneinfo
from pathlib import Path
from typing import Any

import pytest
from hearthside.core.tools import ToolEnv
from hearthside.pluginhost.host import PackHost, ReadOnlySettings, discover
from hearthside_calendar import store
from hearthside_calendar.agenda import Agenda, Line, collect, format_line
from hearthside_calendar.parse import MAX_INSTANCES_PER_SERIES, parse_ics
from hearthside_calendar.service import CalendarService
from hearthside_calendar.tools import make_tools

FIX = Path(__file__).parent / "fixtures"
NY, BERLIN, LONDON = (zoneinfo.ZoneInfo(z) for z in ("America/New_York", "Europe/Berlin", "Europe/London"))


def lines(name: str, tz: dt.tzinfo, a: str, b: str) -> list[str]:
    parsed = parse_ics((FIX / f"{name}.ics").read_text(encoding="utf-8"), name)
    start, end = (dt.datetime.fromisoformat(x).replace(tzinfo=tz) for x in (a, b))
    got = sorted((Line(i.start_in(tz), i.end_in(tz), i, name) for i in parsed.between(start, end, tz)),
                 key=lambda ln: (ln.start, ln.instance.title))
    return [format_line(ln, tz) for ln in got]


def test_google_export_weekly_series_with_exdate_moved_and_cancelled_instances() -> None:
    got = lines("google", NY, "2026-11-01", "2026-11-20")
    assert got == [
        "Tue 03 Nov 09:00–09:30  Team stand-up  (Room 4, Building B)  [google]",  # after US DST ended
        "Tue 10 Nov 10:00–10:30  Team stand-up (moved)  (Room 4, Building B)  [google]",
        "Tue 17 Nov 09:00–09:30  Team stand-up  (Room 4, Building B)  [google]",
        "Thu 19 Nov 09:00–09:30  Team stand-up  (Room 4, Building B)  [google]",
    ]  # Thu 05 Nov is an EXDATE, Thu 12 Nov is STATUS:CANCELLED


def test_google_export_all_day_utc_and_cancelled_single_events() -> None:
    got = lines("google", NY, "2026-11-26", "2026-12-04")
    assert "Thu 26 Nov all day  Thanksgiving  [google]" in got
    assert "Tue 01 Dec 14:00–15:00  Quarterly review  (https://meet.example/abc)  [google]" in got  # 19:00Z
    assert not [ln for ln in got if "Dentist" in ln]


def test_google_events_shown_in_another_zone_move_with_it() -> None:
    got = lines("google", BERLIN, "2026-10-27", "2026-10-28")
    assert got == ["Tue 27 Oct 14:00–14:30  Team stand-up  (Room 4, Building B)  [google]"]  # EDT vs CET


def test_outlook_export_windows_zone_names_exdate_count_and_skipped_broken_events() -> None:
    text = (FIX / "outlook.ics").read_text(encoding="utf-8")
    parsed = parse_ics(text, "Work")
    assert any("'Rover check'" in d and "'Mars/Olympus_Mons' is unknown" in d for d in parsed.diagnostics)
    assert any("'Broken start'" in d and "DTSTART" in d for d in parsed.diagnostics)
    got = lines("outlook", BERLIN, "2026-10-18", "2026-12-31")
    weekly = [ln for ln in got if "Wochenplanung" in ln]
    assert [ln[:10] for ln in weekly] == ["Mon 19 Oct", "Mon 26 Oct", "Mon 09 Nov", "Mon 16 Nov", "Mon 23 Nov"]
    assert all("10:00–11:00" in ln and "(Konferenzraum Süd)" in ln for ln in weekly)  # across the DST change
    assert "Sat 24 Oct 23:00 – Sun 25 Oct 04:30  Night shift across the DST change  [outlook]" in got


def test_apple_export_floating_times_follow_the_viewer_and_all_day_yearly() -> None:
    london = lines("apple", LONDON, "2026-10-24", "2027-01-03")
    assert "Sun 25 Oct 09:00–10:00  Morning run (floating)  [apple]" in london
    assert "Fri 01 Jan all day  Mum's birthday  [apple]" in london
    assert "Sun 25 Oct 00:30–02:30  Late film  (Curzon)  [apple]" in london  # BST→GMT inside it
    ny = lines("apple", NY, "2026-10-24", "2026-10-28")
    assert "Sun 25 Oct 09:00–10:00  Morning run (floating)  [apple]" in ny  # floating: the viewer's 09:00


def _ics(*events: str) -> str:
    return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + "".join(events) + "END:VCALENDAR\r\n"


def _ev(uid: str, *props: str) -> str:
    return "BEGIN:VEVENT\r\nUID:" + uid + "\r\nDTSTAMP:20260101T000000Z\r\n" + "".join(p + "\r\n" for p in props) \
        + "END:VEVENT\r\n"


def test_a_million_instance_rrule_is_bounded_and_the_rest_still_shows() -> None:
    text = _ics(_ev("tick", "DTSTART:20261026T080000Z", "DURATION:PT1S", "RRULE:FREQ=SECONDLY", "SUMMARY:Tick"),
                _ev("lunch", "DTSTART:20261026T120000Z", "DTEND:20261026T130000Z", "SUMMARY:Lunch"))
    parsed = parse_ics(text)
    start = time.monotonic()
    got = list(parsed.between(dt.datetime(2026, 10, 26, tzinfo=dt.UTC), dt.datetime(2026, 11, 26, tzinfo=dt.UTC),
                              dt.UTC))
    assert time.monotonic() - start < 60  # all 2.6 million instances would take minutes and gigabytes
    assert sum(i.title == "Tick" for i in got) == MAX_INSTANCES_PER_SERIES
    assert [i.title for i in got if i.title != "Tick"] == ["Lunch"]


def test_a_series_with_an_unknown_zone_is_skipped_with_a_sentence() -> None:
    text = _ics(_ev("bad", "DTSTART;TZID=Nowhere/Land:20261026T080000", "RRULE:FREQ=DAILY", "SUMMARY:Ghost"),
                _ev("ok", "DTSTART:20261026T120000Z", "RRULE:FREQ=DAILY;COUNT=2", "SUMMARY:Real"))
    parsed = parse_ics(text, "Mixed")
    assert parsed.diagnostics == ["the event 'Ghost' in Mixed was skipped: its time zone 'Nowhere/Land' is unknown"]
    got = list(parsed.between(dt.datetime(2026, 10, 25, tzinfo=dt.UTC), dt.datetime(2026, 10, 30, tzinfo=dt.UTC),
                              dt.UTC))
    assert [i.title for i in got] == ["Real", "Real"]


def test_text_that_is_not_a_calendar_is_one_sentence() -> None:
    with pytest.raises(ValueError, match=r"^Notes is not an iCalendar file \(it has no BEGIN:VCALENDAR\)$"):
        parse_ics("<html><body>Not found</body></html>", "Notes")


# --- through the configured calendars and the tools -------------------------------------------------
def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_whats_on_in_the_next_hour_across_the_autumn_dst_change(tmp_path: Path) -> None:
    # 2026-10-25 in Berlin: 03:00 CEST becomes 02:00 CET. At 02:30 CEST (00:30Z) the next hour runs
    # to 02:30 CET (01:30Z): an event at 02:15 CET is in it although 02:15 < 02:30 on the clock.
    f = tmp_path / "dst.ics"
    f.write_text(_ics(
        _ev("a", "DTSTART:20261025T011500Z", "DTEND:20261025T014500Z", "SUMMARY:Second 02:15 (CET)"),
        _ev("b", "DTSTART;TZID=Europe/Berlin:20261025T031000", "DTEND;TZID=Europe/Berlin:20261025T032000",
            "SUMMARY:After the hour"),
        _ev("c", "DTSTART:20261025T001000Z", "DTEND:20261025T002000Z", "SUMMARY:Already over"),
    ))
    store.add("Home", str(f))
    now = dt.datetime(2026, 10, 25, 0, 30, tzinfo=dt.UTC)
    agenda = Agenda(CalendarService(), now=lambda: now)
    out = agenda.agenda(BERLIN, None, (now + dt.timedelta(hours=1)).isoformat())
    assert "Sun 25 Oct 02:15–02:45  Second 02:15 (CET)  [Home]" in out
    assert "After the hour" not in out and "Already over" not in out
    assert "times in Europe/Berlin" in out


def test_the_pack_loads_with_three_read_only_tools_and_its_command_and_form() -> None:
    host = PackHost()
    [report] = host.load(discover(only_dists=["hearthside-calendar"]))
    assert report.status == "ok", report.error
    flags = {name: t.read_only for name, (t, pack) in host.tools.items()}
    assert flags == {"calendar_agenda": True, "calendar_next": True, "calendar_search": True}


def test_tools_answer_in_the_personas_check_in_zone_and_bad_arguments_are_sentences(tmp_path: Path) -> None:
    f = tmp_path / "g.ics"
    f.write_bytes((FIX / "google.ics").read_bytes())
    store.add("Work", str(f))
    settings = ReadOnlySettings(lambda k, d=None: {"personas": {"ada": {"timezone": "Europe/Berlin"}}}.get(k, d))
    tools = {t.spec.name: t for t in make_tools(settings, service=CalendarService)}
    res = _run(tools["calendar_agenda"].execute({"from": "2026-10-27T00:00", "to": "2026-10-27"},
                                                ToolEnv(persona="ada")))
    assert not res.is_error
    assert res.content.splitlines()[1:] == ["Tue 27 Oct 14:00–14:30  Team stand-up  (Room 4, Building B)  [Work]"]
    res = _run(tools["calendar_search"].execute({"text": "QUARTERLY", "days": 366}, ToolEnv(persona="ada")))
    assert not res.is_error
    bad = _run(tools["calendar_agenda"].execute({"from": "next tuesday"}, ToolEnv(persona="ada")))
    assert bad.is_error and bad.content.startswith("from 'next tuesday' is not an ISO date")
    bad = _run(tools["calendar_next"].execute({"count": "many"}, ToolEnv()))
    assert bad.is_error and bad.content == "count must be a whole number from 1 to 20"


def test_a_fifo_a_40_mb_file_and_invalid_utf8_each_get_a_sentence_and_the_others_still_work(tmp_path: Path) -> None:
    good = tmp_path / "good.ics"
    good.write_text(_ics(_ev("x", "DTSTART:20261026T120000Z", "DTEND:20261026T130000Z", "SUMMARY:Lunch")))
    fifo = tmp_path / "pipe.ics"
    os.mkfifo(fifo)
    big = tmp_path / "big.ics"
    with open(big, "wb") as fh:
        fh.truncate(40 * 1024 * 1024)
    latin = tmp_path / "latin.ics"
    latin.write_bytes(_ics(_ev("y", "DTSTART:20261026T140000Z", "SUMMARY:Caf\xe9 chat")).encode("latin-1"))
    for name, path in (("Good", good), ("Pipe", fifo), ("Big", big), ("Latin", latin)):
        store.add(name, str(path))
    now = dt.datetime(2026, 10, 26, 8, 0, tzinfo=dt.UTC)
    out = Agenda(CalendarService(), now=lambda: now).agenda(dt.UTC)
    assert "Mon 26 Oct 12:00–13:00  Lunch  [Good]" in out
    assert "Mon 26 Oct 14:00–14:00  Caf\ufffd chat  [Latin]" in out
    assert f"Pipe: {fifo} is a named pipe (FIFO), not a regular file; it was not read." in out
    assert f"Big: {big} is larger than 10 MB, too large for a calendar; it was not read." in out
    assert "Latin: the calendar is not valid UTF-8 (a bad byte at offset" in out


def test_warm_queries_reuse_the_parsed_copy_until_the_file_changes(tmp_path: Path) -> None:
    f = tmp_path / "c.ics"
    f.write_text(_ics(_ev("x", "DTSTART:20261026T120000Z", "SUMMARY:Before")))
    store.add("C", str(f))
    svc = CalendarService()
    [v1] = svc.snapshot()
    [v2] = svc.snapshot()
    assert v1.parsed is v2.parsed
    f.write_text(_ics(_ev("x", "DTSTART:20261026T120000Z", "SUMMARY:After the edit")))
    [v3] = svc.snapshot()
    lines_, _ = collect([v3], dt.datetime(2026, 10, 26, tzinfo=dt.UTC), dt.datetime(2026, 10, 27, tzinfo=dt.UTC),
                        dt.UTC)
    assert [ln.instance.title for ln in lines_] == ["After the edit"]
