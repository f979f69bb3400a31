"""MCP connection benchmark (issue 5). Prints figures; asserts nothing.

1. Connect + list tools of 10 loopback MCP servers (the SDK's MCPServer over streamable HTTP,
   each in its own process) at once, versus the slowest of the same servers connected alone,
   measured in the same run. Target: together <= 1.5x the slowest single one.
2. While those 10 connect on the runtime thread, a 10 ms QTimer on an offscreen QApplication
   measures how late the Qt event loop runs (the worst stall). Target <= 50 ms. The same probe
   with nothing connecting is the baseline.

On bare loopback a connection is pure CPU (client and ten server processes share the cores),
so the first ratio measures CPU, not concurrency; the second scenario adds a simulated network
round trip to every request, which is what concurrency is for.

Run: .venv/bin/python benchmarks/bench_mcp.py [--servers 10] [--runs 5] [--tools 20] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hearthside.adapters.mcp_client import McpConnection
from hearthside.app.runtime import Runtime
from hearthside.core.mcpconfig import ServerConfig
from mcp_helpers import http_servers


async def connect(cfgs: list[ServerConfig]) -> float:
    """Seconds to connect and list tools of every server at once (then close them)."""
    conns = [McpConnection(c, lambda ref: None, reconnect=False) for c in cfgs]
    t0 = time.perf_counter()
    statuses = await asyncio.gather(*(c.start() for c in conns))
    elapsed = time.perf_counter() - t0
    await asyncio.gather(*(c.close() for c in conns))
    bad = [s for s in statuses if s.state != "connected"]
    if bad:
        raise SystemExit(f"a server did not connect: {bad[0].name}: {bad[0].reason}")
    return elapsed


def stall_probe(rt: Runtime, work: object | None, min_seconds: float = 1.0) -> tuple[float, int]:
    """Worst lateness (ms) of a 10 ms QTimer while ``work`` (a coroutine) runs on the runtime."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    fut = rt.submit(work) if work is not None else None  # type: ignore[arg-type]
    ticks: list[float] = []
    start = time.perf_counter()
    timer = QTimer()
    timer.setInterval(10)

    def tick() -> None:
        ticks.append(time.perf_counter())
        done = fut.done() if fut is not None else True
        if done and ticks[-1] - start >= min_seconds:
            timer.stop()
            app.quit()

    timer.timeout.connect(tick)
    timer.start()
    app.exec()
    if fut is not None:
        fut.result(5)
    gaps = [(b - a) * 1000 - 10 for a, b in itertools.pairwise(ticks)]
    return max(gaps) if gaps else 0.0, len(ticks)


def measure(rt: Runtime, cfgs: list[ServerConfig], runs: int, label: str) -> None:
    rt.run(connect(cfgs), timeout=120)  # warm-up: imports, first connections
    singles = []
    for cfg in cfgs:
        singles.append(statistics.median(rt.run(connect([cfg]), timeout=120) for _ in range(runs)))
    together = [rt.run(connect(cfgs), timeout=120) for _ in range(runs)]
    slowest = max(singles)
    med_all = statistics.median(together)
    print(f"[{label}] one server alone (median of {runs}): fastest {min(singles) * 1000:.1f} ms, "
          f"slowest {slowest * 1000:.1f} ms")
    print(f"[{label}] {len(cfgs)} servers at once (median of {runs}): {med_all * 1000:.1f} ms")
    print(f"[{label}] ratio together / slowest single: {med_all / slowest:.2f}x (target <= 1.5x); "
          f"together / sum of singles: {med_all / sum(singles):.2f}x (fully sequential = 1.0x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tools", type=int, default=20)
    ap.add_argument("--latency-ms", type=int, default=50,
                    help="simulated network round trip of the second scenario")
    a = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (shared with other work)")
    print("connect = open the session, initialize, list tools (then close)")
    rt = Runtime(name="bench-runtime")
    try:
        with http_servers(a.servers, tools=a.tools) as servers:
            cfgs = [ServerConfig(f"s{i}", "http", url=s.url, timeout=30) for i, s in enumerate(servers)]
            measure(rt, cfgs, a.runs, "loopback, no added latency")
            base = [stall_probe(rt, None)[0] for _ in range(3)]
            loaded = [stall_probe(rt, connect(cfgs), min_seconds=0.5)[0] for _ in range(a.runs)]
            print(f"Qt 10 ms timer, worst stall idle (median of 3): {statistics.median(base):.1f} ms")
            print(f"Qt 10 ms timer, worst stall while {a.servers} servers connect on the runtime thread: "
                  f"median {statistics.median(loaded):.1f} ms, max {max(loaded):.1f} ms (target <= 50 ms)")
        with http_servers(a.servers, tools=a.tools, latency_ms=a.latency_ms) as servers:
            cfgs = [ServerConfig(f"s{i}", "http", url=s.url, timeout=30) for i, s in enumerate(servers)]
            measure(rt, cfgs, a.runs, f"loopback + {a.latency_ms} ms per request")
    finally:
        rt.stop()


if __name__ == "__main__":
    main()
