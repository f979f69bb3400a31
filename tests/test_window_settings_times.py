"""Issue 20, items 3 in the Settings window: a persona's set times (add / remove), check-in days
(Mon–Sun boxes) and catch-up minutes, saved to ``heartbeat_at``, ``heartbeat_days`` and
``heartbeat_catch_up_minutes`` with the settings layer's own sentences for what is wrong."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import make_bridge, settings_window_with_kip

window = pytest.fixture(settings_window_with_kip, name="window")


def _kip(app_context: Any) -> dict[str, Any]:
    p = app_context.paths.settings_file
    data = tomllib.loads(p.read_text()) if p.exists() else {}
    return dict(data.get("personas", {}).get("Kip", {}))


def _save(qtbot: Any, w: Any) -> str:
    with qtbot.waitSignal(w.finished_action, timeout=10000) as got:
        w.save_btn.click()
    return str(got.args[0])


def _add(box: Any, text: str) -> None:
    box.new_time.setText(text)
    box.add_btn.click()


def test_set_times_days_and_catch_up_are_saved_and_shown_again(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    w = window
    box = w.times_box
    assert box.times.count() == 0 and all(b.isChecked() for b in box.days)  # every day, no set times
    _add(box, "13:30")
    _add(box, "8:00")
    assert [box.times.item(i).text() for i in range(box.times.count())] == ["08:00", "13:30"]
    for b in box.days[5:]:  # Sat, Sun off
        b.setChecked(False)
    box.catch_up.setText("45")
    assert _save(qtbot, w) == "saved"
    kip = _kip(app_context)
    assert kip["heartbeat_at"] == ["08:00", "13:30"]
    assert kip["heartbeat_days"] == ["mon", "tue", "wed", "thu", "fri"]
    assert kip["heartbeat_catch_up_minutes"] == 45
    # the window shows what is stored; removing a time and ticking every day leaves the keys out
    box.times.setCurrentRow(0)
    box.remove_btn.click()
    for b in box.days:
        b.setChecked(True)
    box.catch_up.setText("")
    assert _save(qtbot, w) == "saved", w.message.text()
    kip = _kip(app_context)
    assert kip["heartbeat_at"] == ["13:30"] and "heartbeat_days" not in kip and "heartbeat_catch_up_minutes" not in kip
    app_context.settings.reload()
    cfg = app_context.heartbeat.settings_for("Kip")  # what the scheduler uses
    assert cfg.at == (13 * 60 + 30,) and cfg.days == frozenset() and cfg.catch_up_minutes == 120


@pytest.mark.parametrize("text", ["25:00", "8am"])
def test_a_bad_set_time_is_not_added_and_says_why(qtbot, window, text) -> None:  # type: ignore[no-untyped-def]
    box = window.times_box
    _add(box, "08:00")
    _add(box, text)
    assert box.times.count() == 1 and box.new_time.text() == text  # the list kept, the typing too
    assert "is not a time of day; write it as HH:MM" in box.message.text()
    _add(box, "08:00")
    assert box.times.count() == 1 and "listed twice" in box.message.text()


def test_no_day_ticked_and_a_negative_catch_up_are_refused_and_nothing_is_saved(  # type: ignore[no-untyped-def]
        qtbot, window, app_context) -> None:
    w = window
    box = w.times_box
    before = app_context.paths.settings_file.read_bytes() if app_context.paths.settings_file.exists() else None
    w.paused.setChecked(True)  # a valid change alongside is not saved either
    for b in box.days:
        b.setChecked(False)
    box.catch_up.setText("-5")
    assert _save(qtbot, w) == "refused"
    text = w.message.text()
    assert "Nothing was saved" in text and "Check-in days: tick at least one day" in text
    assert "Catch up: '-5' is not a number of minutes of 0 or more" in text or \
        "Catch up: -5 is not a number of minutes of 0 or more" in text
    assert "0 or more" in box.catch_up.toolTip()
    after = app_context.paths.settings_file.read_bytes() if app_context.paths.settings_file.exists() else None
    assert after == before


def test_a_hand_written_mistake_is_shown_and_must_be_fixed_before_saving(  # type: ignore[no-untyped-def]
        qtbot, window, app_context) -> None:
    w = window
    app_context.settings.set("personas", {"Kip": {"heartbeat_at": ["8am", "13:30"], "heartbeat_days": ["mon"]}})
    with qtbot.waitSignal(w.loaded, timeout=10000):
        w.reload()
    box = w.times_box
    assert [box.times.item(i).text() for i in range(box.times.count())] == ["13:30", "8am"]
    assert [b.isChecked() for b in box.days] == [True] + [False] * 6
    assert _save(qtbot, w) == "refused" and "Set times: '8am' is not a time of day" in w.message.text()
    assert "8am" in box.times.toolTip()
    w.interval.setText("45")
    assert _save(qtbot, w) == "refused" and "Set times: '8am' is not a time of day" in w.message.text()
    box.times.setCurrentRow(1)
    box.remove_btn.click()
    assert _save(qtbot, w) == "saved"
    kip = _kip(app_context)
    assert kip["heartbeat_at"] == ["13:30"] and kip["heartbeat_interval_minutes"] == 45


# --- the Notifications window's ledger view (item 4's UI) -------------------------------------

def test_the_notifications_window_shows_missed_and_snoozed_slots_with_everything(  # type: ignore[no-untyped-def]
        qtbot, app_context) -> None:
    from datetime import UTC, datetime, timedelta

    from hearthside.app.checkins import CheckinLedger, SlotRecord
    from hearthside.app.snooze import snoozed_reason
    from hearthside.ui.windows.notifications import ALERTS_ONLY, EVERYTHING, NotificationsWindow

    now = datetime.now(UTC).replace(microsecond=0)
    CheckinLedger(app_context.paths.checkins_file).append([
        SlotRecord.make("Kip", "missed", "asleep", now - timedelta(hours=2)),
        SlotRecord.make("Kip", "skipped", "outside active hours 09:00-17:00", now - timedelta(hours=1),
                        now - timedelta(hours=1)),
        SlotRecord.make("Kip", "notified", snoozed_reason(now + timedelta(minutes=30)), now, now, "The 3pm sync."),
    ])
    app_context.notifications.append("Kip", "The 3pm sync.", "snoozed", now)
    bridge = make_bridge(app_context)
    opened: list[Any] = []
    w = NotificationsWindow(app_context, bridge, opened.append)
    qtbot.addWidget(w)
    w.show()
    w.reload()
    qtbot.waitUntil(lambda: w.loaded >= 1 and w.table.rowCount() == 1, timeout=10000)
    assert w.filter.currentText() == ALERTS_ONLY and w.table.isColumnHidden(4)
    assert [w.table.item(0, c).text() for c in (1, 2, 3)] == ["Kip", "The 3pm sync.", "snoozed (kept, not shown)"]
    seen = w.loaded
    w.filter.setCurrentText(EVERYTHING)
    qtbot.waitUntil(lambda: w.loaded > seen and w.table.rowCount() == 3, timeout=10000)
    assert not w.table.isColumnHidden(4)
    statuses = [w.table.item(i, 3).text() for i in range(3)]
    assert statuses[0].startswith("snoozed until ") and statuses[1:] == [
        "skipped (outside active hours 09:00-17:00)", "missed (asleep)"]
    assert w.table.item(2, 0).text() == "—" and w.table.item(2, 4).text() != ""  # never ran; was due
    w.open_row(0)
    assert opened and opened[-1].alerts[0].text == "The 3pm sync."
    w.open_row(2)  # a missed slot opens the chat without an alert
    assert opened[-1].alerts[0].text == ""
    bridge.close()
