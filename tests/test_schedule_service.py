"""The check-in scheduler with real services: saved state, the ledger, settings mistakes.

Each test hands the scheduler the wall-clock instant it decides at (``check(persona, now)``);
what happens with the real clock (sleep, jumps, restarts) is tests/test_schedule_realtime.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel
from hearthside.app.checkins import CheckinLedger, ScheduleStore
from hearthside.app.heartbeat import HeartbeatService, ScheduleError
from personas import make_persona, use_model


class Recorder:
    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def notify(self, title: str, body: str) -> bool:
        self.shown.append((title, body))
        return True


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def service(app: Any, notifier: Any = None) -> HeartbeatService:
    return HeartbeatService(app, notifier=notifier or Recorder(), history=app.notifications)


def check(svc: HeartbeatService, persona: str, now: datetime) -> datetime | None:
    async def go() -> datetime | None:
        nxt = svc.check(persona, now)
        await svc.idle(persona, 60)
        return nxt
    return asyncio.run(asyncio.wait_for(go(), 90))


def ledger(app: Any) -> list[dict[str, Any]]:
    return [r.as_dict() for r in CheckinLedger(app.paths.checkins_file).entries()]


def test_a_burst_of_missed_slots_becomes_one_run_and_one_notification(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    ScheduleStore(app_context.paths.schedule_file).update("juniper", anchor=utc(2026, 12, 1, 6, 0))
    recorder = Recorder()
    with FakeModel(default={"text": "Your 3pm sync starts soon."}) as fm:
        use_model(monkeypatch, fm)
        svc = service(app_context, recorder)
        svc.clock = lambda: utc(2026, 12, 1, 14, 0, 20)
        nxt = check(svc, "juniper", utc(2026, 12, 1, 14, 0, 20))  # asleep since 06:10
        again = check(svc, "juniper", utc(2026, 12, 1, 14, 0, 50))  # the next wake
        asked = len(fm.requests)
    assert asked == 1 and recorder.shown == [("juniper", "Your 3pm sync starts soon.")]
    assert nxt == again == utc(2026, 12, 1, 14, 30)
    got = ledger(app_context)
    assert [e["status"] for e in got] == ["missed"] * 15 + ["notified"]
    assert {e["reason"] for e in got[:-1]} == {"asleep"} and got[-1]["due"] == utc(2026, 12, 1, 14, 0).isoformat()
    saved = ScheduleStore(app_context.paths.schedule_file).get("juniper")
    assert saved.anchor == utc(2026, 12, 1, 14, 0) and saved.last_status == "notified"


def test_a_set_time_runs_outside_the_active_hours_an_interval_slot_does_not(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {
        "heartbeat_interval_minutes": 0, "heartbeat_at": ["07:00"], "active_start": "09:00", "active_end": "17:00",
        "timezone": "Europe/Berlin"}})
    ScheduleStore(app_context.paths.schedule_file).update("juniper", settled=utc(2026, 12, 1, 5, 0))
    with FakeModel() as fm:
        use_model(monkeypatch, fm)
        svc = service(app_context)
        nxt = check(svc, "juniper", utc(2026, 12, 1, 6, 0, 30))  # 07:00:30 in Berlin
        asked = len(fm.requests)
    assert asked == 1 and [e["status"] for e in ledger(app_context)] == ["silent"]
    assert nxt == utc(2026, 12, 2, 6, 0)


def test_check_in_settings_mistakes_are_named_once_and_the_rest_still_applies(  # type: ignore[no-untyped-def]
        app_context, caplog) -> None:
    app_context.settings.set("personas", {"juniper": {
        "heartbeat_at": ["25:00", "08:00", "8am", "08:00"], "heartbeat_days": ["mon", "funday"],
        "heartbeat_catch_up_minutes": -5}})
    svc = service(app_context)
    with caplog.at_level(logging.WARNING, "hearthside.app.heartbeat"):
        cfg = svc.settings_for("juniper")
        svc.settings_for("juniper")  # the next wake says nothing new
    said = [r.getMessage() for r in caplog.records]
    assert cfg.at == (480,) and cfg.days == frozenset({0}) and cfg.catch_up_minutes == 120
    assert len(said) == 3, said
    at, catch_up, days = sorted(said)
    assert at.startswith("personas.juniper.heartbeat_at in settings.toml: '25:00' is not a time of day")
    assert "'8am' is not a time of day" in at and "'08:00' is listed twice" in at
    assert "'funday' is not a day" in days and "the other days still apply" in days
    assert "-5 is not a number of minutes of 0 or more; using 120" in catch_up


def test_the_settings_window_path_refuses_bad_set_times_and_saves_nothing(  # type: ignore[no-untyped-def]
        app_context) -> None:
    svc = service(app_context)
    with pytest.raises(ScheduleError) as err:
        svc.update_schedule("juniper", {"heartbeat_at": ["13:30", "25:00"]})
    assert set(err.value.errors) == {"heartbeat_at"} and "'25:00' is not a time of day" in str(err.value)
    app_context.settings.reload()
    assert "heartbeat_at" not in (app_context.settings.get("personas", {}) or {}).get("juniper", {})
    svc.update_schedule("juniper", {"heartbeat_at": ["13:30"], "heartbeat_days": ["sat", "sun"],
                                    "heartbeat_catch_up_minutes": 30})
    app_context.settings.reload()
    cfg = svc.settings_for("juniper")
    assert (cfg.at, cfg.days, cfg.catch_up_minutes) == ((810,), frozenset({5, 6}), 30.0)


def _corrupt(p: Path) -> None:
    p.write_text('{"version": 1, "personas": {"juniper": ')


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _huge(p: Path) -> None:
    with open(p, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)


def _directory(p: Path) -> None:
    p.mkdir()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("make", [_corrupt, _fifo, _huge, _directory], ids=["corrupt", "fifo", "50 MB", "directory"])
def test_a_bad_schedule_file_is_named_once_and_check_ins_go_on(  # type: ignore[no-untyped-def]
        app_context, monkeypatch, caplog, make) -> None:
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    path = app_context.paths.schedule_file
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    caplog.set_level(logging.WARNING, "hearthside.app.checkins")
    with FakeModel() as fm:
        use_model(monkeypatch, fm)
        svc = service(app_context)
        now = utc(2026, 12, 1, 14, 0)
        first = check(svc, "juniper", now)  # never ran, as far as anyone can tell: runs once
        second = check(svc, "juniper", now + timedelta(seconds=30))
        asked = len(fm.requests)
    assert asked == 1 and first == second == now + timedelta(minutes=30)
    said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert said and len(said) <= 2, said  # said once (a file that cannot be replaced: read and write)
    assert all("the check-in schedule was not" in m for m in said)
    if make is not _directory:  # Hearthside's own file: replaced by a good one after saying so
        assert json.loads(path.read_text())["personas"]["juniper"]["anchor"] == now.isoformat()


def test_a_check_in_asked_for_counts_as_the_last_one(app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    with FakeModel() as fm:
        use_model(monkeypatch, fm)
        svc = service(app_context)
        assert svc.refresh() == ["juniper"]
        svc.clock = lambda: utc(2026, 12, 1, 14, 0)
        assert check(svc, "juniper", utc(2026, 12, 1, 14, 0)) == utc(2026, 12, 1, 14, 30)  # never ran: now
        svc.clock = lambda: utc(2026, 12, 1, 14, 10)
        asyncio.run(svc.run("juniper"))  # "Check in now" at 14:10
        shown = svc.next_run("juniper")  # what the menu shows at once
        nxt = check(svc, "juniper", utc(2026, 12, 1, 14, 20))  # a restart ten minutes later
        asked = len(fm.requests)
    assert asked == 2 and nxt == shown == utc(2026, 12, 1, 14, 40)
    scheduled, asked_for = ledger(app_context)
    assert scheduled["due"] == utc(2026, 12, 1, 14, 0).isoformat()
    assert asked_for["status"] == "silent" and asked_for["due"] is None
    assert asked_for["ran"] == utc(2026, 12, 1, 14, 10).isoformat()


def test_the_ledger_appends_trims_to_the_newest_and_survives_damage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.checkins import SlotRecord

    path = tmp_path / "checkins.jsonl"
    os.mkfifo(path)  # not a file Hearthside can use: replaced, not blocked on
    book = CheckinLedger(path, max_entries=10)
    book.append([SlotRecord.make("juniper", "missed", "asleep", due=utc(2026, 12, 1, 0, 0))])
    assert path.is_file() and [e.status for e in book.entries()] == ["missed"]
    with open(path, "a") as fh:
        fh.write('{"persona": "juniper", "status": "exploded"}\n{not json\n')
    monkey = pytest.MonkeyPatch()
    monkey.setattr("hearthside.app.checkins.TRIM_AT_BYTES", 4000)
    try:
        for i in range(200):
            book.append([SlotRecord.make("juniper", "silent", "acknowledged", due=utc(2026, 12, 1, 0, 0),
                                         ran=utc(2026, 12, 1, 0, 0), text=f"run {i}")])
    finally:
        monkey.undo()
    got = book.entries()
    assert got[-1].text == "run 199" and 10 <= len(got) <= 4000 // 100
    assert [int(e.text.split()[1]) for e in got] == sorted(int(e.text.split()[1]) for e in got)  # newest kept
    assert path.stat().st_size <= 4000  # cut back to the newest 10 whenever it passed 4000 bytes


class Quiet:
    """A front end that only counts check-in outcomes."""

    def __init__(self) -> None:
        self.outcomes: list[Any] = []

    def on_drift(self, event: Any) -> None: ...

    def on_outcome(self, outcome: Any) -> None:
        self.outcomes.append(outcome)

    def on_mcp_status(self, status: Any) -> None: ...

    def show(self, notice: Any) -> None: ...

    def on_error(self, message: str) -> None: ...


def test_the_menus_next_check_in_is_the_saved_schedules_after_a_restart(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    """What the tray reads (PersonaRow.next_run) after a restart: ten minutes after a check-in
    with a 30-minute interval, the next is 20 minutes away, not 30 from the launch."""
    from hearthside.app.lifecycle import Lifecycle

    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    last = datetime.now(UTC) - timedelta(minutes=10)
    ScheduleStore(app_context.paths.schedule_file).update("juniper", anchor=last, settled=last, last_ran=last,
                                                          last_status="failed")
    front = Quiet()
    with FakeModel() as fm:
        use_model(monkeypatch, fm)
        life = Lifecycle(app_context, front)
        try:
            assert life.start() == []
            [row] = life.snapshot()
        finally:
            life.stop()
        asked = len(fm.requests)
    assert row.next_run == last + timedelta(minutes=30) and asked == 0 and front.outcomes == []
    assert row.last_status == "failed"  # the menu still says the last one failed after a restart


def test_the_system_zone_is_looked_up_again_at_every_call(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.clock import current_time_line, persona_zone, system_zone

    monkeypatch.setenv("TZ", "America/New_York")
    assert system_zone()[1] == "America/New_York"
    assert current_time_line("", utc(2026, 12, 1, 14, 5)) == \
        "Current time: Tuesday 2026-12-01 09:05 (America/New_York)."
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # a zone change while running counts at the next message
    assert current_time_line("", utc(2026, 12, 1, 14, 5)) == "Current time: Tuesday 2026-12-01 23:05 (Asia/Tokyo)."
    assert persona_zone("Europe/Berlin")[1] == "Europe/Berlin"  # the persona's own zone wins
    assert persona_zone("Mars/Olympus")[1] == "Asia/Tokyo"  # an unknown one: the system's


def test_a_changed_interval_moves_the_next_check_in_at_once(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    last = datetime.now(UTC) - timedelta(minutes=10)
    ScheduleStore(app_context.paths.schedule_file).update("juniper", anchor=last, settled=last)
    monkeypatch.delenv("HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS", raising=False)
    svc = service(app_context)

    async def scenario() -> tuple[Any, Any]:
        await svc.start()
        before = svc.next_run("juniper")
        # from another thread, as the Settings window does; the next wake would be 30 s away
        await asyncio.to_thread(svc.update_schedule, "juniper", {"heartbeat_interval_minutes": 60})
        async with asyncio.timeout(10):
            while svc.next_run("juniper") == before:
                await asyncio.sleep(0.02)
        after = svc.next_run("juniper")
        await svc.stop()
        return before, after

    before, after = asyncio.run(scenario())
    assert before == last + timedelta(minutes=30) and after == last + timedelta(minutes=60)
