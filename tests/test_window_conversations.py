"""The chat window's sidebar of kept conversations and the Settings' conversations section,
against the real ConversationService (real files in the test's data dir), the real session
service and the loopback fake model, in real Qt (offscreen)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, said
from personas import make_persona, use_model
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from ui_helpers import make_bridge

WAIT = 15_000
DAY = 86400.0


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


def stored(app: Any, first: str, reply: str, at: float, persona: str = "juniper", more: tuple[str, ...] = ()) -> str:
    """A kept conversation written at ``at`` (as if it happened then): the person's first message,
    the reply, and ``more`` exchanges of (message, reply)."""
    from hearthside.core.conversations import ConversationId, Header, Kind, Record

    cid = ConversationId.new(at)
    recs = [Record(Kind.USER, at, first), Record(Kind.ASSISTANT, at + 1, reply)]
    for i, text in enumerate(more):
        recs.append(Record(Kind.USER if i % 2 == 0 else Kind.ASSISTANT, at + 2 + i, text))
    app.conversations.append(persona, cid, recs, Header(cid, persona, at))
    return cid.value


def open_chat(qtbot, app_context, bridge, persona: str = "juniper", alert: str | None = None,  # type: ignore[no-untyped-def]
              listed: int | None = None):
    from hearthside.ui.windows.chat import ChatWindow

    w = ChatWindow(app_context, bridge, persona, alert)
    qtbot.addWidget(w)
    w.show()
    with wait_done(qtbot, w.sidebar, "listed"), qtbot.waitSignal(w.ready, timeout=WAIT):
        pass  # the session is open and the sidebar has listed the persona's conversations
    if listed is not None:
        assert w.sidebar.list.count() == listed and w.sidebar.isEnabled()
    return w


def say(qtbot, w, text: str):  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: w.send_button.isEnabled(), timeout=WAIT)
    w.input.setPlainText(text)
    with qtbot.waitSignal(w.turn_finished, timeout=WAIT) as sig:
        w.send_button.click()
    return sig.args[0]


def choose(qtbot, w, row: int) -> None:  # type: ignore[no-untyped-def]
    """Click row ``row`` of the sidebar and wait until that conversation can be written to."""
    bar = w.sidebar.list
    item = bar.item(row)
    rect = bar.visualItemRect(item)
    qtbot.mouseClick(bar.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: w.showing == item.data(Qt.ItemDataRole.UserRole), timeout=WAIT)


def wait_done(qtbot, sidebar, what: str):  # type: ignore[no-untyped-def]
    return qtbot.waitSignal(sidebar.done, timeout=WAIT, check_params_cb=lambda s: s == what)


# --- listing ------------------------------------------------------------------------------

def test_the_sidebar_lists_kept_conversations_newest_first_titled_from_the_first_message(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge) -> None:
    make_persona(app_context)
    now = time.time()
    stored(app_context, "Plan the garden beds for spring", "Tomatoes first.", now - 3 * DAY)
    stored(app_context, "What should I cook tonight?", "Miso soup.", now - 60)
    stored(app_context, "Remind me about the dentist", "Tuesday at 9.", now - DAY)
    stored(app_context, "<img src=file:///etc/passwd> **bold**", "ok", now - 5 * DAY)
    w = open_chat(qtbot, app_context, bridge, listed=4)
    assert w.sidebar.titles() == ["What should I cook tonight?", "Remind me about the dentist",
                                  "Plan the garden beds for spring", "<img src=file:///etc/passwd> **bold**"]
    assert "2 messages" in w.sidebar.list.item(0).text()
    assert not w.sidebar.empty.isVisible()
    assert w.transcript.toPlainText() == ""  # a new conversation until one is chosen


def test_a_persona_without_conversations_shows_a_friendly_line(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.conversations import EMPTY

    make_persona(app_context)
    w = open_chat(qtbot, app_context, bridge, listed=0)
    assert w.sidebar.empty.isVisible() and w.sidebar.empty.text() == EMPTY
    assert not w.sidebar.list.isVisible()
    assert not w.sidebar.delete_button.isEnabled() and not w.sidebar.export_button.isEnabled()


def test_a_message_makes_a_new_conversation_in_the_list_and_new_chat_starts_another(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    with FakeModel([{"text": "Hello!"}, {"text": "Fresh start."}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, listed=0)
        say(qtbot, w, "Good morning, Juniper")
        qtbot.waitUntil(lambda: w.sidebar.titles() == ["Good morning, Juniper"], timeout=WAIT)
        first = w.showing
        assert w.sidebar.selected_id() == first  # the open conversation is the selected one
        w.sidebar.new_button.click()
        qtbot.waitUntil(lambda: w.transcript.toPlainText() == "" and w.send_button.isEnabled(), timeout=WAIT)
        assert w.sidebar.selected_id() == ""
        say(qtbot, w, "Something else entirely")
        qtbot.waitUntil(lambda: w.sidebar.titles() == ["Something else entirely", "Good morning, Juniper"],
                        timeout=WAIT)
    assert [m["role"] for m in fm.requests[1]["messages"]] == ["system", "user"]  # the model forgot
    assert w.showing != first


# --- continuing --------------------------------------------------------------------------

def test_choosing_a_conversation_shows_it_formatted_and_continuing_sends_the_earlier_messages(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    now = time.time()
    stored(app_context, "Newer one", "Hi.", now - 10)
    stored(app_context, "My cat is called Miso", "What a **lovely** name.", now - DAY)
    with FakeModel([{"text": "Your cat is Miso."}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, listed=2)
        choose(qtbot, w, 1)
        qtbot.waitUntil(lambda: "juniper: What a lovely name." in w.transcript.toPlainText(), timeout=WAIT)
        assert "You: My cat is called Miso" in w.transcript.toPlainText()
        qtbot.waitUntil(lambda: w.status.text().startswith("Continuing \u201cMy cat is called Miso\u201d"),
                        timeout=WAIT)
        out = say(qtbot, w, "What is my cat called?")
    assert out.result.text == "Your cat is Miso."
    sent = fm.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "My cat is called Miso" and sent[2]["content"] == "What a **lovely** name."
    assert said(sent[3]["content"]) == "What is my cat called?"
    qtbot.waitUntil(lambda: w.sidebar.titles() == ["My cat is called Miso", "Newer one"], timeout=WAIT)  # moved up
    assert app_context.conversations.meta(w.showing).messages == 4


def test_copy_on_a_stored_reply_copies_its_original_markdown(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    from test_window_chat_markdown import click_text

    make_persona(app_context)
    stored(app_context, "Tea?", "Yes: **green** tea at `4pm`.", time.time() - 100)
    w = open_chat(qtbot, app_context, bridge, listed=1)
    choose(qtbot, w, 0)
    qtbot.waitUntil(lambda: "Copy reply" in w.transcript.toPlainText(), timeout=WAIT)
    click_text(qtbot, w.transcript, "Copy reply")
    qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() == "Yes: **green** tea at `4pm`.", timeout=WAIT)


def test_a_read_only_conversation_is_shown_with_its_problem_cannot_be_continued_but_exports_and_deletes(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch, tmp_path: Path) -> None:
    from hearthside.core.conversations import FORMAT_VERSION

    make_persona(app_context)
    cid = stored(app_context, "From the future", "A reply.", time.time() - 100)
    with (app_context.conversations.root / "juniper" / f"{cid}.jsonl").open("ab") as fh:
        fh.write(json.dumps({"v": FORMAT_VERSION + 1, "k": "hologram", "t": 9}).encode() + b"\n")
    with FakeModel([{"text": "never asked"}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, listed=1)
        assert w.sidebar.list.item(0).text().split("\n")[1].startswith("read-only")
        bar = w.sidebar.list
        qtbot.mouseClick(bar.viewport(), Qt.MouseButton.LeftButton, pos=bar.visualItemRect(bar.item(0)).center())
        qtbot.waitUntil(lambda: "newer Hearthside" in w.status.text(), timeout=WAIT)
        assert "A reply." in w.transcript.toPlainText()
        assert w.input.isReadOnly() and "newer Hearthside" in w.input.placeholderText()
        assert not w.send_button.isEnabled() and not w.sidebar.rename_button.isEnabled()
        w.input.setPlainText("try anyway")
        w.send()  # refused: nothing is sent, nothing is appended
        assert fm.requests == []
        target = tmp_path / "future.md"
        with wait_done(qtbot, w.sidebar, "exported"):
            w.export_to(str(target))
        assert "From the future" in target.read_text()
        with wait_done(qtbot, w.sidebar, "deleted"):
            w.sidebar.delete_button.click()
        qtbot.waitUntil(lambda: w.sidebar.list.count() == 0, timeout=WAIT)
        assert not w.input.isReadOnly()  # the deleted one was open: a new conversation now
    assert app_context.conversations.list("juniper") == []


# --- rename, delete, undo -------------------------------------------------------------------

def test_rename_by_double_click_shows_the_new_title_as_text_and_an_empty_one_is_refused(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge) -> None:
    make_persona(app_context)
    cid = stored(app_context, "asdf", "?", time.time() - 100)
    w = open_chat(qtbot, app_context, bridge, listed=1)
    bar = w.sidebar.list
    pos = bar.visualItemRect(bar.item(0)).center()
    qtbot.mouseClick(bar.viewport(), Qt.MouseButton.LeftButton, pos=pos)  # a double-click: press, release, then
    qtbot.mouseDClick(bar.viewport(), Qt.MouseButton.LeftButton, pos=pos)  # the double-click event
    qtbot.waitUntil(lambda: w.sidebar.rename_field.isVisible(), timeout=WAIT)
    assert w.sidebar.rename_field.text() == "asdf"
    w.sidebar.rename_field.setText("   ")
    with wait_done(qtbot, w.sidebar, "failed"):
        qtbot.keyClick(w.sidebar.rename_field, Qt.Key.Key_Return)
    assert w.sidebar.message.text() == "A conversation's title cannot be empty." and w.sidebar.titles() == ["asdf"]
    w.sidebar.rename_field.setText("<b>Holiday</b> plans & ideas")
    with wait_done(qtbot, w.sidebar, "renamed"):
        qtbot.keyClick(w.sidebar.rename_field, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.sidebar.titles() == ["<b>Holiday</b> plans & ideas"], timeout=WAIT)
    assert not w.sidebar.rename_field.isVisible()
    assert app_context.conversations.meta(cid).title == "<b>Holiday</b> plans & ideas"
    # the context menu offers the same
    w.sidebar._menu(bar.visualItemRect(bar.item(0)).center())
    from PySide6.QtWidgets import QMenu

    menu = next(m for m in w.sidebar.findChildren(QMenu) if m.isVisible())
    assert [a.text() for a in menu.actions()] == ["Open", "Rename…", "Export…", "Delete"]
    menu.close()


def test_delete_offers_undo_which_brings_the_conversation_back(qtbot, app_context, bridge) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    now = time.time()
    keep = stored(app_context, "Keep me", "ok", now - 10)
    stored(app_context, "Delete me", "ok", now - 100)
    w = open_chat(qtbot, app_context, bridge, listed=2)
    w.sidebar.list.setCurrentRow(1)
    with wait_done(qtbot, w.sidebar, "deleted"):
        w.sidebar.delete_button.click()
    qtbot.waitUntil(lambda: w.sidebar.titles() == ["Keep me"], timeout=WAIT)
    assert w.sidebar.undo_bar.isVisible() and w.sidebar.undo_text.text() == "Conversation deleted."
    with wait_done(qtbot, w.sidebar, "undone"):
        w.sidebar.undo_button.click()
    qtbot.waitUntil(lambda: w.sidebar.titles() == ["Keep me", "Delete me"], timeout=WAIT)
    assert not w.sidebar.undo_bar.isVisible()
    assert [m.title for m in app_context.conversations.list("juniper")] == ["Keep me", "Delete me"]
    assert app_context.conversations.meta(keep).title == "Keep me"


def test_undo_after_the_undo_window_says_why_and_the_conversation_stays_deleted(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    stored(app_context, "Gone for good", "ok", time.time() - 100)
    w = open_chat(qtbot, app_context, bridge, listed=1)
    w.sidebar.list.setCurrentRow(0)
    with wait_done(qtbot, w.sidebar, "deleted"):
        w.sidebar.delete_button.click()
    svc = app_context.conversations
    monkeypatch.setattr(svc, "clock", lambda: time.time() + 11)  # the 10 s have passed
    with wait_done(qtbot, w.sidebar, "failed"):
        w.sidebar.undo_button.click()
    assert "cannot be brought back" in w.sidebar.message.text()
    assert not w.sidebar.undo_bar.isVisible() and svc.list("juniper") == []


def test_the_undo_bar_goes_away_when_the_undo_window_ends(qtbot, app_context, bridge, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    stored(app_context, "Short window", "ok", time.time() - 100)
    w = open_chat(qtbot, app_context, bridge, listed=1)
    monkeypatch.setattr(app_context.conversations, "clock", lambda: time.time() - 9.7)  # ends in 0.3 s
    w.sidebar.list.setCurrentRow(0)
    with wait_done(qtbot, w.sidebar, "deleted"):
        w.sidebar.delete_button.click()
    assert w.sidebar.undo_bar.isVisible()
    with wait_done(qtbot, w.sidebar, "forgotten"):
        qtbot.waitUntil(lambda: not w.sidebar.undo_bar.isVisible(), timeout=WAIT)
    assert w.sidebar.last_deleted is None
    assert not any((app_context.conversations.root / ".trash").rglob("*.jsonl"))  # gone for good now


# --- search --------------------------------------------------------------------------------

def test_search_finds_a_word_from_an_old_conversation_and_choosing_the_hit_opens_it(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    now = time.time()
    stored(app_context, "Holiday ideas", "Lisbon or Porto.", now - 90 * DAY,
           more=("And where to stay?", "A small pension near the azulejo museum."))
    for i in range(5):
        stored(app_context, f"Chat number {i}", "Nothing special.", now - i * 60)
    with FakeModel([{"text": "The museum is closed on Mondays."}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, listed=6)
        calls: list[str] = []
        real = app_context.conversations.search
        monkeypatch.setattr(app_context.conversations, "search", lambda p, q, limit=20: calls.append(q) or real(p, q))
        with wait_done(qtbot, w.sidebar, "searched"):
            for ch in "azulejo":  # typed key by key: one search once the typing stops
                qtbot.keyClick(w.sidebar.search, ch)
        assert [q for q in calls if q] == ["azulejo"]  # ("" is the index built ahead of the first search)
        assert w.sidebar.titles() == ["Holiday ideas"]
        assert "azulejo museum" in w.sidebar.list.item(0).text().split("\n")[1]  # the snippet
        choose(qtbot, w, 0)
        qtbot.waitUntil(lambda: "azulejo" in w.transcript.toPlainText(), timeout=WAIT)
        say(qtbot, w, "Is it open on Monday?")
        assert any("azulejo" in m["content"] for m in fm.requests[0]["messages"])
        with wait_done(qtbot, w.sidebar, "searched"):
            w.sidebar.search.setText("quokka")
        assert w.sidebar.list.count() == 0 and w.sidebar.empty.text() == "Nothing found in the conversations."
        with wait_done(qtbot, w.sidebar, "searched"):
            w.sidebar.search.clear()
        assert w.sidebar.list.count() == 6


# --- export ----------------------------------------------------------------------------------

def test_export_writes_markdown_to_the_file_chosen_in_the_dialog(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, tmp_path: Path) -> None:
    make_persona(app_context)
    stored(app_context, "Packing list", "- passport\n- **charger**", time.time() - 100)
    w = open_chat(qtbot, app_context, bridge, listed=1)
    target = tmp_path / "packing.md"
    asked: list[str] = []

    def dialog(_parent: Any, _caption: str, suggested: str) -> str:
        asked.append(suggested)
        return str(target)

    w.sidebar.save_dialog = dialog
    w.sidebar.list.setCurrentRow(0)
    with wait_done(qtbot, w.sidebar, "exported"):
        w.sidebar.export_button.click()
    assert asked and asked[0].endswith("Packing-list.md")
    text = target.read_text()
    assert "Packing list" in text and "- **charger**" in text
    assert w.sidebar.message.text() == f"Saved to {target}."
    # an existing file is not replaced through the seam unless asked; the sentence says why
    target.write_text("mine")
    with wait_done(qtbot, w.sidebar, "failed"):
        w.sidebar.export_to(w.sidebar.selected_id(), str(target))
    assert target.read_text() == "mine" and "exists already" in w.sidebar.message.text()
    w.sidebar.save_dialog = lambda *_a: ""  # Cancel in the dialog: nothing written, nothing said
    w.sidebar.export_button.click()
    assert target.read_text() == "mine"


# --- persona switch and check-in alerts ------------------------------------------------------

def test_switching_persona_refills_the_sidebar(qtbot, app_context, bridge, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    make_persona(app_context, "rowan", {"SOUL.md": "Rowan is brisk."})
    stored(app_context, "Juniper's chat", "ok", time.time() - 100)
    stored(app_context, "Rowan's chat", "ok", time.time() - 100, persona="rowan")
    with FakeModel([{"text": "x"}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, listed=1)
        assert w.sidebar.titles() == ["Juniper's chat"]
        qtbot.waitUntil(lambda: w.persona_box.count() == 2, timeout=WAIT)
        index = w.persona_box.findText("rowan")
        w.persona_box.setCurrentIndex(index)
        with qtbot.waitSignal(w.ready, timeout=WAIT):
            w.persona_box.activated.emit(index)
        qtbot.waitUntil(lambda: w.sidebar.titles() == ["Rowan's chat"], timeout=WAIT)


def test_a_check_in_alert_opened_as_a_chat_starts_a_conversation_titled_from_it(  # type: ignore[no-untyped-def]
        qtbot, app_context, bridge, monkeypatch) -> None:
    make_persona(app_context)
    stored(app_context, "Older chat", "ok", time.time() - 100)
    with FakeModel([{"text": "x"}]) as fm:
        use_model(monkeypatch, fm)
        w = open_chat(qtbot, app_context, bridge, alert="The 3pm sync starts in 10 minutes.")
        qtbot.waitUntil(lambda: w.sidebar.titles() == ["The 3pm sync starts in 10 minutes.", "Older chat"],
                        timeout=WAIT)
        assert w.sidebar.selected_id() == w.session.conversation_id


# --- settings ----------------------------------------------------------------------------------

class Confirm:
    """Answers the section's confirmation (the text is kept to check what it says)."""

    def __init__(self, yes: bool) -> None:
        self.yes = yes
        self.texts: list[str] = []

    def __call__(self, _parent: Any, _title: str, text: str, _yes: str, on_yes: Any) -> None:
        self.texts.append(text)
        if self.yes:
            on_yes()


