"""Specialists through the real ``hearthside chat`` and ``heartbeat run``: agent files in a real
persona folder, the model a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

from fakemodel import FakeModel, by_system, wait_for
from personas import chat_process, make_persona

PERSONA = "Be brief."  # juniper's AGENTS.md: in the persona's prompt, never in a specialist's


def agent_file(folder: Path, name: str, extra: str = "", body: str = "") -> None:
    agents = folder / "agents"
    agents.mkdir(exist_ok=True)
    text = f"---\nname: {name}\ndescription: The {name} specialist.\n{extra}---\n{body or name.upper() + '-MARK'}\n"
    (agents / f"{name}.md").write_text(text, encoding="utf-8")


def call(agent: str, task: str = "look into it") -> tuple[str, str]:
    return ("Subagent", json.dumps({"agent": agent, "task": task}))


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def marked(fm: FakeModel, marker: str) -> list[dict[str, Any]]:
    return [r for r in fm.requests if marker in r["messages"][0]["content"]]


def names(req: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in req.get("tools") or [])


def test_the_persona_hands_a_task_to_a_specialist_and_sees_its_reply_as_the_tool_result(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "researcher", "tools: memory_recall, memory_search\n")
    script = by_system({"RESEARCHER-MARK": {"text": "The train leaves at 9:40."},
                        PERSONA: [{"tool_calls": [call("researcher", "when does the train leave?")]},
                                  {"text": "At 9:40."}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "when is my train?", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "At 9:40.\n" and "[Subagent: ok]" in proc.stderr
    [child] = marked(fm, "RESEARCHER-MARK")
    assert child["messages"][1] == {"role": "user", "content": "when does the train leave?"}
    assert names(child) == ["memory_recall", "memory_search"]
    persona = marked(fm, PERSONA)
    assert "- researcher: The researcher specialist." in json.dumps(persona[0]["tools"])
    assert tool_messages(persona[-1]) == ["The train leaves at 9:40."]


def test_a_call_naming_no_specialist_gets_the_names_that_exist(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "researcher")
    agent_file(folder, "editor")
    script = by_system({PERSONA: [{"tool_calls": [call("wizard")]}, {"text": "No wizard."}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "ask the wizard", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert tool_messages(fm.requests[-1]) == [
        "Error: There is no specialist named 'wizard'. Specialists: editor, researcher."]
    assert len(fm.requests) == 2


def test_a_specialist_that_calls_subagent_past_the_depth_limit_gets_a_tool_error(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "boss")
    script = by_system({"BOSS-MARK": [{"tool_calls": [call("boss", "again")]}, {"text": "Did it myself."}],
                        PERSONA: [{"tool_calls": [call("boss")]}, {"text": "done"}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "go", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    boss = marked(fm, "BOSS-MARK")
    assert "Subagent" not in names(boss[0])
    assert "cannot hand tasks to other specialists: the depth limit is 1" in tool_messages(boss[1])[0]
    assert tool_messages(fm.requests[-1]) == ["Did it myself."]


def test_max_turns_far_above_the_cap_is_capped(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "looper", "maxTurns: 10000000\nmaxToolCalls: 10000000\ntools: memory_search\n")
    script = by_system({"LOOPER-MARK": {"tool_calls": [("memory_search", '{"query": "x"}')]},
                        PERSONA: [{"tool_calls": [call("looper")]}, {"text": "It gave up."}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "go", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert len(marked(fm, "LOOPER-MARK")) == 100  # MAX_TURNS_CAP
    assert "the specialist looper reached the limit of 100 model turns" in tool_messages(fm.requests[-1])[0]


def test_a_specialist_past_its_time_limit_is_stopped_and_the_persona_goes_on(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "slow")
    app_context.settings.set("agent.specialist_time_limit", 1)
    gate = threading.Event()
    script = by_system({"SLOW-MARK": {"gate": gate, "text": "too late"},
                        PERSONA: [{"tool_calls": [call("slow")]}, {"text": "It was too slow."}]})
    try:
        with FakeModel(default=script) as fm:
            proc = run_cli("chat", "juniper", "go", env=fm.env())
            opened = gate.is_set()
    finally:
        gate.set()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It was too slow.\n" and not opened
    assert tool_messages(fm.requests[-1]) == [
        "Error: The specialist slow was stopped at its time limit of 1 second; it gave no answer."]


def test_five_specialists_in_one_turn_run_in_parallel_each_with_its_own_session(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    together = threading.Barrier(5, timeout=30)  # broken (an error reply) unless all five wait at once

    def meet(i: int) -> Any:
        def step(body: dict[str, Any]) -> dict[str, Any]:
            together.wait()
            return {"text": f"part {i} done"}
        return step

    routes: dict[str, Any] = {}
    for i in range(5):
        agent_file(folder, f"s{i}")
        routes[f"S{i}-MARK"] = meet(i)
    routes[PERSONA] = [{"tool_calls": [call(f"s{i}", f"part {i}") for i in range(5)]}, {"text": "All done."}]
    with FakeModel(default=by_system(routes)) as fm:
        proc = run_cli("chat", "juniper", "do all five", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert tool_messages(fm.requests[-1]) == [f"part {i} done" for i in range(5)]
    for i in range(5):  # each its own conversation: its own task and nothing of the others
        [req] = marked(fm, f"S{i}-MARK")
        assert [m["content"] for m in req["messages"][1:]] == [f"part {i}"]


def test_ctrl_c_cancels_the_persona_and_every_specialist_promptly(app_context) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    gate = threading.Event()  # never opened while the chat runs: only cancelling ends it
    routes: dict[str, Any] = {}
    for i in range(3):
        agent_file(folder, f"s{i}")
        routes[f"S{i}-MARK"] = {"gate": gate, "text": "too late"}
    routes[PERSONA] = [{"tool_calls": [call(f"s{i}") for i in range(3)]}, {"text": "never"}]
    with FakeModel(default=by_system(routes)) as fm:
        proc = chat_process(fm, "hi")
        try:
            assert wait_for(lambda: fm.active >= 3, 60), fm.requests  # the three specialists are waiting
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=50)  # the gate holds 60 s: only a real cancel ends sooner
            still_closed = not gate.is_set()
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert still_closed and proc.returncode == 1 and "cancelled" in err and "Traceback" not in err
    assert len(fm.requests) == 4 and out == ""  # the persona's first turn and three specialists, no more


def test_a_check_in_uses_a_read_only_specialist(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "calendar")
    agent_file(folder, "editor", "permissionMode: acceptEdits\n")
    script = by_system({"CALENDAR-MARK": {"text": "The 3pm sync moved to 4pm."},
                        PERSONA: [{"tool_calls": [call("calendar", "what is on today?")]},
                                  {"text": "Heads up: your 3pm sync moved to 4pm."}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("heartbeat", "run", "juniper", "--json", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"status": "notified", "reason": "",
                                       "text": "Heads up: your 3pm sync moved to 4pm."}
    sub = next(t for t in marked(fm, PERSONA)[0]["tools"] if t["function"]["name"] == "Subagent")
    assert "- calendar:" in sub["function"]["description"] and "editor" not in sub["function"]["description"]
    [child] = marked(fm, "CALENDAR-MARK")
    assert "memory_remember" not in names(child) and "memory_recall" in names(child)
    assert tool_messages(marked(fm, PERSONA)[-1]) == ["The 3pm sync moved to 4pm."]


def test_a_specialists_write_is_asked_of_the_user_naming_the_specialist(app_context, run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "scribe")
    ws = tmp_path / "ws"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))
    write = json.dumps({"path": "note.txt", "content": "hi"})
    script = by_system({"SCRIBE-MARK": [{"tool_calls": [("Write", write)]}, {"text": "Not allowed."}],
                        PERSONA: [{"tool_calls": [call("scribe", "write a note")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "note it", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert f"[denied specialist scribe asks: Write: create {ws / 'note.txt'}: no terminal" in proc.stderr
    assert "[scribe/Write: error]" in proc.stderr and not (ws / "note.txt").exists()
    assert "did not allow Write" in tool_messages(marked(fm, "SCRIBE-MARK")[-1])[0]
