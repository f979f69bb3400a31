"""The tray app offscreen (pytest-qt): the lifecycle running, every menu action, the windows,
notifications, single instance, start at login, and the bad inputs of issue 11 that are the
tray's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from drift_helpers import atomic_save
from fakemodel import FakeModel
from personas import just_checked_in, make_persona


class Recorder:
    """Stands in for the desktop's file opener and records what was asked."""

    def __init__(self, ok: bool = True) -> None:
        self.ok = ok
        self.opened: list[Path] = []

    def __call__(self, path: Path) -> bool:
        self.opened.append(path)
        return self.ok


def _actions(menu: Any) -> list[str]:
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def _action(menu: Any, text: str) -> Any:
    return next(a for a in menu.actions() if a.text() == text)


def _submenu(menu: Any, persona: str) -> Any:
    return next(a.menu() for a in menu.actions() if a.menu() is not None and a.text().startswith(persona))


def _dialog_texts(shell: Any) -> list[str]:
    out = []
    for d in shell.dialogs:
        label = getattr(d, "label", None)
        try:
            out.append(d.windowTitle() + ": " + (label.text() if label is not None else ""))
        except RuntimeError:  # closed and deleted
            continue
    return out


@pytest.fixture
def make_shell(qtbot, app_context) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController

    made: list[Any] = []

    def make(start: bool = True, opener: Recorder | None = None, app: Any = None) -> Any:
        shell = Shell(app or app_context, opener=opener or Recorder())
        shell.exit = lambda: setattr(shell, "exited", True)
        tray = TrayController(shell)
        shell.opened = shell.opener  # type: ignore[attr-defined]
        made.append((shell, tray))
        if start:
            just_checked_in(app or app_context)
            shell.start()
            qtbot.waitUntil(lambda: shell.started and shell.rows_loaded, timeout=30_000)
        return shell

    yield make
    for shell, tray in made:
        shell.quitting = True
        for w in list(shell.windows.values()):
            w.close()
        shell.lifecycle.stop()
        shell.bridge.close()


@pytest.fixture
def two_personas(app_context) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context, "Kip")
    make_persona(app_context, "Ada")


# --- the menu ---------------------------------------------------------------------------

def test_menu_has_a_submenu_per_persona_then_the_app_actions(  # type: ignore[no-untyped-def]
        make_shell, two_personas) -> None:
    shell = make_shell()
    menu = shell.tray.menu
    menu.aboutToShow.emit()
    assert _actions(menu) == ["Ada", "Kip", "New persona…", "Review changes…", "Notifications…", "Plugins…",
                              "MCP servers…", "Settings…", "Start at login", "About / Diagnostics", "Quit"]
    sub = _submenu(menu, "Kip")
    texts = _actions(sub)
    assert texts[0].startswith("Next check-in") and "no changes waiting" in texts[0]
    assert not sub.actions()[0].isEnabled()  # the status row is information, not an action
    assert texts[1:] == ["Chat…", "Check in now", "Pause check-ins", "Review changes (0)…", "Memory…", "Open folder"]
    assert _action(menu, "Start at login").isCheckable() and not _action(menu, "Start at login").isChecked()


def test_no_personas_offers_create_your_first_persona_which_creates_one(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot) -> None:
    from hearthside.ui.windows.welcome import WelcomeWindow

    shell = make_shell()
    menu = shell.tray.menu
    assert "Create your first persona…" in _actions(menu)
    assert "New persona…" not in _actions(menu)
    _action(menu, "Create your first persona…").trigger()
    w = shell.windows["welcome"]  # the welcome window (it also opened by itself on this first start)
    assert isinstance(w, WelcomeWindow) and w.isVisible()
    w.name_edit.setText("Wren")
    with qtbot.waitSignal(w.persona_created, timeout=10_000):
        w.persona_button.click()
    w.skip_button.click()
    w.finish_button.click()
    qtbot.waitUntil(lambda: [r.name for r in shell.rows] == ["Wren"], timeout=10_000)
    assert (app_context.paths.personas_dir / "Wren" / "SOUL.md").is_file()
    shell.tray.rebuild_menu()
    assert "New persona…" in _actions(menu)


