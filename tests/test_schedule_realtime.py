"""Check-ins on the real wall clock: ``hearthside --headless`` under libfaketime.

The app runs with ``FAKETIME_TIMESTAMP_FILE`` + ``FAKETIME_DONT_FAKE_MONOTONIC=1``: writing an
absolute time into the file moves its wall clock at once while its monotonic clock keeps going,
which is what a suspend (or a clock change) looks like to a process. Nothing in Hearthside is
mocked; the model is the loopback fake, recording each request. ``HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS``
is *not* set: these minutes are real minutes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, wait_for
from personas import make_persona

LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
SHIM = Path(__file__).parent / "faketime_shim"
pytestmark = pytest.mark.skipif(not LIB.exists(),
                                reason="needs libfaketime (Debian faketime; scripts/ensure-system.sh test)")

HEARTBEAT = "Heartbeat. Read your HEARTBEAT.md"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


class Headless:
    """``hearthside --headless`` under libfaketime; ``jump()`` moves its wall clock."""

    def __init__(self, clock_file: Path, start: datetime, env: dict[str, str], front: str = "headless") -> None:
        self.clock_file = clock_file
        self.jump(start)
        pythonpath = os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH", "")) if p)
        self.env = dict(os.environ, **env, LD_PRELOAD=str(LIB), FAKETIME_TIMESTAMP_FILE=str(clock_file),
                        FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1", TZ="UTC",
                        PYTHONPATH=pythonpath, HEARTHSIDE_LOG_LEVEL="DEBUG")
        self.env.pop("HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS", None)
        args = ["--headless"] if front == "headless" else []  # else the tray (offscreen under the tests)
        self.proc = subprocess.Popen([sys.executable, "-m", "hearthside", *args], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def jump(self, to: datetime) -> None:
        self.clock_file.write_text(f"@{to.astimezone(UTC):%Y-%m-%d %H:%M:%S}\n")

    def checked(self) -> list[datetime]:
        """The wall-clock times of the schedule's wakes so far (from its debug log)."""
        found = re.findall(r"check-in schedule checked at (\S+) for", "".join(self.lines))
        return [datetime.fromisoformat(t) for t in found]

    def wait_for_wake_after(self, when: datetime, timeout: float = 75) -> None:
        assert wait_for(lambda: any(t >= when for t in self.checked()), timeout), \
            f"the schedule did not wake after {when} within {timeout} s:\n" + "".join(self.lines[-30:])

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)
        return "".join(self.lines)


@pytest.fixture
def headless(app_context, tmp_path) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    started: list[Headless] = []

    def start(at: datetime, fm: FakeModel, front: str = "headless") -> Headless:
        h = Headless(tmp_path / "faketime.rc", at, {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}, front)
        started.append(h)
        return h

    yield start
    for h in started:
        h.stop()


def heartbeats(fm: FakeModel) -> list[str]:
    """The user message of each check-in request the model got."""
    out = []
    for req in list(fm.requests):
        user = [m["content"] for m in req.get("messages", []) if m.get("role") == "user"]
        if user and HEARTBEAT in user[-1]:
            out.append(user[-1])
    return out


def save_state(app: Any, persona: str, last: datetime) -> None:
    from hearthside.app.checkins import ScheduleStore

    ScheduleStore(app.paths.schedule_file).update(persona, anchor=last, settled=last, last_ran=last,
                                                  last_status="silent")


def ledger(app: Any) -> list[dict[str, Any]]:
    from hearthside.app.checkins import CheckinLedger

    return [r.as_dict() for r in CheckinLedger(app.paths.checkins_file).entries()]


def hhmm(stamp: str | None) -> str:
    assert stamp is not None
    return datetime.fromisoformat(stamp).astimezone(UTC).strftime("%H:%M")


