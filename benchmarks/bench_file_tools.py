"""File-tool safety costs and guarantees (issue 9, holes 2, 7, 13; issue 18 hole 4). Prints figures;
asserts nothing.

1. Grep ``(a+)+$`` over a 41-character line (hours with Python's ``re`` on the loop): time to
   answer and the largest gap of a 20 ms heartbeat coroutine on the same loop while it runs.
2. Glob ``**/**/**/**/*.x`` over 4,094 folders: the same two figures.
3. Read of a small file: median time per call through the link-safe open in the worker
   process (issue 18: Read, Glob and Grep run in a killable child), against the same call run
   in this process on a thread (what it cost before), and a plain ``open().read()`` (the
   baseline); the difference of the first two is the worker process's per-call overhead. Also
   the first call's time, which includes starting the worker.
4. Grep ``a`` + ``[^c]{999}`` x 20 + ``c`` over a 1 MiB line with a 3 s budget (minutes
   before issue 18): time to answer.
5. The write guard's check of one path against the roots of a session with 20 personas:
   median microseconds per check.

Usage: .venv/bin/python benchmarks/bench_file_tools.py [--runs 200]
Runs in a throwaway folder; the real home is never touched.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "plugins" / "hearthside-files")]

from hearthside.core.tools import ToolEnv
from hearthside.core.writeguard import WriteGuard
from hearthside_files import isolate
from hearthside_files.budget import Budget, off_loop
from hearthside_files.tools import make_tools, outcome


async def timed_with_heartbeat(tool: Any, args: dict[str, Any], env: ToolEnv) -> tuple[float, float, str]:
    gaps: list[float] = []
    done = False

    async def beat() -> None:
        last = time.monotonic()
        while not done:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(beat())
    t0 = time.monotonic()
    res = await tool.execute(args, env)
    elapsed = time.monotonic() - t0
    done = True
    await task
    return elapsed, max(gaps or [0.0]), res.content.splitlines()[0][:60]


def tree(root: Path, depth: int) -> None:
    level = [root]
    for _ in range(depth):
        nxt = []
        for d in level:
            for name in ("l", "r"):
                (d / name).mkdir()
                nxt.append(d / name)
        level = nxt
    (level[-1] / "deep.x").write_text("x\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    runs = ap.parse_args().runs
    tools = {t.name: t for t in make_tools()}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("a" * 40 + "!\n")
        env = ToolEnv(workspace=str(ws))
        e, gap, first = asyncio.run(timed_with_heartbeat(tools["Grep"], {"pattern": "(a+)+$"}, env))
        print(f"grep (a+)+$ over 41 chars: {e * 1000:.1f} ms, max loop gap {gap * 1000:.1f} ms ({first})")
        big = Path(tmp) / "tree"
        big.mkdir()
        tree(big, 11)
        e, gap, first = asyncio.run(timed_with_heartbeat(
            tools["Glob"], {"pattern": "**/**/**/**/*.x"}, ToolEnv(workspace=str(big))))
        print(f"glob **/**/**/**/*.x over 4094 folders: {e * 1000:.0f} ms, max loop gap {gap * 1000:.1f} ms")

        (ws / "notes.md").write_text("hello\n" * 100)
        read = tools["Read"]

        async def first_call() -> float:
            t0 = time.perf_counter()
            await read.execute({"path": "notes.md"}, env)
            return time.perf_counter() - t0

        async def reads(in_process: bool) -> list[float]:
            out = []
            for _ in range(runs):
                t0 = time.perf_counter()
                if in_process:
                    await off_loop(lambda b: outcome(read, {"path": "notes.md"}, env, b), Budget())
                else:
                    await read.execute({"path": "notes.md"}, env)
                out.append(time.perf_counter() - t0)
            return out

        isolate._kill_all()  # the figures above started a worker; time a fresh start
        first = asyncio.run(first_call())
        safe = statistics.median(asyncio.run(reads(False)))
        thread = statistics.median(asyncio.run(reads(True)))
        plain = []
        for _ in range(runs):
            t0 = time.perf_counter()
            (ws / "notes.md").read_bytes()
            plain.append(time.perf_counter() - t0)
        base = statistics.median(plain)
        print(f"Read median {safe * 1e6:.0f} us in the worker process, {thread * 1e6:.0f} us on a thread here "
              f"(worker overhead {(safe - thread) * 1e6:.0f} us per call), plain read {base * 1e6:.0f} us "
              f"(ratio {safe / base:.0f}x); first call, starting the worker: {first * 1000:.0f} ms")

        (ws / "long.txt").write_text("a" * (1024 * 1024 - 1) + "\n")

        class Settings(dict[str, Any]):
            pass

        slow = {t.name: t for t in make_tools(Settings({"files.time_budget_seconds": 3}))}["Grep"]
        e, gap, first_line = asyncio.run(timed_with_heartbeat(
            slow, {"pattern": "a" + "[^c]{999}" * 20 + "c", "glob": "long.txt"}, env))
        print(f"grep a[^c]{{999}}x20c over a 1 MiB line, 3 s budget: {e:.2f} s, max loop gap "
              f"{gap * 1000:.1f} ms ({first_line})")

        guard = WriteGuard.of([(Path(tmp) / f"persona{i}", f"persona {i}") for i in range(20)]
                              + [(Path(tmp) / "config", "config")])
        target = ws / "notes" / ("x/" * 20) / "file.md"
        checks = []
        for _ in range(runs):
            t0 = time.perf_counter()
            guard.refusal(target)
            checks.append(time.perf_counter() - t0)
        print(f"write guard check, 42 roots: median {statistics.median(checks) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
