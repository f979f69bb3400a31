"""calendar_agenda over a generated 5,000-event calendar with 200 recurring series (issue 21).

Targets: warm (the parsed copy in memory) <= 50 ms, cold (parse the cached copy, then answer)
<= 1 s. Baselines in the same run: parsing the same bytes with ``icalendar`` alone, and
``icalendar`` + ``recurring-ical-events`` answering the same day. Median of several runs.

The calendar is a subscription whose copy is already in the pack's cache (fresh, so nothing is
fetched): cold is a new service reading and parsing that copy, warm is the same service again.

Usage: .venv/bin/python benchmarks/bench_calendar.py [--runs 7]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "plugins" / "hearthside-calendar")]
from benchkit import median_ms, throwaway_home

VTZ = ["BEGIN:VTIMEZONE", "TZID:Europe/Berlin", "BEGIN:DAYLIGHT", "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200",
       "TZNAME:CEST", "DTSTART:19700329T020000", "RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU", "END:DAYLIGHT",
       "BEGIN:STANDARD", "TZOFFSETFROM:+0200", "TZOFFSETTO:+0100", "TZNAME:CET", "DTSTART:19701025T030000",
       "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU", "END:STANDARD", "END:VTIMEZONE"]


def make_calendar(singles: int = 4800, series: int = 200, seed: int = 21) -> bytes:
    """Single events over two years and weekly/daily/monthly series with EXDATEs, in one zone."""
    r = random.Random(seed)
    out = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//hearthside bench//EN", *VTZ]
    base = dt.datetime(2026, 1, 1, 8, 0)
    for i in range(singles):
        s = base + dt.timedelta(days=r.randrange(730), minutes=15 * r.randrange(40))
        e = s + dt.timedelta(minutes=30 * r.randrange(1, 5))
        out += ["BEGIN:VEVENT", f"UID:single-{i}@bench", "DTSTAMP:20260101T000000Z",
                f"DTSTART;TZID=Europe/Berlin:{s:%Y%m%dT%H%M%S}", f"DTEND;TZID=Europe/Berlin:{e:%Y%m%dT%H%M%S}",
                f"SUMMARY:Meeting {i}", f"LOCATION:Room {i % 20}", "END:VEVENT"]
    rules = ["FREQ=DAILY", "FREQ=WEEKLY;BYDAY=MO,WE,FR", "FREQ=WEEKLY", "FREQ=MONTHLY;BYMONTHDAY=15",
             "FREQ=DAILY;INTERVAL=2;COUNT=300"]
    for i in range(series):
        s = base + dt.timedelta(days=r.randrange(365), minutes=15 * r.randrange(40))
        e = s + dt.timedelta(minutes=30)
        out += ["BEGIN:VEVENT", f"UID:series-{i}@bench", "DTSTAMP:20260101T000000Z",
                f"DTSTART;TZID=Europe/Berlin:{s:%Y%m%dT%H%M%S}", f"DTEND;TZID=Europe/Berlin:{e:%Y%m%dT%H%M%S}",
                f"RRULE:{r.choice(rules)}", f"EXDATE;TZID=Europe/Berlin:{s + dt.timedelta(days=7):%Y%m%dT%H%M%S}",
                f"SUMMARY:Series {i}", "END:VEVENT"]
    out.append("END:VCALENDAR")
    return ("\r\n".join(out) + "\r\n").encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    throwaway_home("calendar")
    from zoneinfo import ZoneInfo

    import icalendar
    import recurring_ical_events
    from hearthside.plugin import pack_config
    from hearthside_calendar import cache
    from hearthside_calendar.agenda import Agenda
    from hearthside_calendar.service import CalendarService

    data = make_calendar()
    tz = ZoneInfo("Europe/Berlin")
    now = dt.datetime(2026, 6, 3, 7, 0, tzinfo=tz)
    day_end = dt.datetime(2026, 6, 4, tzinfo=tz)
    pack_config("calendar").update(lambda d: d.update(calendars=[{
        "id": "bench0000001", "name": "Bench", "kind": "ics", "display": "https://bench.invalid/…"}]))
    cache.save_body("bench0000001", data)
    cache.save_meta("bench0000001", cache.CacheMeta(fetched_at=time.time(), tried_at=time.time()))

    def cold() -> str:
        return Agenda(CalendarService(), now=lambda: now).agenda(tz)

    warm_service = CalendarService()
    Agenda(warm_service, now=lambda: now).agenda(tz)

    def warm() -> str:
        return Agenda(warm_service, now=lambda: now).agenda(tz)

    def ical_parse() -> Any:
        return icalendar.Calendar.from_ical(data)

    parsed = icalendar.Calendar.from_ical(data)

    def ical_rie_day() -> int:
        return len(recurring_ical_events.of(icalendar.Calendar.from_ical(data)).between(now, day_end))

    def rie_day_warm() -> int:
        return len(recurring_ical_events.of(parsed).between(now, day_end))

    cold(), ical_parse()  # first-call imports and caches out of the way
    cold_ms, out = median_ms(cold, args.runs)
    warm_ms, _ = median_ms(warm, max(args.runs, 20))
    ical_ms, _ = median_ms(ical_parse, args.runs)
    both_ms, n = median_ms(ical_rie_day, max(3, args.runs // 2))
    rie_ms, _ = median_ms(rie_day_warm, args.runs)
    lines = [ln for ln in out.splitlines() if "[Bench]" in ln]
    print(f"calendar: {len(data) / 1e6:.1f} MB, 4800 single events + 200 series; answer: {len(lines)} lines "
          f"(icalendar+recurring-ical-events: {n} instances)")
    print(f"  calendar_agenda warm (parsed copy in memory):     {warm_ms:8.1f} ms  (target <= 50)")
    print(f"  calendar_agenda cold (parse the cached copy):     {cold_ms:8.1f} ms  (target <= 1000)")
    print(f"  baseline: icalendar parse alone:                  {ical_ms:8.1f} ms")
    print(f"  baseline: icalendar parse + recurring-ical-events: {both_ms:7.1f} ms")
    print(f"  baseline: recurring-ical-events on a parsed copy:  {rie_ms:7.1f} ms")


if __name__ == "__main__":
    main()
