"""Issue 20, items 5 and 6 in the tray (offscreen, real services, real D-Bus notification server):
buttons on desktop notifications (*Open chat*, *Snooze 1 hour*, *Review*) where the server lists
the ``actions`` capability and nothing new where it does not; a persona with no checklist teaches
how to write one instead of skipping every check-in in silence."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import test_tray_app
from fakemodel import FakeModel
from personas import FILES, make_persona
from test_tray_app import Recorder, _action, _actions, _submenu

make_shell = test_tray_app.make_shell  # the tray tests' fixture: a started Shell with its tray controller

WAIT = 30_000
ACTIONS = ("body", "body-markup", "actions")


def _needs_bus() -> None:
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        pytest.skip("needs the D-Bus session that scripts/run-tests.sh starts")


def _use(monkeypatch: pytest.MonkeyPatch, fm: FakeModel) -> None:
    for k, v in {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
        monkeypatch.setenv(k, v)


def _checks_in_every_second(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kip checks in on its interval (a settings minute lasting 1 s); Ada not at all."""
    monkeypatch.setenv("HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS", "1")
    make_persona(app, "Kip")
    make_persona(app, "Ada")
    app.settings.set("personas", {"Kip": {"heartbeat_interval_minutes": 1}, "Ada": {"heartbeat_interval_minutes": 0}})


# --- item 5: buttons ------------------------------------------------------------------------

