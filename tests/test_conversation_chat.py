"""The chat keeps its conversation as it happens and continues a kept one (app/chat.py
ChatSession on the real runtime, the real session service, the files pack and the loopback fake
model); a secret the model echoes is kept masked (real GNOME keyring)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, said
from personas import make_persona, use_model, use_workspace


@pytest.fixture
def workspace(app_context, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    return use_workspace(app_context, tmp_path / "ws")


class Answers:
    """The person's answers to approval prompts, in order."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []

    async def __call__(self, request: Any) -> bool:
        self.asked.append(request)
        return self.answers.pop(0)


def session(app: Any, ask: Any = None, conversation: str | None = None, persona: str = "juniper") -> Any:
    from hearthside.app.chat import ChatSession

    return ChatSession(app, persona, ask or Answers(), conversation)


def kinds(app: Any, cid: str) -> list[tuple[str, Any]]:
    conv = app.conversations.open(cid)
    return [(r.kind.value, r.ok) for r in conv.records]


def test_every_message_tool_call_approval_and_alert_is_kept_as_it_happens(  # type: ignore[no-untyped-def]
        app_context, monkeypatch, workspace) -> None:
    make_persona(app_context)
    write = json.dumps({"path": "notes.txt", "content": "milk"})
    with FakeModel([{"tool_calls": [("Write", write)]}, {"text": "Written."},
                    {"tool_calls": [("Write", write)]}, {"text": "Not written then."}]) as fm:
        use_model(monkeypatch, fm)
        chat = session(app_context, Answers(True, False))
        rt = app_context.runtime
        rt.run(chat.open(alert="The 3pm sync starts in 10 minutes."), timeout=30)
        cid = chat.conversation_id
        assert kinds(app_context, cid) == [("alert", None)]  # kept at once, before any word
        first = rt.run(chat.send("Note the milk", lambda _p: None), timeout=30)
        assert first.result.text == "Written."
        rt.run(chat.send("And again", lambda _p: None), timeout=30)
        rt.run(chat.close(), timeout=10)
    assert kinds(app_context, cid) == [("alert", None), ("user", None), ("approval", True), ("tool", True),
                                       ("assistant", None), ("user", None), ("approval", False),
                                       ("tool", False), ("assistant", None)]
    recs = app_context.conversations.open(cid).records
    assert recs[3].tool == "Write" and "notes.txt" in recs[3].detail and "\n" not in recs[3].text
    assert "did not allow" in recs[7].text
    assert "notes.txt" in recs[2].detail
    meta = app_context.conversations.meta(cid)
    assert meta.title == "The 3pm sync starts in 10 minutes." and meta.messages == 9


