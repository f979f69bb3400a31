"""Issue 18, hole 1, widened: hostile text from *real* services reaches the windows as text.

``test_safe_text.py`` feeds the windows through their display methods; here every value comes
from where it really comes from, over loopback: an MCP server (the ``mcp`` SDK) whose name, tool
names and descriptions and ``initialize`` error are markup; a model server whose ``/v1/models``
ids and error bodies are markup; a real check-in whose reply (and whose failure) is markup; and
persona folders named with markup, ``&`` and a right-to-left override.

The markup is ``<img>`` of two local files: a small red PNG (drawn, it would show red pixels in
the window's screenshot) and a FIFO (read, it would block the GUI thread until the test's
timeout fails it). ``<b>`` shows whether markup was rendered at all: a label carrying the raw
characters must be plain text; one that is Hearthside's own rich text must carry them escaped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fakemodel import FakeModel
from mcp_helpers import HttpServerProcess
from personas import make_persona, use_model
from ui_helpers import make_bridge, red_and_fifo, shown_safely

#: A FIFO read on the GUI thread blocks in C, where no signal gets through: the thread method
#: ends the whole test process instead (a hang fails the run).
pytestmark = pytest.mark.timeout(240, method="thread")
WAIT = 30_000


@pytest.fixture
def bad(tmp_path: Path) -> Iterator[str]:
    """Markup with an image of a red PNG and of a FIFO (nobody ever writes to it)."""
    red, fifo = red_and_fifo(tmp_path)
    yield (f'<img src="file://{red}" width="40" height="40"><img src="file://{fifo}">'
           '<b>Your key expired</b> &amp; paste it below')


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


# --- 1. the MCP window and a hostile MCP server --------------------------------------------------

def _mcp_window(qtbot, app_context, bridge):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.mcp import McpWindow

    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.resize(900, 700)
    w.show()
    qtbot.waitUntil(lambda: w.detail.text() != "Reading the servers…", timeout=WAIT)
    return w


def _select(w, name: str) -> None:  # type: ignore[no-untyped-def]
    for i in range(w.tree.topLevelItemCount()):
        if w.tree.topLevelItem(i).text(0) == name:
            w.tree.setCurrentItem(w.tree.topLevelItem(i))
            return
    raise AssertionError(f"{name} is not listed")


def _tested(qtbot, w, name: str) -> None:  # type: ignore[no-untyped-def]
    _select(w, name)
    with qtbot.waitSignal(w.loaded, timeout=WAIT * 2), \
            qtbot.waitSignal(w.finished_action, timeout=WAIT * 2, check_params_cb=lambda a: a == "test"):
        w.test_btn.click()  # the result, then the list re-read with it


def test_a_hostile_mcp_server_and_its_errors_are_shown_as_text(qtbot, app_context, bridge, bad, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A server named with markup and a tool named with it connects, and its tool list shows the
    name escaped; a server whose ``initialize`` answer is a JSON-RPC error of markup, and one
    answering HTTP 500 with an HTML body, are shown failed with the error as text: the message
    line, the status cell's tooltip and the details."""
    from hearthside.core.mcpconfig import ServerConfig

    text_file = tmp_path / "hostile.txt"
    text_file.write_text(bad, encoding="utf-8")
    servers = {"named": HttpServerProcess(hostile_file=text_file),
               "jsonrpc": HttpServerProcess(hostile_file=text_file, fail_initialize="jsonrpc"),
               "http500": HttpServerProcess(hostile_file=text_file, fail_initialize="http")}
    try:
        for name, srv in servers.items():
            srv.start()
            app_context.mcp.add(ServerConfig(name, "http", url=srv.url, timeout=20))
        w = _mcp_window(qtbot, app_context, bridge)

        _tested(qtbot, w, "named")
        assert w.statuses["named"].state == "connected", w.statuses["named"]
        assert "&lt;img" in w.detail.text() and "Renamed" in w.detail.text()  # the tool's own name
        places = shown_safely(w)
        assert "rich label Server details" in places, places

        _tested(qtbot, w, "jsonrpc")
        assert w.statuses["jsonrpc"].state == "failed", w.statuses["jsonrpc"]
        assert "<img" in w.statuses["jsonrpc"].reason  # the server's own words, shown as they are
        places = shown_safely(w)
        assert "label message" in places, (w.message.text(), places)
        assert "rich label Server details" in places, w.detail.text()
        assert "cell tooltip Servers 1,3" in places, places

        _tested(qtbot, w, "http500")  # the SDK keeps the body to itself: the status is named
        assert w.statuses["http500"].state == "failed", w.statuses["http500"]
        assert "HTTP 500" in w.message.text() and "HTTP 500" in w.detail.text()
        shown_safely(w)
    finally:
        app_context.runtime.run(app_context.mcp.close(), timeout=30)
        for srv in servers.values():
            srv.kill()


# --- 2. the Settings and Welcome Test buttons and a hostile model server -------------------------

