"""Hole 7 of issue 9: the file tools never freeze the shared event loop.

On the old code Grep ran Python's backtracking ``re`` on the loop thread, so ``(a+)+$`` over a
41-character line blocked every coroutine (heartbeats, MCP, the chat) for hours, and a Glob of
``**/**/**/**/*.x`` over 4,094 folders for minutes. The scenario runs in a child process with a
timeout, so the old code fails the test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from hearthside.core.tools import ToolEnv

SCENARIO = textwrap.dedent('''
    import asyncio, json, sys, time
    from hearthside.core.tools import ToolEnv
    from hearthside_files.tools import make_tools

    class Settings(dict):
        def get(self, k, d=None):
            return super().get(k, d)

    async def main(ws, tool, args, settings):
        tools = {t.name: t for t in make_tools(Settings(settings))}
        gaps, last, done = [], time.monotonic(), False

        async def heartbeat():
            nonlocal last
            while not done:
                await asyncio.sleep(0.02)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        beat = asyncio.create_task(heartbeat())
        t0 = time.monotonic()
        res = await tools[tool].execute(args, ToolEnv(workspace=ws))
        elapsed = time.monotonic() - t0
        done = True
        await beat
        print(json.dumps({"elapsed": elapsed, "max_gap": max(gaps or [0]), "beats": len(gaps),
                          "error": res.is_error, "content": res.content[:300]}))

    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])))
''')


def scenario(ws: Path, tool: str, args: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCENARIO, str(ws), tool, json.dumps(args),
                           json.dumps(settings or {})], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_a_catastrophic_regex_neither_hangs_grep_nor_stalls_the_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    got = scenario(tmp_path, "Grep", {"pattern": "(a+)+$"})
    assert got["elapsed"] < 5, got
    assert got["max_gap"] < 0.5, got  # the heartbeat coroutine kept ticking
    assert got["content"] == "No matches." or "budget" in got["content"], got


def test_a_backreference_is_refused_with_a_sentence(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aa\n")
    got = scenario(tmp_path, "Grep", {"pattern": r"(a)\1"})
    assert got["error"] and "RE2 syntax" in got["content"], got


def _tree(root: Path, depth: int) -> int:
    """A binary tree of folders: 2 + 4 + ... + 2**depth of them."""
    made = 0
    level = [root]
    for _ in range(depth):
        nxt = []
        for d in level:
            for name in ("l", "r"):
                (d / name).mkdir()
                nxt.append(d / name)
                made += 1
        level = nxt
    (level[-1] / "deep.x").write_text("x\n")
    return made


def test_a_nested_globstar_over_four_thousand_folders_finishes_and_the_loop_keeps_ticking(tmp_path: Path) -> None:
    assert _tree(tmp_path, 11) == 4094
    got = scenario(tmp_path, "Glob", {"pattern": "**/**/**/**/*.x"})
    assert got["elapsed"] < 10 and got["max_gap"] < 0.5, got
    assert got["content"] == "r/r/r/r/r/r/r/r/r/r/r/deep.x", got


def test_glob_stops_at_its_entry_budget_with_a_sentence(tmp_path: Path) -> None:
    _tree(tmp_path, 11)
    got = scenario(tmp_path, "Glob", {"pattern": "**/*.x"}, {"files.entry_budget": 500})
    assert got["error"] and "stopped after looking at 500 files and folders" in got["content"], got


def test_grep_stops_at_its_time_budget(tmp_path: Path) -> None:
    for i in range(300):
        (tmp_path / f"f{i}.txt").write_text("hello world\n" * 20000)
    got = scenario(tmp_path, "Grep", {"pattern": "nomatch"}, {"files.time_budget_seconds": 0.05})
    assert got["error"] and "time budget" in got["content"], got


def test_cancelling_a_file_tool_stops_its_worker(tmp_path: Path) -> None:
    """Ctrl-C / Stop cancels the awaiting task; the worker sees it at its next budget check."""
    from hearthside_files.budget import Budget, BudgetExceeded, off_loop

    stopped = threading.Event()

    def endless(budget: Budget) -> str:
        try:
            while True:
                budget.check()
                time.sleep(0.005)
        except BudgetExceeded as exc:
            stopped.set()
            return str(exc)

    async def go() -> None:
        task = asyncio.create_task(off_loop(endless, Budget(seconds=60)))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    t0 = time.monotonic()
    asyncio.run(go())
    assert stopped.wait(2) and time.monotonic() - t0 < 3


def test_file_tools_still_work_in_process(tmp_path: Path) -> None:
    from hearthside_files.tools import make_tools

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("alpha\nbeta\n")
    (tmp_path / "b.txt").write_text("Beta\n")
    tools = {t.name: t for t in make_tools()}
    env = ToolEnv(workspace=str(tmp_path))

    def call(name: str, **args: Any) -> str:
        res = asyncio.run(tools[name].execute(args, env))
        assert not res.is_error, res
        return res.content

    assert call("Glob", pattern="**/*.md") == "notes/a.md"
    assert call("Glob", pattern="*.txt") == "b.txt"
    assert call("Glob", pattern="notes/[!x]*") == "notes/a.md"
    assert call("Grep", pattern="beta", ignore_case=True).splitlines() == ["b.txt:1: Beta", "notes/a.md:2: beta"]