def test_continuing_sends_the_earlier_messages_and_goes_on_in_the_same_file(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    make_persona(app_context)
    with FakeModel([{"text": "Miso is a lovely name."}, {"text": "Your cat is Miso."}, {"text": "new"}]) as fm:
        use_model(monkeypatch, fm)
        rt = app_context.runtime
        one = session(app_context)
        rt.run(one.open(), timeout=30)
        rt.run(one.send("My cat is called Miso", lambda _p: None), timeout=30)
        rt.run(one.close(), timeout=10)
        cid = one.conversation_id

        two = session(app_context, conversation=cid)
        notes = rt.run(two.open(), timeout=30)
        assert any(n.startswith("Continuing \u201cMy cat is called Miso\u201d") for n in notes)
        rt.run(two.send("What is my cat called?", lambda _p: None), timeout=30)
        sent = fm.requests[1]["messages"]
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
        assert sent[1]["content"] == "My cat is called Miso" and sent[2]["content"] == "Miso is a lovely name."
        assert said(sent[3]["content"]) == "What is my cat called?"
        assert two.conversation_id == cid

        rt.run(two.new_conversation(), timeout=30)  # New chat: the model forgets, a new file
        rt.run(two.send("Hello", lambda _p: None), timeout=30)
        assert [m["role"] for m in fm.requests[2]["messages"]] == ["system", "user"]
        assert two.conversation_id != cid
        rt.run(two.close(), timeout=10)
    assert app_context.conversations.meta(cid).messages == 4
    assert [m.id.value for m in app_context.conversations.list("juniper")] == [two.conversation_id, cid]


def test_continuing_a_long_conversation_sends_what_fits_with_a_note(  # type: ignore[no-untyped-def]
        app_context, monkeypatch) -> None:
    make_persona(app_context)
    app_context.settings.set("conversations.context_chars", 400)
    rec = app_context.conversations.recorder("juniper")
    for i in range(20):
        rec.user(f"question {i:02d} " + "q" * 40)
        rec.reply(f"answer {i:02d} " + "a" * 40)
    with FakeModel([{"text": "ok"}]) as fm:
        use_model(monkeypatch, fm)
        chat = session(app_context, conversation=rec.id.value)
        rt = app_context.runtime
        notes = rt.run(chat.open(), timeout=30)
        rt.run(chat.send("go on", lambda _p: None), timeout=30)
        rt.run(chat.close(), timeout=10)
    history = fm.requests[0]["messages"][1:-1]
    text = "\n".join(m["content"] for m in history)
    assert history[0]["content"].startswith("[") and "earlier messages of this conversation were left out" in text
    assert "answer 19" in text and "question 00" not in text
    assert sum(len(m["content"]) for m in history) <= 400
    assert any("left out to fit the model's context" in n for n in notes)


def test_an_unknown_or_foreign_conversation_cannot_be_continued(app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hearthside.core.errors import ErrorKind, ServiceError

    make_persona(app_context)
    make_persona(app_context, "other")
    theirs = app_context.conversations.recorder("other")
    theirs.user("private to other")
    with FakeModel([{"text": "ok"}]) as fm:
        use_model(monkeypatch, fm)
        rt = app_context.runtime
        for cid, kind in (("20260101-000000-00000000", ErrorKind.NOT_FOUND), (theirs.id.value, ErrorKind.INVALID),
                          ("nope", ErrorKind.INVALID)):
            with pytest.raises(ServiceError) as err:
                rt.run(session(app_context, conversation=cid).open(), timeout=30)
            assert err.value.kind is kind
    assert fm.requests == []


@pytest.mark.keyring
def test_a_secret_echoed_by_the_model_is_kept_masked(  # type: ignore[no-untyped-def]
        app_context, monkeypatch, secret_service) -> None:
    make_persona(app_context)
    key = f"sk-conv-{uuid.uuid4().hex}"
    with FakeModel([{"text": f"Your key is {key}, keep it safe."}]) as fm:
        for k, v in fm.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("HEARTHSIDE_MODEL_API_KEY", raising=False)
        app_context.model.set_key(key)  # the real keyring
        chat = session(app_context)
        rt = app_context.runtime
        rt.run(chat.open(), timeout=30)
        rt.run(chat.send(f"is {key} my key?", lambda _p: None), timeout=30)
        rt.run(chat.close(), timeout=10)
        assert fm.headers[0].get("authorization") == f"Bearer {key}"  # it really was the key in use
    files = [p for p in app_context.conversations.root.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert key.encode() not in p.read_bytes(), p
    recs = app_context.conversations.open(chat.conversation_id).records
    assert recs[0].text == "is ******** my key?" and "Your key is ********" in recs[1].text


def test_the_chat_window_opened_for_a_check_in_keeps_the_alert(qtbot, app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.chat import ChatWindow
    from ui_helpers import make_bridge

    make_persona(app_context)
    bridges = make_bridge(app_context)
    bridge = next(bridges)
    try:
        with FakeModel([{"text": "It starts at 3."}]) as fm:
            use_model(monkeypatch, fm)
            w = ChatWindow(app_context, bridge, "juniper", "The 3pm sync starts soon.")
            qtbot.addWidget(w)
            with qtbot.waitSignal(w.ready, timeout=15_000):
                w.show()
            w.input.setPlainText("When exactly?")
            with qtbot.waitSignal(w.turn_finished, timeout=15_000):
                w.send_button.click()
            assert w.session is not None
            cid = w.session.conversation_id
        conv = app_context.conversations.open(cid)
        assert [(r.kind.value, r.text) for r in conv.records] == [
            ("alert", "The 3pm sync starts soon."), ("user", "When exactly?"), ("assistant", "It starts at 3.")]
    finally:
        next(bridges, None)
