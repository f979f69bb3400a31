"""Five read-only specialists in one turn against the slowest of them alone (issue 24).

Target: five in parallel <= 1.3x the slowest alone, measured in the same run. The model is the
test suite's fake OpenAI-compatible server on loopback with a fixed latency per request
(default 200 ms), and each specialist does two model turns (a read-only tool call, then its
answer), so one specialist alone takes about 2 x latency; the persona's own turns answer at
once. Each figure is the whole ``Agent.send`` of the persona: its turn, the Subagent calls and
its last turn. Median of several runs.

Usage: .venv/bin/python benchmarks/bench_subagents.py [--runs 7] [--latency 0.2]
Touches no files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "tests")]

TARGET = 1.3
N = 5


def script(latency: float, count: int) -> Any:
    from fakemodel import by_system

    routes: dict[str, Any] = {}
    for i in range(count):
        routes[f"S{i}-MARK"] = [{"delay": latency, "tool_calls": [("look", json.dumps({"what": f"x{i}"}))]},
                                {"delay": latency, "text": f"answer {i}"}]
    calls = [("Subagent", json.dumps({"agent": f"s{i}", "task": f"part {i}"})) for i in range(count)]
    routes["PERSONA-MARK"] = [{"tool_calls": calls}, {"text": "done"}]
    return by_system(routes)


async def once(latency: float, count: int) -> float:
    from fakemodel import FakeModel
    from hearthside.adapters.model_client import ModelConfig, OpenAICompatibleModel
    from hearthside.core.agent import Agent, DenyAll
    from hearthside.core.agentdefs import AgentDef, AgentDefListing
    from hearthside.core.subagent import ParentLink, SubagentTool
    from hearthside.core.tools import FunctionTool, PermissionMode, ToolEnv

    look = FunctionTool("look", "look", lambda what="": f"saw {what}",
                        {"type": "object", "properties": {"what": {"type": "string"}}})
    defs = tuple(AgentDef(f"s{i}", f"specialist {i}", f"S{i}-MARK") for i in range(count))
    with FakeModel(default=script(latency, count)) as fm:
        model = OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model", read_timeout=30))
        sub = SubagentTool(AgentDefListing(defs), [look], persona="bench")
        link = ParentLink(model, DenyAll(), PermissionMode.DEFAULT)
        agent = Agent(model, [look, sub.bound(link)], "PERSONA-MARK", env=ToolEnv(persona="bench"))
        start = time.perf_counter()
        res = await agent.send("go")
        took = time.perf_counter() - start
        await model.aclose()
    answers = [e.result.content for e in res.events if e.call.name == "Subagent"]
    assert res.text == "done" and answers == [f"answer {i}" for i in range(count)], (res, answers)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds per model request")
    args = ap.parse_args()
    asyncio.run(once(args.latency, 1))  # warm-up: imports, first connections
    alone, fanned = [], []
    for _ in range(args.runs):
        alone.append(asyncio.run(once(args.latency, 1)))
        fanned.append(asyncio.run(once(args.latency, N)))
    a, f = statistics.median(alone), statistics.median(fanned)
    ratio = f / a
    print(f"latency per model request: {args.latency * 1000:.0f} ms; each specialist: 2 model turns; runs: {args.runs}")
    print(f"slowest specialist alone:       median {a * 1000:7.1f} ms  (min {min(alone) * 1000:.1f}, "
          f"max {max(alone) * 1000:.1f})")
    print(f"{N} specialists in parallel:     median {f * 1000:7.1f} ms  (min {min(fanned) * 1000:.1f}, "
          f"max {max(fanned) * 1000:.1f})")
    print(f"ratio: {ratio:.2f}x the slowest alone (target <= {TARGET}x): {'ok' if ratio <= TARGET else 'OVER'}")
    print(f"one after another would take about {N * a * 1000:.0f} ms ({N}x)")


if __name__ == "__main__":
    main()
