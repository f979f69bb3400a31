"""A check-in that uses the calendar pack: "remind me 15 minutes before my next meeting".

Real persona folder, real settings, the real hearthside-calendar pack loaded by the app from its
entry point, a real ICS file; only the model is scripted (tests/fakemodel.py): it calls
``calendar_next`` and then words its alert from what the tool answered, so the alert names the
meeting only if the pack really found it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

from fakemodel import FakeModel
from hearthside.app.heartbeat import HeartbeatService
from hearthside.app.notify import LogNotifier
from personas import FILES, make_persona, use_model


def _ics(start: dt.datetime, title: str) -> str:
    end = start + dt.timedelta(minutes=30)
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n"
            "BEGIN:VEVENT\r\nUID:m1\r\nDTSTAMP:20260101T000000Z\r\n"
            f"DTSTART:{start:%Y%m%dT%H%M%SZ}\r\nDTEND:{end:%Y%m%dT%H%M%SZ}\r\nSUMMARY:{title}\r\nLOCATION:Room 4\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n")


def test_a_check_in_calls_calendar_next_and_alerts_with_the_meetings_title(app_context, monkeypatch,
                                                                          tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from hearthside_calendar import store

    soon = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(minutes=12)
    cal = tmp_path / "work.ics"
    cal.write_text(_ics(soon, "Budget review with Priya"), encoding="utf-8")
    store.add("Work", str(cal))
    make_persona(app_context, files={**FILES, "HEARTBEAT.md": "# Checklist\n\n- Remind me 15 minutes before my "
                                                               "next meeting.\n"})

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        [result] = [m for m in body["messages"] if m.get("role") == "tool"]
        first = [ln for ln in str(result["content"]).splitlines() if "[Work]" in ln]
        if not first:
            return {"text": "HEARTBEAT_OK"}
        title = first[0].split("  ")[1]
        return {"text": f"Heads up: {title} starts soon ({first[0].split('  ')[0]})."}

    script = [{"tool_calls": [("calendar_next", json.dumps({"count": 1}))]}, answer]
    with FakeModel(script) as fm:
        use_model(monkeypatch, fm)
        svc = HeartbeatService(app_context, notifier=LogNotifier(), history=app_context.notifications)
        out = asyncio.run(asyncio.wait_for(svc.run("juniper"), 60))
        offered = {t["function"]["name"] for t in fm.requests[0]["tools"]}
    assert {"calendar_agenda", "calendar_next", "calendar_search"} <= offered  # read-only: allowed unattended
    assert out.status == "notified", out
    assert "Budget review with Priya" in out.text
    [entry] = app_context.notifications.entries()
    assert "Budget review with Priya" in entry.text