#: The issue's id was ``<img src="file:///dev/zero">gpt``: read, it eats memory until the app
#: dies, and on a shared test machine the whole machine's. The FIFO in ``bad`` shows the same
#: read as a hang that the timeout ends instead.
BOLD_ID = "gpt-<b>4</b>"


def test_hostile_model_ids_and_error_bodies_in_the_settings_test(qtbot, app_context, bridge, bad) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.settings import SettingsWindow

    with FakeModel(model_ids=("fake-model", BOLD_ID, bad)) as fm:
        w = SettingsWindow(app_context, bridge)
        qtbot.addWidget(w)
        w.resize(900, 900)
        w.show()
        w.base_url.setText(fm.base_url)
        w.model_name.setText("fake-model")
        with qtbot.waitSignal(w.finished_action, timeout=WAIT, check_params_cb=lambda a: a == "model saved"):
            w.save_model_btn.click()
        with qtbot.waitSignal(w.finished_action, timeout=WAIT, check_params_cb=lambda a: a == "model tested"):
            w.test_btn.click()
        assert w.model_msg.kind == "ok" and BOLD_ID in w.model_msg.text() and bad in w.model_msg.text()
        assert "label model message" in shown_safely(w)

        fm.models_error = (500, bad)
        with qtbot.waitSignal(w.finished_action, timeout=WAIT, check_params_cb=lambda a: a == "model tested"):
            w.test_btn.click()
        assert w.model_msg.kind == "error" and "HTTP 500" in w.model_msg.text()
        shown_safely(w)


