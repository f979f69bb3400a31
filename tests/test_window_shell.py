"""The tray opens the real windows: Chat…, Review changes…, and the welcome window on a first
start without personas (the tray's Shell and menu, the windows of ui/windows, real services)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from drift_helpers import atomic_save
from fakemodel import FakeModel
from personas import just_checked_in, make_persona, use_model

WAIT = 30_000


def _action(menu: Any, text: str) -> Any:
    return next(a for a in menu.actions() if a.text() == text)


def _submenu(menu: Any, persona: str) -> Any:
    return next(a.menu() for a in menu.actions() if a.menu() is not None and a.text().startswith(persona))


@pytest.fixture
def shell(qtbot, app_context) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController

    s = Shell(app_context, opener=lambda _p: True)
    s.exit = lambda: None
    TrayController(s)
    yield s
    s.quitting = True
    for w in list(s.windows.values()):
        w.hide()
    s.lifecycle.stop()
    s.bridge.close()


def start(qtbot, s) -> None:  # type: ignore[no-untyped-def]
    just_checked_in(s.app)  # no check-in at start takes the model's scripted replies
    s.start()
    qtbot.waitUntil(lambda: s.started and s.rows_loaded, timeout=WAIT)


def test_first_start_without_personas_opens_the_welcome_window_which_creates_one(shell, qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.welcome import WelcomeWindow

    start(qtbot, shell)
    qtbot.waitUntil(lambda: isinstance(shell.windows.get("welcome"), WelcomeWindow), timeout=WAIT)
    w = shell.windows["welcome"]
    assert w.isVisible() and w.pages.currentIndex() == 0
    w.name_edit.setText("Juniper")
    with qtbot.waitSignal(w.persona_created, timeout=WAIT):
        w.persona_button.click()
    w.skip_button.click()
    w.finish_button.click()
    qtbot.waitUntil(lambda: [r.name for r in shell.rows] == ["Juniper"], timeout=WAIT)
    shell.tray.rebuild_menu()
    assert _submenu(shell.tray.menu, "Juniper") is not None


def test_chat_and_review_from_the_menu_open_the_real_windows(shell, qtbot, app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.chat import ChatWindow
    from hearthside.ui.windows.review import ReviewWindow

    folder = make_persona(app_context, "Kip")
    with FakeModel([{"text": "Hello from Kip."}]) as fm:
        use_model(monkeypatch, fm)
        start(qtbot, shell)
        shell.tray.rebuild_menu()
        _action(_submenu(shell.tray.menu, "Kip"), "Chat…").trigger()
        chat = shell.windows[("chat", "Kip")]
        assert isinstance(chat, ChatWindow) and chat.isVisible()
        qtbot.waitUntil(chat.send_button.isEnabled, timeout=WAIT)
        chat.input.setPlainText("hi")
        with qtbot.waitSignal(chat.turn_finished, timeout=WAIT):
            chat.send_button.click()
        assert "Kip: Hello from Kip." in chat.transcript.toPlainText()
    atomic_save(folder / "SOUL.md", "Kip is new here.\n", "menu")
    qtbot.waitUntil(lambda: len(shell.waiting()) == 1, timeout=WAIT)  # the live watcher saw it
    shell.tray.rebuild_menu()
    _action(shell.tray.menu, "Review changes (1)…").trigger()
    review = shell.windows["review"]
    assert isinstance(review, ReviewWindow) and review.isVisible()
    qtbot.waitUntil(lambda: review.item is not None and review.item.status.file == "SOUL.md", timeout=WAIT)
    assert any(r.kind == "add" and r.text == "Kip is new here." for r in review.item.rows)
    with qtbot.waitSignal(review.approved, timeout=WAIT):
        review.approve_button.click()
    qtbot.waitUntil(lambda: len(shell.waiting()) == 0, timeout=WAIT)  # the badge clears


def test_a_notification_for_one_file_opens_the_review_on_that_file(shell, qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context, "Kip")
    start(qtbot, shell)
    (folder / "USER.md").write_text("Kip's person moved.\n")
    review = shell.show_review("Kip", str(folder / "USER.md"))
    qtbot.waitUntil(lambda: review.item is not None and review.item.status.file == "USER.md", timeout=WAIT)