@pytest.fixture
def settings(qtbot, app_context, bridge):  # type: ignore[no-untyped-def]
    def make():  # type: ignore[no-untyped-def]
        from hearthside.ui.windows.settings import SettingsWindow

        w = SettingsWindow(app_context, bridge)
        qtbot.addWidget(w)
        box = w.conversations_box
        with qtbot.waitSignal(box.done, timeout=WAIT):
            w.show()
        return box
    return make


def test_settings_keep_conversations_asks_with_the_count_then_removes_the_older_ones(  # type: ignore[no-untyped-def]
        qtbot, app_context, settings) -> None:
    make_persona(app_context)
    now = time.time()
    stored(app_context, "Last week", "ok", now - 7 * DAY)
    stored(app_context, "Two months ago", "ok", now - 60 * DAY)
    stored(app_context, "Last year", "ok", now - 400 * DAY)
    box = settings()
    assert box.keep.currentText() == "Forever" and app_context.conversations.keep_days() == 0
    assert [box.keep.itemText(i) for i in range(box.keep.count())] == ["Forever", "30 days", "90 days", "1 year"]
    box.confirm = no = Confirm(False)
    box.keep.setCurrentText("30 days")
    box.keep_btn.click()
    qtbot.waitUntil(lambda: bool(no.texts), timeout=WAIT)
    assert "removes 2 conversations older than that" in no.texts[0] and "memory" in no.texts[0]
    assert len(app_context.conversations.list("juniper")) == 3 and app_context.conversations.keep_days() == 0
    box.confirm = yes = Confirm(True)
    with qtbot.waitSignal(box.done, timeout=WAIT, check_params_cb=lambda s: s == "kept"):
        box.keep_btn.click()
    assert [m.title for m in app_context.conversations.list("juniper")] == ["Last week"]
    assert app_context.conversations.keep_days() == 30
    qtbot.waitUntil(lambda: box.message.text() == "Conversations are kept for 30 days.", timeout=WAIT)
    assert len(yes.texts) == 1
    box.keep.setCurrentText("Forever")  # nothing to remove: no question
    with qtbot.waitSignal(box.done, timeout=WAIT, check_params_cb=lambda s: s == "kept"):
        box.keep_btn.click()
    assert app_context.conversations.keep_days() == 0 and len(yes.texts) == 1


