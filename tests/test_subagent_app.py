"""Specialists in the app: the session wiring, a check-in that asks one, the window's approval."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fakemodel import FakeModel, by_system
from hearthside.app.chat import ApprovalRequest, ChatSession
from hearthside.app.heartbeat import HeartbeatService
from hearthside.app.notify import LogNotifier
from hearthside.core.agentdefs import AgentDef, AgentDefListing
from personas import make_persona, use_model

PERSONA = "Be brief."  # juniper's AGENTS.md: in the persona's system prompt, not in a specialist's


def run(coro: Any, timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Listings:
    """An in-memory specialist source with the AgentService's shape (``listing(persona)``)."""

    def __init__(self, *defs: AgentDef, notes: tuple[str, ...] = ()) -> None:
        self.value = AgentDefListing(tuple(sorted(defs, key=lambda d: d.name)), notes)

    def listing(self, persona: str) -> AgentDefListing:
        return self.value

    def memories(self, persona: str, listing: AgentDefListing) -> tuple[dict[str, str], tuple[str, ...]]:
        return {}, ()  # no memory files: tests/test_agent_memory.py reads real ones


def with_specialists(app: Any, *defs: AgentDef, notes: tuple[str, ...] = ()) -> None:
    app.__dict__["agents"] = Listings(*defs, notes=notes)  # what app.agents would build from files


def spec(name: str, **kw: Any) -> AgentDef:
    return AgentDef(name, kw.pop("description", f"the {name} specialist"),
                    kw.pop("body", f"You are {name.upper()}-MARK."), **kw)


def call(agent: str, task: str = "look into it") -> tuple[str, str]:
    return ("Subagent", json.dumps({"agent": agent, "task": task}))


def names(req: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in req.get("tools") or [])


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def marked(fm: FakeModel, marker: str) -> list[dict[str, Any]]:
    return [r for r in fm.requests if marker in r["messages"][0]["content"]]


def test_a_persona_without_specialists_has_no_subagent_tool(app_context) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    assert "Subagent" not in [t.spec.name for t in app_context.sessions.prepare("juniper").snapshot.tools]
    with_specialists(app_context)
    assert "Subagent" not in [t.spec.name for t in app_context.sessions.prepare("juniper").snapshot.tools]


def test_a_chat_session_hands_a_task_to_a_specialist_and_hears_the_listing_notes(app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with_specialists(app_context, spec("researcher"), notes=("specialist 'x' is left out: it has no name",))
    script = by_system({"RESEARCHER-MARK": {"text": "Lisbon is sunny today."},
                        PERSONA: [{"tool_calls": [call("researcher", "weather in Lisbon")]}, {"text": "Sunny!"}]})
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        prepared = app_context.sessions.prepare("juniper")
        agent = app_context.sessions.agent(prepared, app_context.sessions.model())
        res = run(agent.send("weather?"))
        run(agent.model.aclose())
    assert res.text == "Sunny!"
    assert "specialist 'x' is left out: it has no name" in prepared.notes
    assert tool_messages(marked(fm, PERSONA)[-1]) == ["Lisbon is sunny today."]
    child = marked(fm, "RESEARCHER-MARK")[0]
    assert "working for the persona juniper" in child["messages"][0]["content"]
    assert "Subagent" not in names(child) and "memory_recall" in names(child)


def test_a_specialist_naming_another_model_id_uses_it_and_an_alias_falls_back(app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with_specialists(app_context, spec("fast", model="tiny-model"), spec("claude", model="haiku"))
    script = by_system({"FAST-MARK": {"text": "fast answer"}, "CLAUDE-MARK": {"text": "alias answer"},
                        PERSONA: [{"tool_calls": [call("fast"), call("claude")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        prepared = app_context.sessions.prepare("juniper")
        agent = app_context.sessions.agent(prepared, app_context.sessions.model())
        run(agent.send("go"))
        run(agent.model.aclose())
    assert marked(fm, "FAST-MARK")[0]["model"] == "tiny-model"
    assert marked(fm, "CLAUDE-MARK")[0]["model"] == "fake-model"
    fast, alias = tool_messages(marked(fm, PERSONA)[-1])
    assert fast == "fast answer"
    assert alias == ("alias answer\n\n(the model 'haiku' its definition names is not available here; "
                     "the persona's model answered)")


def test_a_check_in_may_ask_a_read_only_specialist_which_gets_read_only_tools(app_context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with_specialists(app_context, spec("calendar"), spec("editor", permission_mode="acceptEdits"))
    script = by_system({"CALENDAR-MARK": {"text": "The 3pm sync moved to 4pm."},
                        PERSONA: [{"tool_calls": [call("calendar", "what is on today?")]},
                                  {"text": "Heads up: the 3pm sync moved to 4pm."}]})
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        svc = HeartbeatService(app_context, notifier=LogNotifier(), history=app_context.notifications)
        out = run(svc.run("juniper"))
    assert out.status == "notified" and "4pm" in out.text
    first = marked(fm, PERSONA)[0]
    sub = next(t for t in first["tools"] if t["function"]["name"] == "Subagent")["function"]["description"]
    assert "- calendar:" in sub and "editor" not in sub  # a writer is not offered in a check-in
    child = marked(fm, "CALENDAR-MARK")[0]
    assert "memory_remember" not in names(child) and "memory_recall" in names(child)  # read-only only
    assert tool_messages(marked(fm, PERSONA)[-1]) == ["The 3pm sync moved to 4pm."]


def test_the_windows_approval_names_the_specialist_that_asks(app_context, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    ws = tmp_path / "ws"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))
    with_specialists(app_context, spec("scribe"))
    write = json.dumps({"path": "note.txt", "content": "hi"})
    script = by_system({"SCRIBE-MARK": [{"tool_calls": [("Write", write)]}, {"text": "I was not allowed."}],
                        PERSONA: [{"tool_calls": [call("scribe", "write a note")]}, {"text": "ok"}]})
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    async def scenario() -> Any:
        chat = ChatSession(app_context, "juniper", ask)
        await chat.open()
        out = await chat.send("write a note", lambda piece: None)
        await chat.close()
        return out

    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        out = run(scenario())
    assert out.result is not None and out.result.text == "ok"
    [req] = asked
    assert req.specialist == "scribe" and req.fields[0] == ("specialist", "scribe")
    assert req.tool == "Write" and req.path == str(ws / "note.txt")
    assert "did not allow Write" in tool_messages(marked(fm, "SCRIBE-MARK")[-1])[0]
    assert not (ws / "note.txt").exists()