def test_snooze_holds_the_next_alert_back_and_records_it_as_snoozed(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    from notifyserver import NotificationServer

    _needs_bus()
    second = threading.Event()
    script = [{"text": "Water the basil."}, {"text": "The 3pm sync starts soon.", "gate": second}]
    with NotificationServer(ACTIONS) as srv, FakeModel(script=script) as fm:
        _use(monkeypatch, fm)
        _checks_in_every_second(app_context, monkeypatch)
        shell = make_shell()
        qtbot.waitUntil(lambda: len(srv.received) == 1, timeout=WAIT)
        assert srv.received[0]["summary"] == "Kip" and srv.received[0]["body"] == "Water the basil."
        assert srv.actions[0] == ["default", "Open", "open-chat", "Open chat", "snooze-1h", "Snooze 1 hour"]
        srv.click(1, "snooze-1h")
        qtbot.waitUntil(lambda: (r := shell.row("Kip")) is not None and r.snoozed_until is not None, timeout=WAIT)
        second.set()  # the next check-in's alert arrives now, inside the hour
        history = app_context.notifications
        qtbot.waitUntil(lambda: any(e.status == "snoozed" for e in history.entries()), timeout=WAIT)
        snoozed = [e for e in history.entries() if e.status == "snoozed"]
        assert [(e.persona, e.text) for e in snoozed] == [("Kip", "The 3pm sync starts soon.")]
        ledger = app_context.heartbeat.ledger
        qtbot.waitUntil(lambda: any(r.text == "The 3pm sync starts soon." for r in ledger.entries()), timeout=WAIT)
        held = [r for r in ledger.entries() if r.text == "The 3pm sync starts soon."]
        assert len(held) == 1 and held[0].reason.startswith("snoozed until ") and held[0].due is not None
        qtbot.wait(1500)  # more check-ins meanwhile (silent ones): still only the first reached the desktop
        assert len(srv.received) == 1
        shell.tray.rebuild_menu()
        sub = _submenu(shell.tray.menu, "Kip")
        assert "alerts snoozed until" in _actions(sub)[0]
        shell.clickable.stop()


def test_open_chat_on_an_alert_opens_the_chat_with_it(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    from hearthside.ui.windows.chat import ChatWindow
    from notifyserver import NotificationServer

    _needs_bus()
    with NotificationServer(ACTIONS) as srv, FakeModel(script=[{"text": "Your 3pm sync starts in ten minutes."}]) as fm:
        _use(monkeypatch, fm)
        _checks_in_every_second(app_context, monkeypatch)
        shell = make_shell()
        qtbot.waitUntil(lambda: len(srv.received) == 1, timeout=WAIT)
        srv.click(1, "open-chat")
        qtbot.waitUntil(lambda: ("chat", "Kip") in shell.windows, timeout=WAIT)
        w = shell.windows[("chat", "Kip")]
        assert isinstance(w, ChatWindow) and w.isVisible()
        assert w.alert == "Your 3pm sync starts in ten minutes."
        assert app_context.heartbeat.snoozes.until("Kip") is None  # Open chat is not a snooze
        shell.clickable.stop()


def test_a_click_still_does_what_it_did_and_a_drift_notice_offers_review(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    from hearthside.app.alerts import Alert, make_notice
    from notifyserver import NotificationServer

    _needs_bus()
    make_persona(app_context, "Kip")
    with NotificationServer(ACTIONS) as srv:
        shell = make_shell()
        reviews: list[tuple[str | None, str | None]] = []
        chats: list[tuple[str, str | None]] = []
        monkeypatch.setattr(shell, "show_review", lambda p=None, path=None: reviews.append((p, path)))
        monkeypatch.setattr(shell, "show_chat", lambda p, alert=None: chats.append((p, alert)))
        edited = Alert("drift", "Kip", "SOUL.md changed since you approved it", path="/x/SOUL.md")
        shell.on_notice(make_notice([edited]))
        qtbot.waitUntil(lambda: len(srv.received) == 1 and bool(shell.clickable.shown()), timeout=WAIT)
        assert srv.actions[0] == ["default", "Open", "review", "Review"]
        srv.click(1, "review")
        qtbot.waitUntil(lambda: bool(reviews), timeout=WAIT)
        assert reviews == [("Kip", "/x/SOUL.md")]
        srv.click(1, "snooze-1h")  # a button this notice never had: nothing happens
        shell.on_notice(make_notice([Alert("checkin", "Kip", "Water the basil.")]))
        qtbot.waitUntil(lambda: len(srv.received) == 2 and len(shell.clickable.shown()) == 2, timeout=WAIT)
        srv.click(2)  # the click (default action): the chat with the alert, as the balloon's click
        qtbot.waitUntil(lambda: bool(chats), timeout=WAIT)
        assert chats == [("Kip", "Water the basil.")]
        assert app_context.heartbeat.snoozes.until("Kip") is None
        shell.clickable.stop()


def test_a_server_without_actions_gets_no_buttons(make_shell, app_context, qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.alerts import Alert, make_notice
    from notifyserver import NotificationServer

    _needs_bus()
    make_persona(app_context, "Kip")
    with NotificationServer() as srv:  # body, body-markup: no "actions"
        shell = make_shell()
        assert not shell.clickable.supports_actions
        shell.on_notice(make_notice([Alert("checkin", "Kip", "Water the basil.")]))
        qtbot.waitUntil(lambda: len(srv.received) == 1, timeout=WAIT)
        assert srv.actions == [["default", "Open"]]  # exactly what was sent before
        shell.clickable.stop()


def test_a_check_in_asked_for_is_shown_even_while_snoozed(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    from notifyserver import NotificationServer

    _needs_bus()
    make_persona(app_context, "Kip")
    with NotificationServer(ACTIONS) as srv, FakeModel(default={"text": "Water the basil."}) as fm:
        _use(monkeypatch, fm)
        shell = make_shell()
        app_context.heartbeat.snoozes.snooze("Kip")
        _action(_submenu(shell.tray.menu, "Kip"), "Check in now").trigger()
        qtbot.waitUntil(lambda: len(srv.received) == 1, timeout=WAIT)
        assert [e.status for e in app_context.notifications.entries()] == ["notified"]
        shell.clickable.stop()


def test_a_damaged_snooze_file_snoozes_nothing(app_context) -> None:  # type: ignore[no-untyped-def]
    path = app_context.paths.state_dir / "snooze.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    store = app_context.heartbeat.snoozes
    assert store.until("Kip") is None
    until = store.snooze("Kip")
    assert store.until("Kip") == until and store.until("Ada") is None


# --- item 6: no checklist yet ---------------------------------------------------------------

def _persona_without_checklist(app: Any, name: str, body: str | None) -> Path:
    files = {k: v for k, v in FILES.items() if k != "HEARTBEAT.md"}
    if body is not None:
        files["HEARTBEAT.md"] = body
    return make_persona(app, name, files)


def test_an_empty_checklist_says_so_in_the_menu_and_opens_the_file(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot) -> None:
    from hearthside.ui.tray import NO_CHECKLIST

    folder = _persona_without_checklist(app_context, "Kip", "# Checklist\n\n- \n")
    make_persona(app_context, "Ada")
    opener = Recorder()
    shell = make_shell(opener=opener)
    sub = _submenu(shell.tray.menu, "Kip")
    assert _actions(sub)[0] == NO_CHECKLIST == "No checklist yet — Edit HEARTBEAT.md…"
    assert sub.actions()[0].isEnabled()
    assert not any(t.startswith("No checklist") for t in _actions(_submenu(shell.tray.menu, "Ada")))
    before = (folder / "HEARTBEAT.md").read_bytes()
    _action(sub, NO_CHECKLIST).trigger()
    qtbot.waitUntil(lambda: bool(opener.opened), timeout=WAIT)
    assert opener.opened == [folder / "HEARTBEAT.md"]
    assert (folder / "HEARTBEAT.md").read_bytes() == before  # opened, never written


def test_a_missing_checklist_opens_the_folder_and_says_so_never_creating_the_file(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot) -> None:
    from hearthside.ui.tray import NO_CHECKLIST

    folder = _persona_without_checklist(app_context, "Kip", None)
    opener = Recorder()
    shell = make_shell(opener=opener)
    _action(_submenu(shell.tray.menu, "Kip"), NO_CHECKLIST).trigger()
    qtbot.waitUntil(lambda: bool(opener.opened) and bool(shell.dialogs), timeout=WAIT)
    assert opener.opened == [folder]
    note = shell.dialogs[-1]
    assert "no HEARTBEAT.md" in note.label.text() and "folder is open" in note.label.text()
    assert not (folder / "HEARTBEAT.md").exists()


def test_check_in_now_without_a_checklist_offers_to_edit_it(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    folder = _persona_without_checklist(app_context, "Kip", "")
    opener = Recorder()
    with FakeModel() as fm:
        _use(monkeypatch, fm)
        shell = make_shell(opener=opener)
        _action(_submenu(shell.tray.menu, "Kip"), "Check in now").trigger()
        qtbot.waitUntil(lambda: bool(shell.dialogs), timeout=WAIT)
        assert fm.requests == []  # no model call for an empty checklist
    note = shell.dialogs[-1]
    assert note.windowTitle() == "Kip has no checklist yet"
    assert "HEARTBEAT.md is empty" in note.label.text() and "checklist is empty" not in note.windowTitle()
    assert [b.text() for b in note.action_buttons] == ["Edit HEARTBEAT.md…"]
    note.action_buttons[0].click()
    qtbot.waitUntil(lambda: bool(opener.opened), timeout=WAIT)
    assert opener.opened == [folder / "HEARTBEAT.md"]
    assert (folder / "HEARTBEAT.md").read_text(encoding="utf-8") == ""
