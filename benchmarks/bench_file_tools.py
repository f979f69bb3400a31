"""File-tool safety costs and guarantees (issue 9, holes 2, 7, 13). Prints figures; asserts nothing.

1. Grep ``(a+)+$`` over a 41-character line (hours with Python's ``re`` on the loop): time to
   answer and the largest gap of a 20 ms heartbeat coroutine on the same loop while it runs.
2. Glob ``**/**/**/**/*.x`` over 4,094 folders: the same two figures.
3. Read of a small file: median time per call through the link-safe open + worker thread,
   against a plain ``open().read()`` of the same file (the baseline), and their ratio.
4. The write guard's check of one path against the roots of a session with 20 personas:
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
from hearthside_files.tools import make_tools


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

        async def reads() -> list[float]:
            out = []
            for _ in range(runs):
                t0 = time.perf_counter()
                await tools["Read"].execute({"path": "notes.md"}, env)
                out.append(time.perf_counter() - t0)
            return out

        safe = statistics.median(asyncio.run(reads()))
        plain = []
        for _ in range(runs):
            t0 = time.perf_counter()
            (ws / "notes.md").read_bytes()
            plain.append(time.perf_counter() - t0)
        base = statistics.median(plain)
        print(f"Read median {safe * 1e6:.0f} us vs plain read {base * 1e6:.0f} us (ratio {safe / base:.0f}x)")

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
