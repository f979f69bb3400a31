"""Agent-loop and heartbeat overhead benchmarks (issue 6). Prints figures; asserts nothing.

1. Agent-loop overhead per turn, excluding the model's own time. (a) In-process: a model object
   that answers instantly (one tool call per turn, then a final answer), so all time is the
   loop's: dispatch, argument parsing, the tool, message bookkeeping. (b) Over HTTP: the same
   turns against the loopback OpenAI-compatible server, minus the median of bare client
   requests to that server measured in the same run (the baseline).
2. Heartbeat overhead from tick to model request: a real app context (plugin packs loaded,
   drift check, memory index, persona composition) and the loopback server timestamping the
   request's arrival; median over runs. Baseline: a bare client request's time to arrival.

Usage: .venv/bin/python benchmarks/bench_agent.py [--runs 30]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "tests")]


def set_home(home: Path) -> None:
    os.environ.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    })
    for k in ("HEARTHSIDE_MODEL_BASE_URL", "HEARTHSIDE_MODEL", "HEARTHSIDE_MODEL_API_KEY"):
        os.environ.pop(k, None)


def med_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="hearthside-bench-")
    set_home(Path(tmp))

    from fakemodel import FakeModel
    from hearthside.adapters.model_client import ModelConfig, OpenAICompatibleModel
    from hearthside.core.agent import Agent, AgentLimits, ModelReply, ToolCall
    from hearthside.core.tools import FunctionTool

    tool = FunctionTool("lookup", "look something up", lambda key: f"value of {key}",
                        {"type": "object", "properties": {"key": {"type": "string"}}})
    turns = 10

    class InstantModel:
        def __init__(self) -> None:
            self.n = 0

        async def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                           on_text: Callable[[str], None] | None = None) -> ModelReply:
            self.n += 1
            if self.n % turns:
                return ModelReply("", (ToolCall(f"c{self.n}", "lookup", '{"key": "k"}'),))
            return ModelReply("done")

    async def in_process() -> list[float]:
        out = []
        for _ in range(args.runs):
            agent = Agent(InstantModel(), [tool], "system prompt", limits=AgentLimits(50, 100))
            t = time.perf_counter()
            res = await agent.send("go")
            out.append((time.perf_counter() - t) / res.turns)
        return out

    print("# agent loop and heartbeat overhead (machine shared with other engineers)")
    per_turn = asyncio.run(in_process())
    print(f"agent loop, in-process instant model: median {med_ms(per_turn):.3f} ms per turn "
          f"({turns} turns per message, one tool call each)")

    with FakeModel(default=lambda body: {"tool_calls": [("lookup", '{"key": "k"}')]}
                   if sum(1 for m in body["messages"] if m["role"] == "tool") < turns - 1 else {"text": "done"}) as fm:
        async def over_http() -> tuple[list[float], list[float]]:
            model = OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model"))
            bare, agent_turns = [], []
            msgs = [{"role": "system", "content": "system prompt"}, {"role": "user", "content": "go"}]
            for _ in range(5):  # warm the connection pool
                await model.complete(msgs, [tool.spec.as_openai()])
            for _ in range(args.runs):  # interleaved, so load from other processes hits both alike
                t = time.perf_counter()
                await model.complete(msgs, [tool.spec.as_openai()])  # the server answers a tool call
                bare.append(time.perf_counter() - t)
                agent = Agent(model, [tool], "system prompt", limits=AgentLimits(50, 100))
                t = time.perf_counter()
                res = await agent.send("go")
                agent_turns.append((time.perf_counter() - t) / res.turns)
            await model.aclose()
            return bare, agent_turns

        bare, http_turns = asyncio.run(over_http())
    print(f"agent loop over loopback HTTP: median {med_ms(http_turns):.2f} ms per turn; bare client request "
          f"(baseline) {med_ms(bare):.2f} ms; overhead {med_ms(http_turns) - med_ms(bare):.2f} ms per turn "
          f"(ratio {statistics.median(http_turns) / statistics.median(bare):.2f})")

    # -- heartbeat: tick -> request arrival ----------------------------------------------------
    from hearthside.app.context import AppContext
    from hearthside.app.heartbeat import HeartbeatService
    from hearthside.app.notify import LogNotifier

    app = AppContext()
    folder = app.paths.personas_dir / "juniper"
    folder.mkdir(parents=True)
    (folder / "SOUL.md").write_text("Warm.")
    (folder / "HEARTBEAT.md").write_text("- remind me about the 3pm sync\n")
    store = app.memory.store("juniper")
    for i in range(50):
        store.remember(f"fact/n{i}", f"fact {i}")
    arrivals: list[float] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        arrivals.append(time.perf_counter())
        return {"text": "HEARTBEAT_OK"}

    with FakeModel(default=answer) as fm:
        os.environ.update(fm.env())
        os.environ["HEARTHSIDE_MODEL_API_KEY"] = "loopback"
        svc = HeartbeatService(app, notifier=LogNotifier(), history=app.notifications)

        async def heartbeats() -> tuple[list[float], list[float], float]:
            t = time.perf_counter()
            svc.tick("juniper")
            await svc.idle("juniper")
            first = arrivals[-1] - t  # includes loading plugin packs once
            lat = []
            for _ in range(args.runs):
                t = time.perf_counter()
                svc.tick("juniper")
                await svc.idle("juniper")
                lat.append(arrivals[-1] - t)
            model = OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model"))
            base = []
            for _ in range(args.runs):
                t = time.perf_counter()
                await model.complete([{"role": "user", "content": "x"}], [])
                base.append(arrivals[-1] - t)
            await model.aclose()
            return lat, base, first

        lat, base, first = asyncio.run(heartbeats())
    p95 = sorted(lat)[int(len(lat) * .95)]
    print(f"heartbeat tick -> model request: median {med_ms(lat):.1f} ms (p95 {p95 * 1000:.1f} ms); "
          f"first tick incl. loading plugin packs {first * 1000:.0f} ms")
    print(f"  baseline bare request -> arrival: {med_ms(base):.2f} ms; overhead {med_ms(lat) - med_ms(base):.1f} ms")


if __name__ == "__main__":
    main()
