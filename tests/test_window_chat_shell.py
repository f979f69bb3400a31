"""The chat window with the shell pack on: the Bash approval and the accept-edits label read true.

Bash is asked about every time, also in accept-edits (tests/test_shell.py), so the mode menu says
so when the session has it, and keeps "(no asking)" when it has not; the approval box reads as a
sentence ("juniper wants Bash to run a shell command in /folder:") while other tools keep theirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakemodel import FakeModel
from personas import make_persona, use_model
from PySide6.QtCore import Qt
from ui_helpers import make_bridge

WAIT = 15_000


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


def open_chat(qtbot, app_context, bridge):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.chat import ChatWindow

    w = ChatWindow(app_context, bridge, "juniper")
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.ready, timeout=WAIT):
        pass
    return w


def mode_labels(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [w.mode_box.itemText(i) for i in range(w.mode_box.count())]


def test_without_the_shell_accept_edits_says_no_asking(qtbot, app_context, bridge, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "hi"}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge)
    assert mode_labels(w) == ["Ask before changes", "Plan only (no changes)", "Accept edits (no asking)"]


def test_with_the_shell_the_mode_menu_says_bash_still_asks_and_the_approval_reads_naturally(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch, tmp_path: Path) -> None:
    make_persona(app_context)
    ws = tmp_path / "work"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))
    app_context.plugins.enable("shell")
    call = json.dumps({"command": "echo hi > notes.txt"})
    with FakeModel([{"tool_calls": [("Bash", call)]}, {"text": "Not run, then."}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge)
        assert mode_labels(w)[2] == "Accept edits (Bash still asks)"
        w.mode_box.setCurrentIndex(2)
        w.mode_box.activated.emit(2)
        qtbot.waitUntil(lambda: "from your next message on" in w.status.text(), timeout=WAIT)
        assert w.status.text() == "Accept edits (Bash still asks): from your next message on."
        w.input.setPlainText("make a note")
        with qtbot.waitSignal(w.approval_shown, timeout=WAIT):
            w.send_button.click()  # asked even in accept-edits
        lines = w.approval_text.text().splitlines()
        assert lines[0] == f"juniper wants Bash to run a shell command in {ws}:"
        assert "  command = echo hi > notes.txt" in lines
        with qtbot.waitSignal(w.turn_finished, timeout=WAIT):
            qtbot.keyClick(w.deny_button, Qt.Key.Key_Return)
    assert not (ws / "notes.txt").exists()