def test_hostile_model_ids_and_error_bodies_in_the_welcome_test(qtbot, app_context, bridge, bad, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from fakeollama import closed_port
    from hearthside.app import model_discovery as md
    from hearthside.ui.windows.welcome import WelcomeWindow

    monkeypatch.setattr(md, "LOCAL_SERVERS", (
        md.LocalServer("Ollama", f"http://127.0.0.1:{closed_port()}/v1", True, "pull one"),))
    w = WelcomeWindow(app_context, bridge, start_at="model")
    qtbot.addWidget(w)
    w.resize(900, 900)
    w.show()

    def test(base: str, model: str, key: str) -> Any:
        w.provider_box.setCurrentIndex(w.provider_box.count() - 1)
        w.endpoint_edit.setText(base)
        w.model_edit.setText(model)
        w.key_edit.setText(key)
        with qtbot.waitSignal(w.tested, timeout=WAIT) as sig:
            w.test_button.click()
        return sig.args[0]

    with FakeModel(model_ids=(bad, BOLD_ID)) as fm:
        res = test(fm.base_url, "gpt-4o", "k")  # not among the ids: the window lists them
        assert not res.ok and BOLD_ID in w.test_result.text() and bad in w.test_result.text()
        assert "label Test result" in shown_safely(w)
        ok = test(fm.base_url, bad, "k")  # the chosen model's name is the id itself
        assert ok.ok and bad in w.test_result.text()
        assert "label Test result" in shown_safely(w)
        for status in (401, 403, 500):
            fm.models_error = (status, bad)
            res = test(fm.base_url, "gpt-4o", "k")
            assert not res.ok and f"HTTP {status}" in w.test_result.text()
            assert bad[:150] in w.test_result.text()  # the server's words (cut at 200), as text
            assert "label Test result" in shown_safely(w)


# --- 3. a real check-in: the Notifications window, the tray's menu, tooltip and balloon ----------

#: A persona folder named with markup, an ampersand and a right-to-left override.
NAME = "<u>Jun & \u202eiper"  # (a folder name cannot hold "/", so no closing tag)


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(asyncio.wait_for(coro, 120))


def test_a_hostile_check_in_is_shown_as_text_in_notifications_and_the_tray(
    qtbot, app_context, bad, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A check-in whose reply is markup (notified) and one whose model error is markup (failed):
    the history table's cells and tooltips, the main window's status and the balloon the tray
    would show; a persona folder named with markup in the tray's menu and the balloon's title."""
    from hearthside.app.alerts import Alert, make_notice
    from hearthside.app.heartbeat import HeartbeatService
    from hearthside.app.notify import LogNotifier
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import MainWindow, TrayController
    from hearthside.ui.windows.notifications import NotificationsWindow
    from PySide6.QtWidgets import QSystemTrayIcon

    make_persona(app_context)
    (app_context.paths.personas_dir / NAME).mkdir()  # listed, though no persona can run from it
    with FakeModel([{"text": bad}], default={"status": 401, "error": bad}) as fm:
        use_model(monkeypatch, fm)
        hb = HeartbeatService(app_context, notifier=LogNotifier(), history=app_context.notifications)
        alert = _run(hb.run("juniper"))
        failed = _run(hb.run("juniper"))
    assert alert.status == "notified" and "<img" in alert.text, alert
    assert failed.status == "failed" and "<img" in failed.reason, failed
    assert [e.status for e in app_context.notifications.entries()] == ["notified", "failed"]

    shell = Shell(app_context, opener=lambda p: True)
    ctl = TrayController(shell)
    notes = NotificationsWindow(app_context, shell.bridge, shell.open_notice)
    qtbot.addWidget(notes)
    notes.resize(900, 500)
    notes.show()
    notes.reload()
    qtbot.waitUntil(lambda: notes.table.rowCount() == 2, timeout=WAIT)
    places = shown_safely(notes)
    assert {"cell Notification history 1,2", "cell tooltip Notification history 1,2",
            "cell Notification history 0,2"} <= set(places), places  # the reply, its tip, the failure
    assert "<img" in notes.table.item(0, 2).text()  # the failure's reason names the model's error

    # the failed run's reason in the tray's tooltip and the main window's status line
    shell._on_outcome(failed)
    qtbot.waitUntil(lambda: shell.rows_loaded and len(shell.rows) == 2, timeout=WAIT)
    assert "<img" in shell.tooltip()  # the tray shows it through tip(): escaped
    main = MainWindow(shell)
    qtbot.addWidget(main)
    main.refresh()  # not shown: activating it would re-read the rows behind the test's back
    assert "label " + (main.status.accessibleName() or main.status.objectName() or "PlainLabel") in shown_safely(main)
    assert all("\u202e" not in main.list.item(i).text() for i in range(main.list.count()))

    # the tray's menu: the persona's submenu and its status line, one entry, no mnemonic
    ctl.rebuild_menu()
    subs = {a.menu().title(): a.menu() for a in ctl.menu.actions() if a.menu() is not None}
    assert sorted(subs) == ["<u>Jun && \\u202eiper", "juniper"]
    for sub in subs.values():
        for act in sub.actions():
            assert "\u202e" not in act.text() and act.text().replace("&&", "").count("&") == 0

    # the balloon a tray would show: no tag can be formed, no bidi override
    shown: list[tuple[str, str]] = []

    class Recorded(QSystemTrayIcon):  # offscreen Qt has no tray: what the platform would get
        def showMessage(self, title: str, body: str, *rest: Any) -> None:  # type: ignore[override]
            shown.append((title, body))

    ctl.tray = Recorded()
    ctl.show_message(make_notice([Alert("checkin", NAME, alert.text)]))
    [(title, body)] = shown
    for text in (title, body):
        assert "<" not in text and ">" not in text and "\u202e" not in text, text
    assert "\u2039img src=" in body and "\u2039u\u203aJun" in title
    ctl.tray = None
    shell.quitting = True  # closing the windows is not a quit
    notes.close()
    main.close()
    shell.bridge.close()


# --- 4. a persona folder named with markup, & and a right-to-left override -----------------------

def test_a_persona_named_with_markup_is_shown_as_text_in_chat_memory_and_review(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    """The folder is listed (and can be opened from the tray), though its name is not one a
    persona can be run under: each window names it as text, on one line, with the override
    shown as an escape."""
    from hearthside.ui.windows.chat import ChatWindow
    from hearthside.ui.windows.memory import MemoryWindow
    from hearthside.ui.windows.review import ReviewWindow

    make_persona(app_context)
    folder = make_persona(app_context, NAME)
    app_context.drift.scan()  # first use: what is there now is trusted
    (folder / "SOUL.md").write_text("Warm and curious.\nEdited by hand.\n", encoding="utf-8")
    opened = []

    def shown(w: Any) -> Any:
        qtbot.addWidget(w)
        w.resize(900, 700)
        w.show()
        opened.append(w)
        return w

    chat = shown(ChatWindow(app_context, bridge, NAME))
    with qtbot.waitSignal(chat.ready, timeout=WAIT):
        pass
    qtbot.waitUntil(lambda: chat.persona_box.count() == 2, timeout=WAIT)
    assert "label Notice" in shown_safely(chat, "<u>")  # "The chat with <u>Jun … could not start"
    items = [chat.persona_box.itemText(i) for i in range(chat.persona_box.count())]
    for text in [chat.windowTitle(), *items]:
        assert "\u202e" not in text, text
    assert "<u>Jun & \\u202eiper" in chat.windowTitle()
    chat.persona_box.setCurrentIndex(items.index("juniper"))
    chat.persona_box.activated.emit(items.index("juniper"))  # the real name is what is chosen
    assert chat.persona == "juniper" and chat.windowTitle() == "Chat with juniper — Hearthside"

    memory = shown(MemoryWindow(app_context, bridge, NAME))
    qtbot.waitUntil(lambda: memory.detail.text() != "", timeout=WAIT)
    assert shown_safely(memory, "<u>") == ["label PlainLabel"]  # the introduction
    assert "\u202e" not in memory.windowTitle()

    review = shown(ReviewWindow(app_context, bridge, opener=lambda _u: True))
    qtbot.waitUntil(lambda: review.item is not None, timeout=WAIT)
    places = shown_safely(review, "<u>")
    assert any(p.startswith("rich label") for p in places), places  # the title, name escaped
    rows = [review.list.item(i).text() for i in range(review.list.count())]
    assert any("SOUL.md (<u>Jun" in r for r in rows), rows
    assert all("\u202e" not in r for r in rows), rows
    for w in opened:
        w.close()