def test_open_folder_opens_it_or_says_where_it_is_with_copy_path(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    shell = make_shell()
    _action(_submenu(shell.tray.menu, "Kip"), "Open folder").trigger()
    assert shell.opened.opened == [app_context.paths.personas_dir / "Kip"]
    assert shell.dialogs == []
    shell.opener.ok = False  # the desktop has no launcher for folders
    _action(_submenu(shell.tray.menu, "Ada"), "Open folder").trigger()
    dlg = shell.dialogs[-1]
    assert dlg.isVisible() and "could not open" in dlg.label.text()
    assert dlg.path_field.text() == str(app_context.paths.personas_dir / "Ada")
    dlg.copy_button.click()
    from PySide6.QtWidgets import QApplication

    assert QApplication.clipboard().text() == str(app_context.paths.personas_dir / "Ada")


def test_pause_and_resume_check_ins_from_the_menu(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    shell = make_shell()
    _action(_submenu(shell.tray.menu, "Kip"), "Pause check-ins").trigger()
    qtbot.waitUntil(lambda: shell.row("Kip").paused, timeout=10_000)
    app_context.settings.reload()
    assert app_context.settings.get("personas.Kip.paused") is True
    sub = _submenu(shell.tray.menu, "Kip")
    assert "Resume check-ins" in _actions(sub) and "Check-ins paused" in _actions(sub)[0]
    _action(_submenu(shell.tray.menu, "Ada"), "Pause check-ins").trigger()
    qtbot.waitUntil(lambda: shell.icon_state()[0] == "paused", timeout=10_000)
    _action(_submenu(shell.tray.menu, "Kip"), "Resume check-ins").trigger()
    qtbot.waitUntil(lambda: not shell.row("Kip").paused, timeout=10_000)
    assert shell.icon_state()[0] == "normal"


def test_start_at_login_is_off_until_the_user_turns_it_on(  # type: ignore[no-untyped-def]
        make_shell, two_personas, isolated_home, qtbot) -> None:
    entry = isolated_home / ".config" / "autostart" / "hearthside.desktop"
    shell = make_shell()
    assert not entry.exists() and not shell.autostart_on
    _action(shell.tray.menu, "Start at login").trigger()
    qtbot.waitUntil(lambda: entry.is_file() and shell.autostart_on, timeout=10_000)
    text = entry.read_text()
    assert "[Desktop Entry]" in text and "Exec=" in text and "hearthside" in text
    if subprocess.run(["which", "desktop-file-validate"], capture_output=True, check=False).returncode == 0:
        assert subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, check=False).returncode == 0
    _action(shell.tray.menu, "Start at login").trigger()
    qtbot.waitUntil(lambda: not entry.exists() and not shell.autostart_on, timeout=10_000)
    # A restart reads the switch from the file: it never comes back on by itself.
    from hearthside.app.context import AppContext

    again = make_shell(app=AppContext())
    assert not again.autostart_on and not entry.exists()


def test_autostart_paths_for_macos_and_windows(tmp_path: Path) -> None:
    from hearthside.app.autostart import Autostart

    mac = Autostart("darwin", home=tmp_path)
    mac.set(True)
    assert mac.path.name.endswith(".plist") and "<key>RunAtLoad</key><true/>" in mac.path.read_text()
    mac.set(False)
    assert not mac.enabled()
    win = Autostart("win32", home=tmp_path)
    win.set(True)
    assert "Startup" in str(win.path) and win.enabled()


def test_about_shows_the_doctor_report_and_settings_says_what_exists(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot) -> None:
    shell = make_shell()
    _action(shell.tray.menu, "About / Diagnostics").trigger()
    about = shell.windows["about"]
    qtbot.waitUntil(lambda: about.done >= 1, timeout=60_000)
    text = about.report.toPlainText()
    assert "python" in text and "locations" in text and "settings_file" in text
    _action(shell.tray.menu, "Settings…").trigger()
    settings = shell.windows["settings"]
    qtbot.waitUntil(lambda: settings.soul.text().endswith("soul.md"), timeout=10_000)
    assert settings.isVisible()


# --- drift and notifications --------------------------------------------------------------

def test_hand_edit_gives_badge_and_notification(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    """A hand edit gives the badge and a notice; how fast is a figure of benchmarks/bench_tray.py."""
    shell = make_shell()
    soul = app_context.paths.personas_dir / "Kip" / "SOUL.md"
    atomic_save(soul, "Warm, curious, and now fond of puns.\n")
    qtbot.waitUntil(lambda: shell.icon_state() == ("review", 1) and bool(shell.notices), timeout=30_000)
    notice = shell.notices[-1]
    assert notice.title == "Kip" and "SOUL.md" in notice.body and "Edited by hand" in notice.body
    assert "1 file(s) waiting for review" in shell.tooltip()
    qtbot.waitUntil(lambda: shell.row("Kip").waiting == 1, timeout=5_000)
    assert "Review changes (1)…" in _actions(shell.tray.menu)
    assert "Review changes (1)…" in _actions(_submenu(shell.tray.menu, "Kip"))
    # Saved again at once: the badge follows, but no second notification for the same settle.
    atomic_save(soul, "Warm, curious, fond of puns, and brief.\n", tag="b")
    qtbot.wait(800)
    assert len(shell.notices) == 1
    entries = app_context.notifications.entries()
    assert [(e.persona, e.status) for e in entries] == [("Kip", "notified")] and "SOUL.md" in entries[0].text
    # Approving (the review window's job) clears the badge.
    app_context.drift.approve([str(soul)])
    qtbot.waitUntil(lambda: shell.icon_state() == ("normal", 0), timeout=5_000)


def test_files_changed_together_make_one_notification(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    shell = make_shell()
    for name in ("Kip", "Ada"):
        atomic_save(app_context.paths.personas_dir / name / "USER.md", f"{name} edited\n")
    atomic_save(app_context.paths.personas_dir / "Kip" / "TOOLS.md", "edited\n")
    qtbot.waitUntil(lambda: shell.icon_state() == ("review", 3), timeout=5_000)
    qtbot.wait(1500)
    assert sum(len(n.alerts) for n in shell.notices) == 3
    assert len(shell.notices) <= 2  # grouped, not one balloon per file
    grouped = max(shell.notices, key=lambda n: len(n.alerts))
    if len(grouped.alerts) > 1:
        assert "file(s) changed" in grouped.body and "USER.md" in grouped.body


def test_batcher_groups_100_alerts_and_repeats_nothing_per_settle() -> None:
    from hearthside.app.alerts import Alert, AlertBatcher, DriftAlerts
    from hearthside.app.drift import DriftEvent

    got: list[Any] = []
    threads: list[threading.Thread] = []

    def deliver(batch: Any) -> None:
        threads.append(threading.current_thread())
        got.append(batch)

    b = AlertBatcher(deliver, gather=1.0, min_gap=0.3)
    for i in range(100):
        b.add(Alert("checkin", f"p{i % 7}", f"alert {i}"))
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threads and threading.current_thread() not in threads  # the batcher's timer delivers
    assert len(got) == 1 and len(got[0].alerts) == 100
    assert "100 check-in alert(s)" in got[0].body and "and 3 more" in got[0].body
    drift = DriftAlerts(b, repeat_after=60)
    ev = DriftEvent("Kip", "SOUL.md", "/p/Kip/SOUL.md", "drifted", "1 line added")
    assert drift.on_event(ev) is True
    assert drift.on_event(ev) is False  # a further save of a file already waiting
    assert drift.on_event(DriftEvent("Kip", "SOUL.md", "/p/Kip/SOUL.md", "missing", "")) is True
    assert drift.on_event(DriftEvent("Kip", "SOUL.md", "/p/Kip/SOUL.md", "approved", "")) is False
    assert drift.waiting() == {}
    assert drift.on_event(ev) is True  # after approval a new edit is news again
    b.close()


def test_100_alerts_in_a_second_are_grouped_and_the_loop_keeps_ticking(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot) -> None:
    from PySide6.QtCore import QElapsedTimer, QTimer

    shell = make_shell()
    notifier = shell.app.heartbeat.notifier
    ticks: list[int] = []
    clock = QElapsedTimer()
    clock.start()
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(clock.elapsed()))
    timer.start(5)

    def burst() -> None:
        for i in range(100):
            notifier.notify("Kip" if i % 2 else "Ada", f"alert number {i}")
            time.sleep(0.005)

    threading.Thread(target=burst).start()
    qtbot.waitUntil(lambda: sum(len(n.alerts) for n in shell.notices) == 100, timeout=10_000)
    timer.stop()
    assert len(shell.notices) <= 3
    assert len(ticks) > 1  # the loop kept ticking; its longest stall is a figure of bench_tray.py
    shell.show_notifications()


def test_check_in_alert_becomes_a_notification_and_a_click_opens_the_chat(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot, monkeypatch) -> None:
    with FakeModel(default={"text": "Your 3pm sync starts in ten minutes."}) as fm:
        for k, v in {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
            monkeypatch.setenv(k, v)
        shell = make_shell()
        opened: list[tuple[str, str | None]] = []
        monkeypatch.setattr(shell, "show_chat", lambda p, alert=None: opened.append((p, alert)))
        _action(_submenu(shell.tray.menu, "Kip"), "Check in now").trigger()
        qtbot.waitUntil(lambda: bool(shell.notices), timeout=30_000)
    notice = shell.notices[-1]
    assert notice.title == "Kip" and "3pm sync" in notice.body
    shell.open_notice(notice)
    assert opened == [("Kip", "Your 3pm sync starts in ten minutes.")]
    w = shell.show_notifications()
    qtbot.waitUntil(lambda: w.table.rowCount() == 1, timeout=10_000)
    assert [w.table.item(0, c).text() for c in (1, 2, 3)] == ["Kip", "Your 3pm sync starts in ten minutes.",
                                                               "notified"]
    w.open_row(0)
    assert opened[-1] == ("Kip", "Your 3pm sync starts in ten minutes.")


def test_notifications_window_shows_history_newest_first(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot) -> None:
    from datetime import UTC, datetime, timedelta

    h = app_context.notifications
    t = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    h.append("Kip", "first alert", "notified", t)
    h.append("Ada", "the model said 401", "failed", t + timedelta(minutes=1))
    h.append("Kip", "first alert", "duplicate", t + timedelta(minutes=2))
    shell = make_shell(start=False)
    _action(shell.tray.menu, "Notifications…").trigger()
    w = shell.windows["notifications"]
    qtbot.waitUntil(lambda: w.table.rowCount() == 3, timeout=10_000)
    rows = [[w.table.item(r, c).text() for c in range(4)] for r in range(3)]
    assert [r[1:] for r in rows] == [["Kip", "first alert", "silent (same alert within 24 h)"],
                                     ["Ada", "the model said 401", "failed"],
                                     ["Kip", "first alert", "notified"]]
    assert rows[0][0] > rows[2][0]


def test_notifications_window_opens_a_line_by_its_kind_not_by_its_words(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, monkeypatch) -> None:
    from datetime import UTC, datetime

    h = app_context.notifications
    t = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    # A check-in reply that happens to start like a file-change line is still Kip's alert.
    h.append("Kip", "Edited by hand: your calendar, so I moved the 3pm sync", "notified", t)
    h.append("", "Edited by hand: soul.md changed since you approved it", "notified", t, kind="drift")
    shell = make_shell(start=False)
    opened: list[tuple[str, Any]] = []
    monkeypatch.setattr(shell, "show_chat", lambda p, alert=None: opened.append(("chat", p)))
    monkeypatch.setattr(shell, "show_review", lambda p=None, path=None: opened.append(("review", p)))
    w = shell.show_notifications()
    qtbot.waitUntil(lambda: w.table.rowCount() == 2, timeout=10_000)
    rows = {w.table.item(r, 1).text(): r for r in range(2)}
    assert set(rows) == {"Kip", "your soul"}
    w.open_row(rows["Kip"])
    w.open_row(rows["your soul"])
    assert opened == [("chat", "Kip"), ("review", "")]  # the soul's files, as a click on its notice


def test_without_tray_or_notification_service_the_window_and_list_still_work(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot, monkeypatch) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    shell = make_shell()
    assert shell.tray.show() == "window"  # offscreen has no tray
    win = shell.windows["main"]
    qtbot.waitUntil(lambda: win.list.count() == 2, timeout=10_000)
    atomic_save(app_context.paths.personas_dir / "Ada" / "SOUL.md", "changed\n")
    qtbot.waitUntil(lambda: bool(shell.notices) and shell.delivery == "in-app", timeout=5_000)
    qtbot.waitUntil(lambda: "1 new notification" in win.status.text(), timeout=5_000)
    assert "1 file(s) changed" in win.status.text()
    win.notes_btn.click()
    notes = shell.windows["notifications"]
    qtbot.waitUntil(lambda: notes.table.rowCount() == 1, timeout=10_000)
    assert "SOUL.md" in notes.table.item(0, 2).text()
    # Every menu action is a button here too.
    buttons = {b.text() for b in win.findChildren(type(win.quit_btn))}
    assert {"Chat…", "Check in now", "Pause check-ins", "Open folder", "Memory…", "New persona…", "Plugins…",
            "MCP servers…", "Settings…", "About / Diagnostics", "Quit"} <= buttons
    assert win.login.text() == "Start at login"


def test_main_window_tab_order_follows_the_layout(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot) -> None:
    shell = make_shell()
    win = shell.show_main()
    order = [win.list, win.chat_btn, win.check_btn, win.pause_btn, win.review_btn, win.folder_btn,
             win.memory_btn, win.new_btn, win.all_review_btn, win.notes_btn, win.plugins_btn, win.mcp_btn,
             win.settings_btn, win.login, win.about_btn, win.quit_btn]
    chain = []
    w = win.list
    for _ in range(len(order)):
        chain.append(w)
        w = w.nextInFocusChain()
        while w not in order and w is not win.list:
            w = w.nextInFocusChain()
    assert chain == order
    assert all(b.accessibleName() for b in order)


# --- bad inputs ---------------------------------------------------------------------------

def test_persona_folder_deleted_while_windows_are_open(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    import shutil

    shell = make_shell()
    win = shell.show_main()
    shell.show_notifications()
    shutil.rmtree(app_context.paths.personas_dir / "Kip")
    qtbot.waitUntil(lambda: bool(shell.notices) and any("Removed" in n.body or "file(s)" in n.body
                                                  for n in shell.notices), timeout=5_000)
    shell.refresh()
    qtbot.waitUntil(lambda: shell.row("Kip") is None or not shell.row("Kip").exists, timeout=5_000)
    assert all("Kip" not in win.list.item(i).text() or "missing" in win.list.item(i).text()
               for i in range(win.list.count()))
    assert shell.icon_state()[0] == "review"
    shell.tray.menu.aboutToShow.emit()  # the menu still builds


def test_corrupt_settings_at_start_stay_put_and_the_user_is_told_where(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    """Issue 19 item 7: starting the tray never moves a settings.toml the user is editing."""
    path = app_context.paths.settings_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("this is [not toml\n")
    shell = make_shell()
    qtbot.waitUntil(lambda: any(t.startswith("Settings cannot be used") for t in _dialog_texts(shell)), timeout=10_000)
    assert path.read_text() == "this is [not toml\n" and not list(path.parent.glob("settings.toml.broken-*"))
    text = next(t for t in _dialog_texts(shell) if t.startswith("Settings cannot be used"))
    assert "line 1, column 6" in text and "Start over" in text
    assert [r.name for r in shell.rows] == ["Ada", "Kip"]


def test_a_service_raising_on_the_runtime_thread_is_shown_and_the_app_keeps_running(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot) -> None:
    shell = make_shell()

    def boom() -> None:
        raise RuntimeError("the disk fell off")

    shell.app.runtime.loop.call_soon_threadsafe(boom)
    qtbot.waitUntil(lambda: shell.icon_state()[0] == "error", timeout=5_000)
    assert any("the disk fell off" in t for t in _dialog_texts(shell))
    assert "the disk fell off" in shell.tooltip()
    assert shell.app.runtime.run(_answer(), timeout=5) == 42  # the runtime still runs
    shell.refresh()
    qtbot.waitUntil(lambda: len(shell.rows) == 2, timeout=5_000)
    shell.show_about()
    assert shell.icon_state()[0] != "error"  # seen: the error badge clears


async def _answer() -> int:
    return 42


def test_quit_during_a_running_check_in_stops_everything(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot, monkeypatch) -> None:
    """The model never answers until the app has exited (the gate opens after): Quit that ends
    at all did not wait for the call. How long it takes is a figure of bench_tray.py."""
    gate = threading.Event()
    with FakeModel(default={"gate": gate, "text": "never sent"}) as fm:
        for k, v in {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
            monkeypatch.setenv(k, v)
        shell = make_shell()
        _action(_submenu(shell.tray.menu, "Kip"), "Check in now").trigger()
        qtbot.waitUntil(lambda: bool(fm.requests), timeout=30_000)
        _action(shell.tray.menu, "Quit").trigger()
        qtbot.waitUntil(lambda: getattr(shell, "exited", False), timeout=30_000)
        gate.set()
    assert not shell.app.drift.running
    assert not shell.app.runtime.loop.is_running()


def test_quit_during_a_pack_install_stops_pip(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot, tmp_path) -> None:
    """A pack whose build takes a minute: Quit terminates pip and nothing is recorded."""
    shell = make_shell()
    pkg = tmp_path / "slowpack"
    pkg.mkdir()
    (pkg / "setup.py").write_text("import time\ntime.sleep(60)\nfrom setuptools import setup\nsetup(name='slowpack')\n")
    plugins = shell.app.plugins
    failures: list[BaseException] = []
    shell.bridge.call(lambda: plugins.install(str(pkg), lambda line: None), failed=failures.append)
    qtbot.waitUntil(lambda: bool(plugins.installer._running) or bool(failures), timeout=120_000)
    assert not failures
    qtbot.wait(500)
    shell.quit()  # pip's build would take a minute: an exit that comes at all did not wait for it
    qtbot.waitUntil(lambda: getattr(shell, "exited", False), timeout=30_000)
    qtbot.waitUntil(lambda: not plugins.installer._running, timeout=5_000)
    assert plugins.installer.record() == []


def test_a_second_launch_brings_the_first_forward_and_exits_0(  # type: ignore[no-untyped-def]
        qtbot, app_context) -> None:
    from hearthside.ui.single import SingleInstance

    first = SingleInstance(app_context.paths.config_dir)
    assert first.claim()
    shown: list[bool] = []
    first.show_requested.connect(lambda: shown.append(True))
    proc = subprocess.Popen([sys.executable, "-m", "hearthside"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=60_000)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "already running" in out
    qtbot.waitUntil(lambda: bool(shown), timeout=5_000)
    first.close()


def test_a_second_launch_while_the_first_is_starting(isolated_home) -> None:  # type: ignore[no-untyped-def]
    """Two launches at once: exactly one keeps running, the other exits 0 at once."""
    env = dict(os.environ)
    a = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and a.poll() is None and b.poll() is None:
            time.sleep(0.1)
        time.sleep(2)  # the survivor must still be running afterwards
        done = [p for p in (a, b) if p.poll() is not None]
        assert len(done) == 1, "both launches kept running, or both ended"
        out, err = done[0].communicate()
        assert done[0].returncode == 0 and "already running" in out, err
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.terminate()
                p.wait(15)


def test_without_a_tray_notifications_go_over_dbus_and_a_click_opens_the_chat(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot, monkeypatch) -> None:
    from hearthside.app.alerts import Alert, make_notice
    from notifyserver import NotificationServer

    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        pytest.skip("needs the D-Bus session that scripts/run-tests.sh starts")
    with NotificationServer() as srv:
        shell = make_shell()  # offscreen: no tray
        assert shell.clickable is not None
        opened: list[tuple[str, str | None]] = []
        main_thread = threading.current_thread()
        monkeypatch.setattr(shell, "show_chat", lambda p, alert=None: opened.append(
            (p, alert) if threading.current_thread() is main_thread else ("wrong thread", None)))
        shell.on_notice(make_notice([Alert("checkin", "Kip", "Water the <b>basil</b> & the mint.")]))
        qtbot.waitUntil(lambda: bool(srv.received) and bool(shell.clickable.shown()), timeout=10_000)
        got = srv.received[0]
        assert got["summary"] == "Kip" and got["body"] == "Water the &lt;b&gt;basil&lt;/b&gt; &amp; the mint."
        assert srv.actions[0][:1] == ["default"]
        assert shell.delivery == "dbus"
        srv.click(1)
        qtbot.waitUntil(lambda: bool(opened), timeout=10_000)
        assert opened == [("Kip", "Water the <b>basil</b> & the mint.")]
        shell.clickable.stop()


def test_notifications_switched_off_stay_in_the_list_and_never_pop_up(  # type: ignore[no-untyped-def]
        make_shell, two_personas, app_context, qtbot) -> None:
    """A drift notice or a check-in with notifications off (Settings) goes to the in-app list only."""
    from hearthside.app.alerts import Alert, make_notice
    from hearthside.app.notify import save_notification_prefs
    from notifyserver import NotificationServer

    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        pytest.skip("needs the D-Bus session that scripts/run-tests.sh starts")
    with NotificationServer() as srv:
        shell = make_shell()  # offscreen: no tray, so D-Bus would be next
        save_notification_prefs(shell.app.settings, {"enabled": False})  # as Settings… does; then
        with qtbot.waitSignal(shell.state.changed, timeout=10_000):  # the shell reads the state afresh
            shell.refresh()
        shell.on_notice(make_notice([Alert("drift", "Kip", "SOUL.md changed since you approved it")]))
        assert shell.delivery == "in-app" and shell.unread == 1 and len(shell.notices) == 1
        qtbot.wait(500)
        assert srv.received == []
        save_notification_prefs(shell.app.settings, {"enabled": True})
        with qtbot.waitSignal(shell.state.changed, timeout=10_000):
            shell.refresh()
        shell.on_notice(make_notice([Alert("checkin", "Kip", "Water the basil.")]))
        qtbot.waitUntil(lambda: bool(srv.received), timeout=10_000)
        assert shell.delivery == "dbus"
        if shell.clickable is not None:
            shell.clickable.stop()


def test_sigterm_quits_the_tray_cleanly(app_context) -> None:  # type: ignore[no-untyped-def]
    """Logging out sends SIGTERM: the app stops its services and exits 0, like Quit."""
    import signal

    make_persona(app_context, "Kip")
    env = dict(os.environ, HEARTHSIDE_REPORT_READY="1")
    proc = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "ready with 1 persona" in line, proc.stderr.read() if proc.stderr else ""
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert time.monotonic() - t0 < 7.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_the_management_windows_open_from_the_menu(  # type: ignore[no-untyped-def]
        make_shell, two_personas, qtbot) -> None:
    shell = make_shell()
    menu = shell.tray.menu
    menu.aboutToShow.emit()
    _action(menu, "Plugins…").trigger()
    plugins = shell.windows["plugins"]
    qtbot.waitUntil(lambda: plugins.tree.topLevelItemCount() >= 1, timeout=30_000)
    _action(menu, "MCP servers…").trigger()
    mcp = shell.windows["mcp"]
    qtbot.waitUntil(lambda: "No MCP servers yet" in mcp.detail.text(), timeout=10_000)
    _action(_submenu(menu, "Kip"), "Memory…").trigger()
    memory = shell.windows["memory/Kip"]
    assert memory.isVisible() and memory.persona == "Kip"
    qtbot.waitUntil(lambda: "has not learned anything yet" in memory.detail.text(), timeout=10_000)
    from hearthside.ui.windows.managekit import restart_app

    assert plugins.restart is not restart_app  # Restart now goes through the shell's clean quit


def test_a_fork_ready_for_review_is_a_notice_whose_click_opens_the_forks_tab(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, tmp_path) -> None:
    ws = tmp_path / "work"
    ws.mkdir()
    (ws / "notes.md").write_text("one\n")
    shell = make_shell()
    qtbot.waitUntil(lambda: shell.lifecycle.started.is_set(), timeout=30_000)
    fork = app_context.forks.create("Kip", "Tidy the notes", workspace=str(ws))
    (Path(app_context.forks.root_of(fork)) / "notes.md").write_text("two\n")
    app_context.forks.finished(app_context.forks.fork_id(fork), "tidied")
    qtbot.waitUntil(lambda: any(n.kind == "fork" for n in shell.notices), timeout=10_000)
    notice = next(n for n in shell.notices if n.kind == "fork")
    assert notice.title == "Kip" and "wait for your review: Tidy the notes" in notice.body
    shell.open_notice(notice)
    w = shell.windows["review"]
    assert w.tabs.currentWidget() is w.forks_panel
    qtbot.waitUntil(lambda: w.forks_panel.review is not None, timeout=10_000)


def test_a_writing_specialists_fork_is_one_notice_per_fork_and_opens_its_review(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, tmp_path, monkeypatch) -> None:
    """The whole path in the tray's process: a chat session's writing specialist works in a fork,
    the fork is told once (not again when its record is touched later), a second fork is its own
    notice, and the notice opens the review window on the forks tab showing that fork."""
    import json

    from fakemodel import by_system
    from hearthside.core.tools import PermissionMode
    from personas import use_model

    folder = make_persona(app_context, "Kip")
    (folder / "agents").mkdir()
    (folder / "agents" / "scribe.md").write_text(
        "---\nname: scribe\ndescription: Writes.\npermissionMode: acceptEdits\n---\nSCRIBE-MARK\n")
    ws = tmp_path / "work"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))

    def write(name: str) -> dict[str, Any]:
        return {"tool_calls": [("Write", json.dumps({"path": name, "content": "x\n"}))]}

    def ask(task: str) -> dict[str, Any]:
        return {"tool_calls": [("Subagent", json.dumps({"agent": "scribe", "task": task}))]}

    script = by_system({"SCRIBE-MARK": [write("a.md"), {"text": "wrote a"}, write("b.md"), {"text": "wrote b"}],
                        "Be brief.": [ask("Write a"), {"text": "ok"}, ask("Write b"), {"text": "ok"}]})
    shell = make_shell()
    qtbot.waitUntil(lambda: shell.lifecycle.started.is_set(), timeout=30_000)
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        sessions = app_context.sessions
        prepared = sessions.prepare("Kip", PermissionMode.ACCEPT_EDITS)
        agent = sessions.agent(prepared, sessions.model())
        app_context.runtime.run(agent.send("write a"), timeout=60)
        qtbot.waitUntil(lambda: len([n for n in shell.notices if n.kind == "fork"]) == 1, timeout=10_000)
        [rec] = app_context.forks.pending()
        app_context.forks.finished(rec.id, "again")  # touching the record again tells nothing new
        app_context.forks.cleanup()
        app_context.runtime.run(agent.send("write b"), timeout=60)
        qtbot.waitUntil(lambda: len([n for n in shell.notices if n.kind == "fork"]) == 2, timeout=10_000)
    qtbot.wait(200)
    first, second = [n for n in shell.notices if n.kind == "fork"]
    assert "wait for your review: Write a" in first.body and "wait for your review: Write b" in second.body
    assert not (ws / "a.md").exists() and len(app_context.forks.pending()) == 2
    shell.open_notice(second)
    w = shell.windows["review"]
    assert w.tabs.currentWidget() is w.forks_panel
    qtbot.waitUntil(lambda: w.forks_panel.review is not None, timeout=10_000)


FORK_IN_ANOTHER_PROCESS = """
import sys
from pathlib import Path
from hearthside.app.context import AppContext

app = AppContext()
fork = app.forks.create("Kip", sys.argv[1], sys.argv[2])
Path(app.forks.root_of(fork), sys.argv[1] + ".md").write_text("from a terminal chat\\n")
rec = app.forks.finished(app.forks.fork_id(fork), "wrote " + sys.argv[1])
print(rec.id, rec.status)
"""


def test_a_fork_made_by_another_process_is_announced_once_and_not_again_after_a_restart(  # type: ignore[no-untyped-def]
        make_shell, app_context, qtbot, tmp_path) -> None:
    """``hearthside chat`` in a terminal is another process: its fork reaches the tray at the
    next refresh of its rows, as one notice; later refreshes and a restarted tray repeat none,
    and a restarted tray announces a fork made while it was away."""
    import subprocess
    import sys

    from hearthside.app.context import AppContext

    make_persona(app_context, "Kip")
    ws = tmp_path / "work"
    ws.mkdir()

    def fork_elsewhere(label: str) -> str:
        out = subprocess.run([sys.executable, "-c", FORK_IN_ANOTHER_PROCESS, label, str(ws)], capture_output=True,
                             text=True, timeout=120, check=True).stdout.split()
        assert out[1] == "ready", out
        return out[0]

    def fork_notices(shell: Any) -> list[str]:
        return [n.body for n in shell.notices if n.kind == "fork"]

    shell = make_shell()
    fid = fork_elsewhere("letter")
    shell.refresh()
    qtbot.waitUntil(lambda: len(fork_notices(shell)) == 1, timeout=15_000)
    assert "wait for your review: letter" in fork_notices(shell)[0]
    for _ in range(3):  # later refreshes (and the minute's look) tell nothing new
        shell.refresh()
        shell.lifecycle.announce_forks()
    qtbot.wait(300)
    assert len(fork_notices(shell)) == 1
    assert [r.id for r in app_context.forks.pending()] == [fid] and app_context.forks.pending()[0].announced
    shell.lifecycle.stop()

    away = fork_elsewhere("minutes")  # made while no tray runs
    again = make_shell(app=AppContext())  # the tray restarted: a new process's services, same files
    again.refresh()
    qtbot.waitUntil(lambda: len(fork_notices(again)) == 1, timeout=15_000)
    qtbot.wait(300)
    assert len(fork_notices(again)) == 1 and "wait for your review: minutes" in fork_notices(again)[0]
    assert {r.id for r in app_context.forks.pending()} == {fid, away}
