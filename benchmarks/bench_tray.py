"""Tray benchmark (issue 11). Prints figures; asserts nothing.

1. Cold start to "tray ready" (services started: packs loaded, watchers on, MCP connecting,
   check-ins scheduled, persona rows shown) with 20 personas, 10 plugin packs and 2 MCP servers,
   median of --runs, and its ratio to a bare QApplication + QSystemTrayIcon program started the
   same way in the same run. Target: median <= 1.0 s. Under Xvfb + trayer when both exist (a
   real tray), else offscreen.
2. Hand edit -> badge count on the icon updated (on the Qt thread): p50 and p95 over 20 edits.
   Target p95 <= 500 ms.
3. Idle after start (--idle seconds, default 60): CPU % of one core and RSS of the app process.
   Targets <= 0.5 % and <= 150 MB.
4. Worst Qt event-loop stall (a 5 ms QTimer) during a check-in against the loopback model and
   during 10 MCP connects. Target <= 50 ms.

Run: .venv/bin/python benchmarks/bench_tray.py [--runs 5] [--idle 60]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

BARE = ("import sys; from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QStyle; "
        "app = QApplication(sys.argv[:1]); app.setQuitOnLastWindowClosed(False); "
        "t = QSystemTrayIcon(app.style().standardIcon(QStyle.StandardPixmap.SP_ComputerIcon)); t.show(); "
        "print('ready', flush=True); app.exec()")


def home_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_RUNTIME_DIR=str(home / "run"))
    (home / "run").mkdir(mode=0o700, exist_ok=True)
    return env


def start_display() -> tuple[dict[str, str], list[subprocess.Popen[bytes]]]:
    """Xvfb + trayer when installed (a real XEmbed tray), else offscreen."""
    from xdesktop import missing_tools, start_trayer, start_xvfb, wait_for_tray

    if missing_tools("Xvfb", "trayer"):
        return {"QT_QPA_PLATFORM": "offscreen"}, []
    xvfb, n = start_xvfb(800, 600)
    env = {"DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
    tray = start_trayer(env)
    wait_for_tray(env, tray)
    return env, [tray, xvfb]


def populate(home: Path, mcp_urls: list[str]) -> None:
    """20 personas, 10 packs (each contributing a tool), the MCP servers given."""
    os.environ.update(home_env(home))
    from hearthside.app.context import AppContext
    from hearthside.core.mcpconfig import ServerConfig
    from hearthside.pluginhost.packsenv import PacksEnv
    from packfactory import write_installed_dist

    app = AppContext()
    for i in range(20):
        app.personas.create(f"persona{i:02d}")
    # A real checklist for persona00, so its check-in calls the model (the template's is empty).
    (app.paths.personas_dir / "persona00" / "HEARTBEAT.md").write_text(
        "# Checklist\n\n- Remind me about the 3pm sync.\n", encoding="utf-8")
    site = PacksEnv(app.paths.packs_dir).site_dir
    for i in range(10):
        write_installed_dist(site, f"benchpack{i}", f"[hearthside.plugins]\nbenchpack{i} = benchpack{i}\n", f"""
            from hearthside import hookimpl
            from hearthside.core.tools import FunctionTool

            @hookimpl
            def hearthside_tools(register):
                register(FunctionTool("Bench{i}", "Echo.", lambda text: text,
                                      {{"type": "object", "properties": {{"text": {{"type": "string"}}}}}}))
            """)
    for j, url in enumerate(mcp_urls):
        app.mcp.add(ServerConfig(f"bench{j}", "http", url=url))


def time_to_line(cmd: list[str], env: dict[str, str], marker: str) -> tuple[float, subprocess.Popen[str]]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if marker in line:
            return time.perf_counter() - t0, proc
    raise SystemExit(f"{cmd} ended without printing {marker!r}")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cold_start(home: Path, display: dict[str, str], runs: int, idle: float) -> None:
    env = dict(home_env(home), **display, HEARTHSIDE_REPORT_READY="1")
    app_times, bare_times = [], []
    for _ in range(runs):
        t, p = time_to_line([sys.executable, "-c", BARE], env, "ready")
        bare_times.append(t)
        stop(p)
        t, p = time_to_line([sys.executable, "-m", "hearthside"], env, "hearthside: ready")
        app_times.append(t)
        stop(p)
    app_med, bare_med = statistics.median(app_times), statistics.median(bare_times)
    mode = "Xvfb + trayer" if display.get("QT_QPA_PLATFORM") == "xcb" else "offscreen (no tray)"
    print(f"cold start to tray ready ({mode}), 20 personas, 10 packs, 2 MCP servers, {runs} runs:")
    print(f"  hearthside median {app_med:.3f} s  (runs: {', '.join(f'{t:.2f}' for t in app_times)})  target <= 1.0 s")
    print(f"  bare QApplication+QSystemTrayIcon median {bare_med:.3f} s  ratio {app_med / bare_med:.2f}x")
    _, p = time_to_line([sys.executable, "-m", "hearthside"], env, "hearthside: ready")
    try:
        time.sleep(2)  # let the first MCP connects and scans finish
        c0, t0 = cpu_seconds(p.pid), time.monotonic()
        time.sleep(idle)
        cpu = (cpu_seconds(p.pid) - c0) / (time.monotonic() - t0) * 100
        print(f"idle {idle:g} s after start: CPU {cpu:.2f} % of one core (target <= 0.5 %), "
              f"RSS {rss_mb(p.pid):.0f} MB (target <= 150 MB)")
    finally:
        stop(p)


def in_process(home: Path) -> None:
    """Badge latency and event-loop stalls, with the real Shell on an offscreen QApplication."""
    os.environ.update(home_env(home))
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from drift_helpers import atomic_save
    from fakemodel import FakeModel
    from hearthside.app.context import AppContext
    from hearthside.core.mcpconfig import ServerConfig
    from hearthside.ui.app import Shell
    from mcp_helpers import http_servers
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    qapp = QApplication.instance() or QApplication([])

    def pump_until(pred, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise SystemExit("timed out")
            qapp.processEvents()
            time.sleep(0.001)

    fm = FakeModel(default={"text": "The 3pm sync starts soon.", "delay": 0.3})
    fm.__enter__()
    os.environ.update(fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback")
    app = AppContext()
    shell = Shell(app, opener=lambda p: True)
    shell.exit = lambda: None
    shell.start()
    pump_until(lambda: shell.started and shell.rows_loaded, 120)
    lat = []
    for i in range(20):
        soul = app.paths.personas_dir / f"persona{i:02d}" / "SOUL.md"
        t0 = time.perf_counter()
        atomic_save(soul, f"edited by hand {i}\n")
        pump_until(lambda i=i: shell.icon_state()[1] >= i + 1)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    p95 = lat[min(len(lat) - 1, round(0.95 * len(lat)) - 1)]
    print(f"hand edit -> badge updated: p50 {statistics.median(lat) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms "
          "(target p95 <= 500 ms)")

    def worst_stall(start, done) -> float:  # type: ignore[no-untyped-def]
        ticks: list[int] = []
        clock = QElapsedTimer()
        clock.start()
        timer = QTimer()
        timer.timeout.connect(lambda: ticks.append(clock.elapsed()))
        timer.start(5)
        start()
        pump_until(done, 120)
        timer.stop()
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        if not gaps:
            raise SystemExit("the probe timer never ran twice: nothing was measured")
        return float(max(gaps))

    outcomes: list[object] = []
    stall = worst_stall(lambda: shell.bridge.call(lambda: shell.lifecycle.check_in_now("persona00").result(),
                                                  outcomes.append), lambda: bool(outcomes))
    print(f"worst event-loop stall during a check-in ({getattr(outcomes[0], 'status', '?')}): {stall:.0f} ms "
          "(target <= 50 ms)")
    with http_servers(10) as servers:
        for j, s in enumerate(servers):
            app.mcp.add(ServerConfig(f"ten{j}", "http", url=s.url))
        statuses: list[object] = []
        stall = worst_stall(lambda: shell.bridge.call_async(app.mcp.connect_all, statuses.append),
                            lambda: bool(statuses))
        print(f"worst event-loop stall during 10 MCP connects: {stall:.0f} ms (target <= 50 ms)")
        shell.lifecycle.stop()
    shell.bridge.close()
    fm.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of idle to measure (60 for the target)")
    args = ap.parse_args()
    from mcp_helpers import http_servers

    display, helpers = start_display()
    home = Path(tempfile.mkdtemp(prefix="hearthside-bench-tray-"))
    try:
        with http_servers(2) as servers:
            populate(home, [s.url for s in servers])
            cold_start(home, display, args.runs, args.idle)
            in_process(home)
    finally:
        for h in helpers:
            h.terminate()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
