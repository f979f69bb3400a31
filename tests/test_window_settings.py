"""The settings window: values refused in the form with the reason (and never saved), saves
that keep what another process wrote meanwhile, notifications honoured, the model's key."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import settings_window_with_kip

window = pytest.fixture(settings_window_with_kip, name="window")


def _file(app_context) -> dict:  # type: ignore[no-untyped-def,type-arg]
    p = app_context.paths.settings_file
    return tomllib.loads(p.read_text()) if p.exists() else {}


def _save(qtbot, w) -> str:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(w.finished_action, timeout=10000) as got:
        w.save_btn.click()
    return str(got.args[0])


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("interval", "half an hour", "is not a number of minutes"),
    ("interval", "0.5", "at least 1 minute"),
    ("timezone", "Mars/Olympus", "not a known timezone"),
    ("hours", ("22:00", "06:00"), "is before the start"),
    ("hours", ("8am", "10:00"), "not a time of day"),
    ("quiet", ("23:00", "07:00"), "is before the start"),
])
def test_invalid_values_are_refused_with_the_reason_and_nothing_is_saved(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, field, value, reason
) -> None:
    w = window
    before = app_context.paths.settings_file.read_bytes() if app_context.paths.settings_file.exists() else None
    w.paused.setChecked(True)  # a valid change alongside: it must not be saved either
    if field == "interval":
        w.interval.setText(value)
        marked = w.interval
    elif field == "timezone":
        w.timezone.setCurrentText(value)
        marked = w.timezone
    elif field == "hours":
        w.active_start.setText(value[0])
        w.active_end.setText(value[1])
        marked = w.active_start
    else:
        w.quiet_start.setText(value[0])
        w.quiet_end.setText(value[1])
        marked = w.quiet_start
    assert _save(qtbot, w) == "refused"
    assert "Nothing was saved" in w.message.text() and reason in w.message.text()
    assert reason in marked.toolTip() and reason in marked.accessibleDescription()
    after = app_context.paths.settings_file.read_bytes() if app_context.paths.settings_file.exists() else None
    assert after == before


def test_overnight_hours_are_saved_when_ticked_and_the_timezone_picker_knows_zones(  # type: ignore[no-untyped-def]
    qtbot, window, app_context
) -> None:
    w = window
    assert w.timezone.findText("Europe/Berlin") > 0
    w.interval.setText("45")
    w.active_start.setText("22:00")
    w.active_end.setText("06:00")
    w.active_overnight.setChecked(True)
    w.timezone.setCurrentText("Europe/Berlin")
    assert _save(qtbot, w) == "saved"
    kip = _file(app_context)["personas"]["Kip"]
    assert kip == {"heartbeat_interval_minutes": 45, "active_start": "22:00", "active_end": "06:00",
                   "timezone": "Europe/Berlin"}
    assert app_context.heartbeat.settings_for("Kip").interval_minutes == 45


def test_settings_written_by_another_process_while_open_are_kept(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    w = window
    w.interval.setText("90")  # the user is typing while ...
    proc = subprocess.run([sys.executable, "-m", "hearthside", "heartbeat", "pause", "Kip"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # ... another process pauses Kip
    subprocess.run([sys.executable, "-m", "hearthside", "soul", "strict", "on"], check=True, capture_output=True,
                   timeout=60)
    assert _save(qtbot, w) == "saved"
    data = _file(app_context)
    assert data["personas"]["Kip"]["heartbeat_interval_minutes"] == 90
    assert data["personas"]["Kip"]["paused"] is True  # not overwritten with the window's stale "not paused"
    assert data["drift"]["strict"] is True
    qtbot.waitUntil(lambda: w.paused.isChecked(), timeout=5000)  # the window re-read the file


def test_notifications_off_and_quiet_hours_are_saved_and_honoured(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from hearthside.app.notify import notifications_allowed

    w = window
    w.quiet_start.setText("00:00")
    w.quiet_end.setText("23:59")
    assert _save(qtbot, w) == "saved"
    assert _file(app_context)["notifications"] == {"quiet_start": "00:00", "quiet_end": "23:59"}
    app_context.settings.reload()
    assert not notifications_allowed(app_context.settings, datetime(2026, 1, 1, 12, tzinfo=UTC).astimezone())
    w.quiet_start.setText("")
    w.quiet_end.setText("")
    w.notify_on.setChecked(False)
    assert _save(qtbot, w) == "saved"
    app_context.settings.reload()
    assert _file(app_context)["notifications"] == {"enabled": False}
    assert not notifications_allowed(app_context.settings)


def test_soul_file_location_and_strict_mode_are_saved(qtbot, window, app_context, tmp_path) -> None:  # type: ignore[no-untyped-def]
    w = window
    w.soul.setText("relative/soul.md")
    assert _save(qtbot, w) == "refused" and "full path" in w.message.text()
    soul = tmp_path / "my-soul.md"
    w.soul.setText(str(soul))
    w.strict.setChecked(True)
    assert _save(qtbot, w) == "saved"
    app_context.settings.reload()
    assert app_context.soul_path() == str(soul) and app_context.drift.strict_mode


def test_safe_mode_is_explained_with_a_restart(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    w = window
    assert "safe mode starts it without those packs" in w.safe_text.text()
    asked: list[bool] = []
    w.restart = lambda safe: asked.append(safe) or True
    w.safe_btn.click()
    assert asked == [True]


@pytest.mark.keyring
def test_model_key_goes_to_the_keyring_and_the_field_is_emptied(qtbot, window, app_context, secret_service) -> None:  # type: ignore[no-untyped-def]
    from hearthside.adapters.secrets import KeyringSecretStore
    from hearthside.app.model import API_KEY_REF

    w = window
    w.base_url.setText("http://127.0.0.1:11434/v1")
    w.model_name.setText("llama3.2")
    w.api_key.setText("sk-window-test-key-123456")
    with qtbot.waitSignal(w.finished_action, timeout=10000) as got:
        w.save_model_btn.click()
    assert got.args == ["model saved"], w.model_msg.text()
    assert w.api_key.text() == ""
    try:
        assert KeyringSecretStore().get(API_KEY_REF) == "sk-window-test-key-123456"
    finally:
        KeyringSecretStore().delete(API_KEY_REF)  # the test keyring is shared by the session
    assert "sk-window" not in app_context.paths.settings_file.read_text()
    w.base_url.setText("ftp://nope")
    with qtbot.waitSignal(w.finished_action, timeout=10000) as got:
        w.save_model_btn.click()
    assert got.args == ["model failed"]
    assert "Nothing was saved" in w.model_msg.text() and "is not a web address" in w.model_msg.text()
    app_context.settings.reload()
    assert app_context.settings.get("model.base_url") == "http://127.0.0.1:11434/v1"


def test_model_test_asks_the_configured_server(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    from fakemodel import FakeModel

    w = window
    with FakeModel([]) as fm:
        w.base_url.setText(fm.base_url)
        w.model_name.setText(fm.model_ids[0])
        with qtbot.waitSignal(w.finished_action, timeout=10000):
            w.save_model_btn.click()
        with qtbot.waitSignal(w.finished_action, timeout=10000):
            w.test_btn.click()
        assert w.model_msg.kind == "ok" and "It answers" in w.model_msg.text()
    with qtbot.waitSignal(w.finished_action, timeout=20000):
        w.test_btn.click()  # the server is gone now
    assert w.model_msg.kind == "error" and "does not answer" in w.model_msg.text()


def test_a_settings_file_with_a_mistake_is_shown_left_alone_and_start_over_keeps_it(  # type: ignore[no-untyped-def]
    qtbot, window, app_context
) -> None:
    """Issue 19 item 7: the window names the line and column, saves nothing, and *Start over*
    keeps the file as a backup and begins with default settings."""
    from PySide6.QtWidgets import QMessageBox
    from test_malformed_app_files import BAD_LINE_3

    w = window
    path = app_context.paths.settings_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BAD_LINE_3)
    with qtbot.waitSignal(w.loaded, timeout=10000):
        w.reload()
    assert w.problem.isVisible() and "line 3, column 18" in w.problem.text()
    assert "'hearthside " not in w.problem.text() and "Start over" in w.problem.text()
    assert w.start_over_btn.isVisible() and not w.save_btn.isEnabled()
    with pytest.raises(Exception, match="line 3, column 18, so nothing was changed"):
        app_context.settings.set("drift.strict", True)  # what any save would meet
    assert path.read_bytes() == BAD_LINE_3 and not list(path.parent.glob("settings.toml.broken-*"))

    w.start_over_btn.click()
    box = w.findChild(QMessageBox)
    assert box is not None and path.read_bytes() == BAD_LINE_3  # nothing before the answer
    with qtbot.waitSignal(w.finished_action, timeout=10000, check_params_cb=lambda a: a == "start over"):
        next(b for b in box.buttons() if b.text() == "Start over").click()
    [backup] = list(path.parent.glob("settings.toml.broken-*"))
    assert backup.read_bytes() == BAD_LINE_3 and str(backup) in w.message.text()
    qtbot.waitUntil(lambda: not w.start_over_btn.isVisible() and w.save_btn.isEnabled(), timeout=10000)
    w.paused.setChecked(True)
    assert _save(qtbot, w) == "saved" and _file(app_context)["personas"]["Kip"]["paused"] is True