def test_check_ins_follow_the_wall_clock_through_restart_sleep_and_jumps(  # type: ignore[no-untyped-def]
        app_context, headless) -> None:
    """Overdue at start -> one run; +3 h -> one run, missed slots recorded; -1 h and back over
    a slot that ran -> nothing twice; a set time reached by a jump -> it runs."""
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {
        "heartbeat_interval_minutes": 60, "timezone": "Europe/Berlin", "heartbeat_at": ["19:30"]}})
    save_state(app_context, "juniper", utc(2026, 12, 1, 11, 0))  # the last check-in, three hours ago
    with FakeModel(default={"text": "HEARTBEAT_OK"}) as fm:
        h = headless(utc(2026, 12, 1, 14, 0, 5), fm)
        # 1. overdue at start: one run within a minute, knowing the time and the last check-in
        assert wait_for(lambda: heartbeats(fm), 60), "no check-in at start:\n" + "".join(h.lines[-30:])
        first = heartbeats(fm)[0]
        assert first.startswith("Current time: Tuesday 2026-12-01 15:00 (Europe/Berlin). "
                                "Last check-in: 12:00, 3 hours ago.\n\n" + HEARTBEAT)
        h.wait_for_wake_after(utc(2026, 12, 1, 14, 0, 30))  # the next wake runs nothing more
        assert len(heartbeats(fm)) == 1
        # 2. three hours asleep: exactly one run, the slots slept through are in the ledger
        h.jump(utc(2026, 12, 1, 17, 0, 30))
        assert wait_for(lambda: len(heartbeats(fm)) >= 2, 60), "no check-in after the jump"
        assert "Current time: Tuesday 2026-12-01 18:00 (Europe/Berlin). Last check-in: 15:00, 3 hours ago." \
            in heartbeats(fm)[1]
        h.wait_for_wake_after(utc(2026, 12, 1, 17, 1, 0))
        assert len(heartbeats(fm)) == 2
        # 3. the clock goes back an hour, then forward over 17:00 again: that slot is not rerun
        before = app_context.paths.schedule_file.read_text()
        h.jump(utc(2026, 12, 1, 16, 0, 0))
        h.wait_for_wake_after(utc(2026, 12, 1, 16, 0, 0))
        h.jump(utc(2026, 12, 1, 17, 1, 30))
        h.wait_for_wake_after(utc(2026, 12, 1, 17, 1, 30))
        assert len(heartbeats(fm)) == 2 and app_context.paths.schedule_file.read_text() == before
        # 4. a set time (19:30 Berlin = 18:30 UTC) reached by a jump runs; the 18:00 slot is folded in
        h.jump(utc(2026, 12, 1, 18, 30, 20))
        assert wait_for(lambda: len(heartbeats(fm)) >= 3, 60), "the set time did not run"
        assert heartbeats(fm)[2].startswith("Current time: Tuesday 2026-12-01 19:30 (Europe/Berlin).")
        assert wait_for(lambda: len(ledger(app_context)) >= 8, 30)
        h.stop()
    got = [(e["status"], e["reason"], hhmm(e["due"])) for e in ledger(app_context)]
    assert got == [
        ("missed", "Hearthside was not running", "12:00"),
        ("missed", "Hearthside was not running", "13:00"),
        ("silent", "acknowledged", "14:00"),
        ("missed", "asleep", "15:00"),
        ("missed", "asleep", "16:00"),
        ("silent", "acknowledged", "17:00"),
        ("missed", "asleep", "18:00"),
        ("silent", "acknowledged", "18:30"),
    ]
    ran = [e for e in ledger(app_context) if e["status"] == "silent"]
    assert [hhmm(e["ran"]) for e in ran] == ["14:00", "17:00", "18:30"]
    assert len(heartbeats(fm)) == 3


@pytest.mark.parametrize("front", ["headless", "tray"])
def test_a_restart_soon_after_a_check_in_does_not_run_one(  # type: ignore[no-untyped-def]
        app_context, headless, run_cli, front) -> None:
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 30}})
    save_state(app_context, "juniper", utc(2026, 12, 1, 13, 50))  # ten minutes ago
    with FakeModel(default={"text": "HEARTBEAT_OK"}) as fm:
        h = headless(utc(2026, 12, 1, 14, 0, 0), fm, front)
        h.wait_for_wake_after(utc(2026, 12, 1, 14, 0, 0))
        h.wait_for_wake_after(utc(2026, 12, 1, 14, 0, 25))
        assert heartbeats(fm) == []
        h.jump(utc(2026, 12, 1, 14, 20, 5))  # the real next time, reached
        assert wait_for(lambda: heartbeats(fm), 60)
        h.stop()
    history = json.loads(run_cli("heartbeat", "history", "--json").stdout)
    assert [(e["persona"], e["status"], hhmm(e["due"])) for e in history] == [("juniper", "silent", "14:20")]
    assert set(history[0]) >= {"persona", "status", "reason", "due", "ran", "text"}


def test_the_time_line_reaches_a_chat_message(app_context, tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"timezone": "America/New_York"}})
    clock = tmp_path / "faketime.rc"
    clock.write_text("@2026-12-01 14:05:00\n")
    env = {"LD_PRELOAD": str(LIB), "FAKETIME_TIMESTAMP_FILE": str(clock), "FAKETIME_NO_CACHE": "1",
           "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": "UTC",
           "PYTHONPATH": os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH", "")) if p)}
    with FakeModel([{"text": "It is nine."}]) as fm:
        proc = run_cli("chat", "juniper", "what time is it?", env={**fm.env(), **env})
        req = fm.requests[0]
    assert proc.returncode == 0, proc.stderr
    assert req["messages"][-1]["content"] == \
        "Current time: Tuesday 2026-12-01 09:05 (America/New_York).\n\nwhat time is it?"
    assert "2026-12-01" not in req["messages"][0]["content"]  # the system prompt stays clock-free
