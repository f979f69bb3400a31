"""The Subagent tool against a real loopback model: specialists from in-memory definitions."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fakemodel import FakeModel, by_system
from hearthside.adapters.model_client import ModelConfig, OpenAICompatibleModel
from hearthside.adapters.workspace_dir import DirectoryWorkspace
from hearthside.core.agent import Agent, AgentLimits, AllowAll, DenyAll, ToolCall, ToolEvent
from hearthside.core.agentdefs import MAX_DEPTH_CAP, MAX_TURNS_CAP, AgentDef, AgentDefListing
from hearthside.core.approval import describe_call
from hearthside.core.environment import Environment, EnvironmentRef, Fork, WorkspaceMerger
from hearthside.core.redact import register_secret
from hearthside.core.subagent import (
    ForkHook,
    ParentLink,
    SubagentTool,
    child_limits,
    depth_limit,
)
from hearthside.core.tools import FunctionTool, PermissionMode, Tool, ToolEnv

PERSONA = "You are Juniper. PERSONA-MARK"


def model(fm: FakeModel) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model", backoff=0.01, read_timeout=30))


def run(coro: Any, timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def spec(name: str, **kw: Any) -> AgentDef:
    kw.setdefault("description", f"the {name} specialist")
    kw.setdefault("body", f"You are {name.upper()}-MARK.")
    return AgentDef(name, **kw)


def call(agent: str, task: str = "look into it") -> tuple[str, str]:
    return ("Subagent", json.dumps({"agent": agent, "task": task}))


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def names(req: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in req.get("tools") or [])


def requests_for(fm: FakeModel, marker: str) -> list[dict[str, Any]]:
    return [r for r in fm.requests if marker in r["messages"][0]["content"]]


def look_tool() -> FunctionTool:
    return FunctionTool("look", "look at something", lambda what="": f"saw {what}",
                        {"type": "object", "properties": {"what": {"type": "string"}}})


def write_tool(log: list[str]) -> FunctionTool:
    return FunctionTool("note", "write a note", lambda text="": log.append(text) or "noted",
                        {"type": "object", "properties": {"text": {"type": "string"}}}, read_only=False)


async def persona(fm: FakeModel, defs: list[AgentDef], tools: list[Tool] | None = None, *,
                  approver: Any = None, mode: PermissionMode = PermissionMode.DEFAULT,
                  events: list[ToolEvent] | None = None, env: ToolEnv | None = None,
                  **kw: Any) -> Agent:
    """A persona agent with the Subagent tool bound the way the app binds it."""
    m = model(fm)
    base = list(tools or [look_tool()])
    sub = SubagentTool(AgentDefListing(tuple(sorted(defs, key=lambda d: d.name))), base,
                       persona="Juniper", **kw)
    approver = approver or DenyAll()
    link = ParentLink(m, approver, mode, AgentLimits(), events.append if events is not None else None)
    return Agent(m, [*base, sub.bound(link)], PERSONA, env=env or ToolEnv(persona="Juniper"),
                 approver=approver, mode=mode, on_tool=events.append if events is not None else None)


# -- the basic path --------------------------------------------------------------------------
def test_the_specialists_final_reply_is_the_tool_result_the_persona_sees_next() -> None:
    script = by_system({
        "PERSONA-MARK": [{"tool_calls": [call("researcher", "find the kettle")]}, {"text": "It is in the shed."}],
        "RESEARCHER-MARK": [{"tool_calls": [("look", '{"what": "shed"}')]}, {"text": "The kettle is in the shed."}],
    })

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            res = await (await persona(fm, [spec("researcher")])).send("where is the kettle?")
            return res, fm.requests

    res, reqs = run(scenario())
    assert res.text == "It is in the shed."
    child = [r for r in reqs if "RESEARCHER-MARK" in r["messages"][0]["content"]]
    assert [m["role"] for m in child[0]["messages"]] == ["system", "user"]
    assert child[0]["messages"][1]["content"] == "find the kettle"  # the task, nothing of the persona's talk
    assert "working for the persona Juniper" in child[0]["messages"][0]["content"]
    assert tool_messages(child[1]) == ["saw shed"]
    last = [r for r in reqs if "PERSONA-MARK" in r["messages"][0]["content"]][-1]
    assert tool_messages(last) == ["The kettle is in the shed."]


def test_the_description_lists_each_specialist_with_its_line_capped_and_escaped() -> None:
    long = "x" * 500
    sub = SubagentTool(AgentDefListing((spec("a", description="reads\nthe mail"), spec("b", description=long))), [])
    desc = sub.spec.description
    assert "- a: reads the mail" in desc
    line_b = next(line for line in desc.splitlines() if line.startswith("- b: "))
    assert len(line_b) <= 210 and line_b.endswith("…")
    assert sub.read_only is True and sub.spec.schema["required"] == ["agent", "task"]


def test_a_call_naming_no_specialist_is_an_error_that_lists_the_ones_there_are() -> None:
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("wizard")]}, {"text": "ok"}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("researcher"), spec("editor")])).send("go")
            return fm.requests

    reqs = run(scenario())
    assert tool_messages(reqs[-1]) == ["Error: There is no specialist named 'wizard'. Specialists: editor, researcher."]
    assert len(reqs) == 2  # no child ran


def test_missing_or_empty_arguments_are_a_clear_error() -> None:
    sub = SubagentTool(AgentDefListing((spec("a"),)), [])
    assert "`agent` must be" in run(sub.execute({"task": "x"}, ToolEnv())).content
    assert "`task` must be" in run(sub.execute({"agent": "a", "task": "  "}, ToolEnv())).content
    unbound = run(sub.execute({"agent": "a", "task": "x"}, ToolEnv()))
    assert unbound.is_error and "not available" in unbound.content


# -- what a child gets -----------------------------------------------------------------------
def test_the_childs_tools_are_the_callers_filtered_by_tools_and_disallowed_tools() -> None:
    log: list[str] = []
    extra = FunctionTool("peek", "peek", lambda: "peeked")
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call(n) for n in ("only", "minus", "all", "planner")]},
                                         {"text": "ok"}]},
                       default={"text": "done"})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            defs = [spec("only", tools=("look", "nonexistent")), spec("minus", disallowed_tools=("note",)), spec("all"),
                    spec("planner", permission_mode="plan")]
            await (await persona(fm, defs, [look_tool(), extra, write_tool(log)])).send("go")
            return fm

    fm = run(scenario())
    assert names(requests_for(fm, "ONLY-MARK")[0]) == ["look"]
    assert names(requests_for(fm, "MINUS-MARK")[0]) == ["look", "peek"]
    assert names(requests_for(fm, "ALL-MARK")[0]) == ["look", "note", "peek"]  # no Subagent: depth 1
    assert names(requests_for(fm, "PLANNER-MARK")[0]) == ["look", "peek"]  # permissionMode: plan reads only


def test_in_plan_mode_and_check_ins_a_child_gets_read_only_tools_and_no_writer_is_offered() -> None:
    log: list[str] = []
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("reader"), call("writer")]}, {"text": "ok"}]},
                       default={"text": "done"})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            defs = [spec("reader"), spec("writer", permission_mode="acceptEdits")]
            agent = await persona(fm, defs, [look_tool(), write_tool(log)], read_only_inside=True)
            await agent.send("go")
            return fm, agent

    fm, agent = run(scenario())
    assert names(requests_for(fm, "READER-MARK")[0]) == ["look"]
    assert requests_for(fm, "WRITER-MARK") == []
    sub_spec = next(t for t in agent.tool_specs if t["function"]["name"] == "Subagent")
    assert "writer" not in sub_spec["function"]["description"]
    assert "does not allow" in tool_messages(fm.requests[-1])[1]


def test_the_system_prompt_holds_the_body_and_the_preloaded_skills() -> None:
    bodies = {"tea": "Brew at 80 degrees.", "broken": ""}
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("cook")]}, {"text": "ok"}]}, default={"text": "done"})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            d = spec("cook", skills=("tea", "missing"))
            await (await persona(fm, [d], skill_body=lambda n: bodies[n])).send("go")
            return requests_for(fm, "COOK-MARK")[0]["messages"][0]["content"]

    system = run(scenario())
    assert system.startswith("You are COOK-MARK.") and "Skill tea:\nBrew at 80 degrees." in system
    assert "missing" not in system


# -- limits ----------------------------------------------------------------------------------
def test_turn_and_tool_call_limits_are_capped_and_default_to_the_sessions() -> None:
    assert child_limits(spec("a", max_turns=10_000_000), AgentLimits()).max_turns == MAX_TURNS_CAP
    assert child_limits(spec("a"), AgentLimits(7, 9)) == AgentLimits(7, 9)
    assert child_limits(spec("a", max_tool_calls=3), AgentLimits(1000, 1000)).max_tool_calls == 3
    assert depth_limit(spec("a"), 1, MAX_DEPTH_CAP) == 1
    assert depth_limit(spec("a", max_depth=99), 1, MAX_DEPTH_CAP) == MAX_DEPTH_CAP
    assert depth_limit(spec("a", max_depth=3), 2, 2) == 2  # an inner definition cannot raise it


def test_a_specialist_that_calls_tools_forever_stops_at_its_turn_limit_and_the_persona_hears_why() -> None:
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("looper")]}, {"text": "ok"}],
                        "LOOPER-MARK": {"tool_calls": [("look", "{}")]}})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("looper", max_turns=3)])).send("go")
            return fm

    fm = run(scenario())
    assert len(requests_for(fm, "LOOPER-MARK")) == 3
    assert "limit of 3 model turns" in tool_messages(fm.requests[-1])[0]
    assert "specialist looper" in tool_messages(fm.requests[-1])[0]


def test_a_specialist_past_its_time_limit_is_cancelled_and_the_result_says_so() -> None:
    gate = threading.Event()
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("slow")]}, {"text": "ok"}],
                        "SLOW-MARK": {"gate": gate, "text": "too late"}})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            agent = await persona(fm, [spec("slow")], seconds=0.5)
            res = await agent.send("go")
            gate.set()
            return res, fm

    res, fm = run(scenario())
    assert res.text == "ok"
    assert tool_messages(fm.requests[-1]) == [("Error: The specialist slow was stopped at its time limit of "
                                               "0.5 seconds; it gave no answer.")]


def test_a_specialist_cannot_start_specialists_past_the_depth_limit() -> None:
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("boss")]}, {"text": "ok"}],
                        "BOSS-MARK": [{"tool_calls": [call("boss", "recurse")]}, {"text": "I did it myself."}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("boss")])).send("go")
            return fm

    fm = run(scenario())
    boss = requests_for(fm, "BOSS-MARK")
    assert len(boss) == 2 and "Subagent" not in names(boss[0])
    assert tool_messages(boss[1]) == [("Error: The specialist boss cannot hand tasks to other specialists: "
                                       "the depth limit is 1; do the task yourself.")]
    assert tool_messages(fm.requests[-1]) == ["I did it myself."]


def test_a_definition_with_max_depth_2_may_start_one_level_of_specialists_and_no_more() -> None:
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("lead")]}, {"text": "ok"}],
                        "LEAD-MARK": [{"tool_calls": [call("helper")]}, {"text": "lead done"}],
                        "HELPER-MARK": [{"tool_calls": [call("helper")]}, {"text": "helper done"}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("lead", max_depth=2), spec("helper", max_depth=3)])).send("go")
            return fm

    fm = run(scenario())
    assert "Subagent" in names(requests_for(fm, "LEAD-MARK")[0])
    helper = requests_for(fm, "HELPER-MARK")
    assert "Subagent" not in names(helper[0]) and "depth limit is 2" in tool_messages(helper[1])[0]
    assert tool_messages(requests_for(fm, "LEAD-MARK")[1]) == ["helper done"]


# -- fan-out and cancel ----------------------------------------------------------------------
def test_five_specialists_of_one_turn_run_at_the_same_time_and_a_failing_one_holds_no_other() -> None:
    arrived = threading.Barrier(4, timeout=20)  # breaks (the test fails) unless four wait together

    def together(text: str) -> Any:
        def step(body: dict[str, Any]) -> dict[str, Any]:
            arrived.wait()
            return {"text": text}
        return step

    routes: dict[str, Any] = {"PERSONA-MARK": [{"tool_calls": [call(f"s{i}") for i in range(5)]}, {"text": "ok"}]}
    routes.update({f"S{i}-MARK": together(f"answer {i}") for i in range(4)})
    routes["S4-MARK"] = {"status": 401, "error": "bad key for s4"}

    async def scenario() -> Any:
        with FakeModel(default=by_system(routes)) as fm:
            await (await persona(fm, [spec(f"s{i}") for i in range(5)])).send("go")
            return fm

    fm = run(scenario())
    results = tool_messages(fm.requests[-1])
    assert results[:4] == [f"answer {i}" for i in range(4)]
    assert results[4].startswith("Error: The specialist s4 could not finish:") and "401" in results[4]
    assert fm.max_active >= 4


def test_cancelling_the_persona_cancels_every_specialist_promptly() -> None:
    routes: dict[str, Any] = {"PERSONA-MARK": [{"tool_calls": [call(f"s{i}") for i in range(3)]}, {"text": "ok"}]}
    routes.update({f"S{i}-MARK": {"hang": True} for i in range(3)})

    async def scenario() -> Any:
        with FakeModel(default=by_system(routes)) as fm:
            agent = await persona(fm, [spec(f"s{i}") for i in range(3)])
            before = asyncio.all_tasks()
            sending = asyncio.ensure_future(agent.send("go"))
            while len([r for r in fm.requests if "-MARK." in r["messages"][0]["content"]]) < 3:
                await asyncio.sleep(0.02)
            agent.cancel()
            res = await asyncio.wait_for(sending, 10)
            left = [t for t in asyncio.all_tasks() - before if not t.done()]
            await agent.model.aclose()  # type: ignore[attr-defined]
            return res, left

    res, left = run(scenario())
    assert res.stopped == "cancelled"
    assert left == []  # no child run is left behind


# -- approval, events, redaction ---------------------------------------------------------------
class NamingApprover:
    """Records each question as the terminal would show it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.who: list[str] = []

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        req = describe_call(tool, args, ToolEnv())
        self.lines.append(req.headline())
        self.who.append(req.as_dict().get("specialist", ""))
        return True


