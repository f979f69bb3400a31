"""Start overhead of the process sandbox per stdio MCP server (issue 24).

Target: a server started under bubblewrap answers ``initialize`` at most 20 ms later than the
same server started bare (the baseline, measured in the same run, runs interleaved). Measured
from launch to the initialize reply, for a server built with the MCP SDK (what people run) and
for a minimal responder (plain Python, no imports: the overhead alone stands out). The sandboxed
figure includes building the policy (the protected places, the settings) and the argv.

Usage: .venv/bin/python benchmarks/bench_sandbox.py [--runs 9]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]

SDK_SERVER = """
from mcp.server.mcpserver import MCPServer
srv = MCPServer("bench")
@srv.tool()
def echo(text: str) -> str:
    return text
srv.run("stdio")
"""

MINIMAL_SERVER = """
import json, sys
line = sys.stdin.readline()
req = json.loads(line)
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"protocolVersion": "2025-06-18",
    "capabilities": {}, "serverInfo": {"name": "min", "version": "0"}}}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}) + "\n"


def time_start(argv_for: object, env: dict[str, str]) -> float:
    """Seconds from launch (including building the argv) to the initialize reply."""
    t0 = time.perf_counter()
    argv = argv_for()  # type: ignore[operator]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE.encode())
    proc.stdin.flush()
    reply = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    assert b'"id":1' in reply.replace(b" ", b""), reply
    proc.stdin.close()
    proc.terminate()
    proc.wait(10)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update(HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share",
                          XDG_STATE_HOME=f"{home}/.local/state")
        from hearthside.adapters import sandbox
        from hearthside.adapters.mcp_client import minimal_env
        from hearthside.app.paths import AppPaths
        from hearthside.app.sandbox import SandboxPolicies
        from hearthside.core.mcpconfig import ServerConfig

        status = sandbox.probe(refresh=True)
        if not status.ok:
            print(f"the sandbox cannot run here: {status.reason}")
            return
        policies = SandboxPolicies.for_paths(AppPaths.from_environment())
        root = Path(home) / "work"
        root.mkdir()
        env = minimal_env({})
        print(f"bubblewrap: {status.bwrap}; {a.runs} starts each, interleaved; median (min-max) in ms")
        worst = 0.0
        for label, code in (("MCP SDK server", SDK_SERVER), ("minimal responder", MINIMAL_SERVER)):
            argv = [sys.executable, "-c", code, str(root)]
            cfg = ServerConfig("bench", "stdio", command=sys.executable, args=tuple(argv[1:]))

            def sandboxed(argv: list[str] = argv, cfg: ServerConfig = cfg) -> list[str]:
                plan = sandbox.wrap(argv, policies.for_server(cfg, env))
                assert plan.sandboxed, plan.reason
                return plan.argv

            def bare(argv: list[str] = argv) -> list[str]:
                return argv

            time_start(bare, env)  # warm the page cache for both
            time_start(sandboxed, env)
            times: dict[str, list[float]] = {"bare": [], "sandboxed": []}
            for _ in range(a.runs):
                times["bare"].append(time_start(bare, env))
                times["sandboxed"].append(time_start(sandboxed, env))
            med = {k: statistics.median(v) * 1000 for k, v in times.items()}
            over = med["sandboxed"] - med["bare"]
            worst = max(worst, over)
            for k, v in times.items():
                print(f"  {label:18s} {k:9s} {med[k]:7.1f} ms  ({min(v) * 1000:.1f}-{max(v) * 1000:.1f})")
            print(f"  {label:18s} overhead  {over:7.1f} ms  (ratio {med['sandboxed'] / med['bare']:.2f}x; "
                  f"target <= 20 ms: {'met' if over <= 20 else 'MISSED'})")
        print(f"worst overhead: {worst:.1f} ms")


if __name__ == "__main__":
    main()