def test_settings_delete_all_of_a_persona_confirms_with_the_count_and_leaves_memory(  # type: ignore[no-untyped-def]
        qtbot, app_context, settings) -> None:
    make_persona(app_context)
    make_persona(app_context, "rowan")
    for i in range(3):
        stored(app_context, f"Chat {i}", "ok", time.time() - 100 - i)
    stored(app_context, "Rowan's", "ok", time.time() - 100, persona="rowan")
    app_context.memory.store("juniper").remember("cat", "Miso")
    box = settings()
    assert [box.persona.itemText(i) for i in range(box.persona.count())] == [
        "juniper (3 conversations)", "rowan (1 conversation)"]
    assert box.delete_btn.text() == "Delete all conversations of juniper…"
    box.confirm = no = Confirm(False)
    box.delete_btn.click()
    assert no.texts == [("Delete all 3 conversations of juniper? This cannot be undone. "
                         "What juniper has learned (its memory) is not touched.")]
    assert len(app_context.conversations.list("juniper")) == 3
    box.confirm = Confirm(True)
    with qtbot.waitSignal(box.done, timeout=WAIT, check_params_cb=lambda s: s == "deleted"):
        box.delete_btn.click()
    assert app_context.conversations.list("juniper") == []
    assert len(app_context.conversations.list("rowan")) == 1
    trash = app_context.conversations.root / ".trash"
    assert not any(trash.rglob("*.jsonl"))  # gone for good at once: the confirmation said so
    assert app_context.memory.store("juniper").recall("cat").value == "Miso"
    qtbot.waitUntil(lambda: box.message.text() == "Deleted 3 conversations of juniper; its memory is kept.",
                    timeout=WAIT)
    assert [box.persona.itemText(i) for i in range(box.persona.count())] == ["rowan (1 conversation)"]


def test_a_removed_personas_conversations_are_listed_under_its_old_name_and_can_be_deleted(  # type: ignore[no-untyped-def]
        qtbot, app_context, settings) -> None:
    import shutil

    folder = make_persona(app_context, "willow")
    stored(app_context, "Before the move", "ok", time.time() - 100, persona="willow")
    shutil.rmtree(folder)
    box = settings()
    assert [box.persona.itemText(i) for i in range(box.persona.count())] == ["willow (1 conversation, removed)"]
    box.confirm = Confirm(True)
    with qtbot.waitSignal(box.done, timeout=WAIT, check_params_cb=lambda s: s == "deleted"):
        box.delete_btn.click()
    assert app_context.conversations.list("willow") == []
    qtbot.waitUntil(lambda: box.none.isVisible() and not box.delete_btn.isEnabled(), timeout=WAIT)


def test_no_conversations_yet_says_so_in_settings(qtbot, app_context, settings) -> None:  # type: ignore[no-untyped-def]
    box = settings()
    assert box.none.isVisible() and box.none.text() == "No persona has kept conversations yet."
    assert not box.delete_btn.isEnabled()