def test_a_childs_mutating_call_is_asked_of_the_parents_approver_naming_the_specialist() -> None:
    log: list[str] = []
    approver = NamingApprover()
    events: list[ToolEvent] = []
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("scribe")]}, {"text": "ok"}],
                        "SCRIBE-MARK": [{"tool_calls": [("note", '{"text": "hello"}')]}, {"text": "written"}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("scribe")], [write_tool(log)], approver=approver, events=events)).send("go")

    run(scenario())
    assert approver.lines == ["specialist scribe asks: note: run"] and log == ["hello"]
    assert approver.who == ["scribe"]
    assert [e.call.name for e in events] == ["scribe/note", "Subagent"]


def test_a_secret_a_childs_tool_returns_is_masked_in_the_child_and_in_the_result() -> None:
    secret = "sk-" + uuid.uuid4().hex
    register_secret(secret)
    leak = FunctionTool("leak", "leak", lambda: f"the key is {secret}")
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("snoop")]}, {"text": "ok"}],
                        "SNOOP-MARK": [{"tool_calls": [("leak", "{}")]}, {"text": f"found {secret}"}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("snoop")], [leak])).send("go")
            return fm

    fm = run(scenario())
    assert secret not in json.dumps(fm.requests)
    assert "the key is ****" in tool_messages(requests_for(fm, "SNOOP-MARK")[1])[0]


