"""The agent loop against a real loopback model server and real tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakemodel import FakeModel, RecordingApprover
from hearthside.adapters.model_client import ModelConfig, OpenAICompatibleModel
from hearthside.core.agent import Agent, AgentLimits, AllowAll, DenyAll
from hearthside.core.tools import FunctionTool, PermissionMode


def model(fm: FakeModel) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model", backoff=0.01, read_timeout=10))


def run(coro: Any, timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def test_read_only_calls_of_one_turn_run_concurrently() -> None:
    started: list[str] = []

    async def scenario() -> Any:
        both = asyncio.Event()

        async def look(what: str) -> str:
            started.append(what)
            if len(started) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), 5)  # deadlocks (times out) if run one by one
            return f"saw {what}"

        t = FunctionTool("look", "look", look, {"type": "object", "properties": {"what": {"type": "string"}}})
        calls = [("look", '{"what": "a"}'), ("look", '{"what": "b"}')]
        with FakeModel([{"tool_calls": calls}, {"text": "done"}]) as fm:
            res = await Agent(model(fm), [t], "sys").send("go")
            return res, fm.requests

    res, reqs = run(scenario())
    assert res.text == "done" and res.tool_calls == 2
    assert tool_messages(reqs[1]) == ["saw a", "saw b"]


def test_mutating_calls_run_one_at_a_time_each_approved() -> None:
    active = {"now": 0, "max": 0}
    order: list[str] = []

    async def write(name: str) -> str:
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        await asyncio.sleep(0.05)
        order.append(name)
        active["now"] -= 1
        return "written"

    t = FunctionTool("write", "write", write, read_only=False)
    approver = RecordingApprover(True)
    with FakeModel([{"tool_calls": [("write", '{"name": "x"}'), ("write", '{"name": "y"}')]}, {"text": "ok"}]) as fm:
        res = run(Agent(model(fm), [t], "sys", approver=approver).send("go"))
    assert res.text == "ok" and order == ["x", "y"] and active["max"] == 1
    assert approver.asked == ["write", "write"]


def test_a_denied_mutating_call_is_reported_to_the_model_and_not_run() -> None:
    ran: list[int] = []
    t = FunctionTool("delete_all", "delete", lambda: ran.append(1), read_only=False)
    with FakeModel([{"tool_calls": [("delete_all", "{}")]}, {"text": "ok, I won't"}]) as fm:
        res = run(Agent(model(fm), [t], "sys", approver=DenyAll()).send("go"))
        msgs = tool_messages(fm.requests[1])
    assert ran == [] and res.text == "ok, I won't"
    assert msgs == ["Error: The user did not allow delete_all to run."]


def test_accept_edits_mode_runs_mutating_calls_without_asking() -> None:
    ran: list[int] = []
    t = FunctionTool("save", "save", lambda: ran.append(1) or "saved", read_only=False)
    approver = RecordingApprover(False)
    with FakeModel([{"tool_calls": [("save", "{}")]}, {"text": "done"}]) as fm:
        run(Agent(model(fm), [t], "sys", approver=approver, mode=PermissionMode.ACCEPT_EDITS).send("go"))
    assert ran == [1] and approver.asked == []


def test_plan_mode_hides_mutating_tools_from_the_model_and_refuses_them() -> None:
    ran: list[int] = []
    ro = FunctionTool("read", "read", lambda: "text")
    rw = FunctionTool("write", "write", lambda: ran.append(1), read_only=False)
    with FakeModel([{"tool_calls": [("write", "{}")]}, {"text": "planned"}]) as fm:
        run(Agent(model(fm), [ro, rw], "sys", approver=AllowAll(), mode=PermissionMode.PLAN).send("go"))
        offered = [t["function"]["name"] for t in fm.requests[0]["tools"]]
        msgs = tool_messages(fm.requests[1])
    assert offered == ["read"] and ran == []
    assert "no tool named 'write'" in msgs[0]


def test_unknown_tool_and_invalid_json_arguments_go_back_to_the_model() -> None:
    t = FunctionTool("echo", "echo", lambda text: text, {"type": "object", "properties": {"text": {"type": "string"}}})
    script = [{"tool_calls": [("nope", "{}"), ("echo", "{not json"), ("echo", "[1, 2]"), ("echo", '{"text": "hi"}')]},
              {"text": "recovered"}]
    with FakeModel(script) as fm:
        res = run(Agent(model(fm), [t], "sys").send("go"))
        msgs = tool_messages(fm.requests[1])
    assert res.text == "recovered" and res.stopped == "done"
    assert msgs[0].startswith("Error: There is no tool named 'nope'") and "echo" in msgs[0]
    assert "not valid JSON" in msgs[1] and "must be a JSON object" in msgs[2] and msgs[3] == "hi"


def test_a_raising_tool_returns_an_error_to_the_model() -> None:
    def boom() -> str:
        raise RuntimeError("disk on fire")

    t = FunctionTool("boom", "boom", boom)
    with FakeModel([{"tool_calls": [("boom", "{}")]}, {"text": "sorry"}]) as fm:
        res = run(Agent(model(fm), [t], "sys").send("go"))
        msgs = tool_messages(fm.requests[1])
    assert res.text == "sorry" and msgs == ["Error: boom failed: RuntimeError: disk on fire"]


def test_a_model_that_calls_tools_forever_is_capped_by_turns() -> None:
    t = FunctionTool("ping", "ping", lambda: "pong")
    with FakeModel(default={"tool_calls": [("ping", "{}")]}) as fm:
        res = run(Agent(model(fm), [t], "sys", limits=AgentLimits(max_turns=5, max_tool_calls=50)).send("go"))
        n = len(fm.requests)
    assert res.stopped == "max_turns" and n == 5 and "limit of 5 model turns" in res.note


def test_a_model_that_calls_tools_forever_is_capped_by_tool_calls() -> None:
    t = FunctionTool("ping", "ping", lambda: "pong")
    with FakeModel(default={"tool_calls": [("ping", "{}")] * 3}) as fm:
        res = run(Agent(model(fm), [t], "sys", limits=AgentLimits(max_turns=100, max_tool_calls=7)).send("go"))
    assert res.stopped == "max_tool_calls" and res.tool_calls == 7 and "limit of 7 tool calls" in res.note
    assert [e.ran for e in res.events].count(True) == 7


def test_default_caps_are_20_turns_and_50_tool_calls() -> None:
    t = FunctionTool("ping", "ping", lambda: "pong")
    with FakeModel(default={"tool_calls": [("ping", "{}")] * 2}) as fm:
        res = run(Agent(model(fm), [t], "sys").send("go"))
    assert (res.stopped, res.turns, res.tool_calls) == ("max_turns", 20, 40)
    with FakeModel(default={"tool_calls": [("ping", "{}")] * 4}) as fm:
        res = run(Agent(model(fm), [t], "sys").send("go"))
    assert (res.stopped, res.tool_calls) == ("max_tool_calls", 50)


def test_cancel_stops_a_slow_turn_and_keeps_the_history_valid() -> None:
    async def scenario() -> Any:
        with FakeModel([{"delay": 30, "text": "too late"}, {"text": "second answer"}]) as fm:
            agent = Agent(model(fm), [], "sys")
            task = asyncio.ensure_future(agent.send("first"))
            while not fm.requests:
                await asyncio.sleep(0.01)
            agent.cancel()
            res = await asyncio.wait_for(task, 5)
            res2 = await agent.send("second")
            return res, res2, fm.requests[-1]["messages"]

    res, res2, msgs = run(scenario())
    assert res.stopped == "cancelled" and res2.text == "second answer"
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[1]["content"] == "second"


def test_conversation_carries_history_across_messages_and_streams_text() -> None:
    pieces: list[str] = []
    with FakeModel([{"text": "Nice to meet you, Ada."}, {"text": "Your name is Ada."}]) as fm:
        async def scenario() -> Any:
            a = Agent(model(fm), [], "You are Juniper.")
            await a.send("I am Ada", pieces.append)
            return await a.send("Who am I?")
        res = run(scenario())
        last = fm.requests[-1]["messages"]
    assert res.text == "Your name is Ada." and "".join(pieces) == "Nice to meet you, Ada."
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    assert last[0]["content"] == "You are Juniper."
    assert json.dumps(last).count("I am Ada") == 1


def test_a_tool_cannot_exempt_itself_from_approval() -> None:
    """Hole 12: approval is host policy, from the read-only flag alone. A mutating tool that
    claims ``approval_exempt`` is still asked about (and denied here); only the host's own
    memory tools are exempt (tests/test_memory_tools.py)."""
    class Exempt:
        read_only = False
        approval_exempt = True

        @property
        def spec(self):  # type: ignore[no-untyped-def]
            from hearthside.core.tools import ToolSpec
            return ToolSpec("note", "note")

        async def execute(self, args, env):  # type: ignore[no-untyped-def]
            from hearthside.core.tools import ToolResult
            return ToolResult("noted")

    with FakeModel([{"tool_calls": [("note", "{}")]}, {"text": "ok"}]) as fm:
        run(Agent(model(fm), [Exempt()], "sys", approver=DenyAll()).send("go"))
        assert tool_messages(fm.requests[1]) == ["Error: The user did not allow note to run."]


@pytest.mark.parametrize("bad", [{"status": 500}, {"raw": "garbage"}])
def test_a_model_failure_reaches_the_caller_as_a_model_error(bad: dict[str, Any]) -> None:
    from hearthside.core.agent import ModelError

    with FakeModel(default=bad) as fm:
        m = OpenAICompatibleModel(ModelConfig(fm.base_url, "m", backoff=0.01, max_retries=1, stream=False))
        with pytest.raises(ModelError):
            run(Agent(m, [], "sys").send("go"))


def test_a_tool_loaded_with_tool_search_is_advertised_in_full_from_the_next_turn() -> None:
    from hearthside.core.hosttools import make_tool_search
    from hearthside.core.tools import Catalog, ToolEnv, ToolResult, ToolSpec

    class Weather:
        read_only = True

        @property
        def spec(self) -> ToolSpec:
            return ToolSpec("weather", "Full weather tool with a detailed schema",
                            {"type": "object", "properties": {"city": {"type": "string"}}})

        @property
        def advertised(self) -> ToolSpec:
            return ToolSpec("weather", "weather (load with ToolSearch)")

        async def execute(self, args: Any, env: Any) -> ToolResult:
            return ToolResult("sunny")

    catalog = Catalog()
    catalog.register(Weather())
    catalog.register(make_tool_search(catalog))
    env = ToolEnv(services={"hydrated_tools": set()})
    with FakeModel([{"tool_calls": [("ToolSearch", '{"query": "weather"}')]}, {"text": "found it"}]) as fm:
        run(Agent(model(fm), catalog.tools(), "sys", env=env).send("weather?"))
        first = {t["function"]["name"]: t["function"]["description"] for t in fm.requests[0]["tools"]}
        second = {t["function"]["name"]: t["function"]["description"] for t in fm.requests[1]["tools"]}
    assert first["weather"] == "weather (load with ToolSearch)"
    assert second["weather"] == "Full weather tool with a detailed schema"


def test_tool_calls_sharing_one_id_each_get_their_own_result() -> None:
    t = FunctionTool("echo", "echo", lambda text: text, {"type": "object", "properties": {"text": {"type": "string"}}})
    calls = [{"id": "call", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"text": w})}}
             for w in ("one", "two")]
    raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls},
                                   "finish_reason": "tool_calls"}]})
    with FakeModel([{"raw": raw}, {"text": "done"}]) as fm:
        res = run(Agent(model(fm), [t], "sys").send("go"))
        msgs = tool_messages(fm.requests[1])
    assert res.text == "done" and msgs == ["one", "two"]
    assert [e.result.content for e in res.events] == ["one", "two"]