# -- writing specialists and forks -------------------------------------------------------------
class CopyForker:
    """A fork by copying the folder (the shape of the forks helper's forker, for these tests)."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.made: list[Path] = []

    def fork(self, base: Environment, label: str) -> Fork:
        src = base.workspace.root  # type: ignore[attr-defined]
        dst = self.where / f"fork{len(self.made)}"
        shutil.copytree(src, dst, copy_function=shutil.copy2)
        self.made.append(dst)
        ws = DirectoryWorkspace(dst)
        return Fork(Environment(EnvironmentRef("fork-copy", dst.name), ws), lambda: shutil.rmtree(dst),
                    base.workspace.versions())


def file_writer() -> FunctionTool:
    def write(env: ToolEnv, name: str = "", text: str = "") -> str:
        assert env.environment is not None
        env.environment.workspace.write(name, text.encode())
        return "written"
    return FunctionTool("put", "write a file", write, {"type": "object", "properties": {
        "name": {"type": "string"}, "text": {"type": "string"}}}, read_only=False, pass_env=True)


def workspace_env(root: Path) -> ToolEnv:
    root.mkdir()
    (root / "a.txt").write_text("old")
    return ToolEnv(persona="Juniper", workspace=str(root),
                   environment=Environment(EnvironmentRef("workspace", "w"), DirectoryWorkspace(root)))


def test_a_writing_specialist_is_refused_when_no_forker_is_wired(tmp_path: Path) -> None:
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("editor")]}, {"text": "ok"}]})

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            await (await persona(fm, [spec("editor", permission_mode="acceptEdits")], [file_writer()],
                                 approver=AllowAll(), env=workspace_env(tmp_path / "ws"))).send("go")
            return fm

    fm = run(scenario())
    assert "needs a copy" not in tool_messages(fm.requests[-1])[0]
    assert "writing specialists need a copy of the workspace" in tool_messages(fm.requests[-1])[0]
    assert requests_for(fm, "EDITOR-MARK") == []


def test_a_writing_specialist_works_in_a_fork_kept_for_review_and_the_workspace_is_untouched(tmp_path: Path) -> None:
    forker = CopyForker(tmp_path)
    kept: list[tuple[str, str, tuple[str, ...]]] = []

    def keep(fork: Fork, who: str, task: str) -> str:
        kept.append((who, task, tuple(fork.child.workspace.versions())))
        return "Its changes are kept for review as fork 1."

    put = json.dumps({"name": "a.txt", "text": "new"})
    script = by_system({"PERSONA-MARK": [{"tool_calls": [call("editor", "fix a")]}, {"text": "ok"}],
                        "EDITOR-MARK": [{"tool_calls": [("put", put)]}, {"text": "fixed"}]})
    env = workspace_env(tmp_path / "ws")

    async def scenario() -> Any:
        with FakeModel(default=script) as fm:
            sub_kw = {"forks": ForkHook(forker, keep)}
            await (await persona(fm, [spec("editor", permission_mode="acceptEdits")], [file_writer()],
                                 approver=AllowAll(), env=env, **sub_kw)).send("go")
            return fm

    fm = run(scenario())
    assert (tmp_path / "ws" / "a.txt").read_text() == "old"
    assert (forker.made[0] / "a.txt").read_text() == "new"
    assert kept == [("editor", "fix a", ("a.txt",))]
    assert tool_messages(fm.requests[-1]) == ["fixed\n\nIts changes are kept for review as fork 1."]


def test_a_merging_fork_hook_makes_the_call_mutate_the_parent_so_it_runs_alone(tmp_path: Path) -> None:
    forker = CopyForker(tmp_path)
    hook = ForkHook(forker, lambda f, w, t: "kept", WorkspaceMerger())
    sub = SubagentTool(AgentDefListing((spec("editor", permission_mode="acceptEdits"), spec("reader"))), [],
                       forks=hook)
    assert sub.mutates_parent({"agent": "editor"}) and not sub.mutates_parent({"agent": "reader"})
    assert not SubagentTool(sub.listing, [], forks=ForkHook(forker, hook.keep)).mutates_parent({"agent": "editor"})

    order: list[str] = []

    async def probe(what: str = "") -> str:
        order.append(f"start {what}")
        await asyncio.sleep(0.05)
        order.append(f"end {what}")
        return what

    class Alone(FunctionTool):
        def mutates_parent(self, args: Mapping[str, Any]) -> bool:
            return bool(args.get("what") == "merge")

    schema = {"type": "object", "properties": {"what": {"type": "string"}}}
    tool = Alone("probe", "probe", probe, schema)
    calls = [("probe", json.dumps({"what": w})) for w in ("r1", "merge", "r2")]

    async def scenario() -> Any:
        with FakeModel([{"tool_calls": calls}, {"text": "done"}]) as fm:
            await Agent(model(fm), [tool], "sys").send("go")

    run(scenario())
    assert order == ["start r1", "end r1", "start merge", "end merge", "start r2", "end r2"]
