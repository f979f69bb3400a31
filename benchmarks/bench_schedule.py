"""Check-in schedule benchmarks (issue 20). Prints figures; asserts nothing.

1. Idle cost of the 30-second wake: ``hearthside --headless`` with 20 personas whose check-ins
   are scheduled (interval 30 minutes, each just checked in, so nothing runs during the
   measurement) against the same app with check-ins off (interval 0). CPU time of the process
   (user + system, from /proc) over ``--seconds`` after a warm-up, as % of one core.
2. Wake -> overdue check-in latency: the same 20 personas under libfaketime; the wall clock
   jumps 3 hours at a random moment of the 30-second wake cycle and the loopback model stamps
   when each persona's check-in request arrives. p50/p95 of the first request after each jump
   and of all personas' requests.

Usage: .venv/bin/python benchmarks/bench_schedule.py [--seconds 300] [--jumps 10] [--personas 20]
Runs in a throwaway HOME; the real home is never touched. Part 2 needs libfaketime (Debian
``faketime``) and is skipped without it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "tests")]
LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
SHIM = ROOT / "tests" / "faketime_shim"


def home_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTHSIDE_")}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_RUNTIME_DIR": str(home / "run"),
    })
    (home / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
    return env


def setup(home: Path, personas: int, interval: float, last: datetime | None) -> None:
    """``personas`` persona folders, their settings, and (when ``last``) a schedule saying each
    checked in at ``last``."""
    os.environ.update(home_env(home))
    from hearthside.app.checkins import ScheduleStore
    from hearthside.app.paths import AppPaths

    paths = AppPaths.from_environment()
    lines = []
    for i in range(personas):
        name = f"p{i:02d}"
        folder = paths.personas_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SOUL.md").write_text(f"You are {name}.\n")
        (folder / "HEARTBEAT.md").write_text("- Remind me about the 3pm sync.\n")
        lines += [f"[personas.{name}]", f"heartbeat_interval_minutes = {interval:g}", ""]
        if last is not None:
            ScheduleStore(paths.schedule_file).update(name, anchor=last, settled=last, last_ran=last,
                                                      last_status="silent")
    paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    paths.settings_file.write_text("\n".join(lines))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cost(personas: int, seconds: float, interval: float, model_env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        setup(home, personas, interval, datetime.now(UTC) if interval else None)
        env = {**home_env(home), **model_env}
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "--headless"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(20)  # start-up (packs, watchers, the first wake) is not idle time
            c0, t0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(seconds)
            c1, t1 = cpu_seconds(proc.pid), time.monotonic()
        finally:
            proc.terminate()
            proc.wait(30)
    return 100 * (c1 - c0) / (t1 - t0)


def latency(personas: int, jumps: int, fm: Any, arrivals: list[tuple[float, str]]) -> tuple[list[float], list[float]]:
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    firsts: list[float] = []
    alls: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        setup(home, personas, 30, start - timedelta(minutes=5))
        clock = home / "faketime.rc"
        clock.write_text(f"@{start:%Y-%m-%d %H:%M:%S}\n")
        env = {**home_env(home), **fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback", "LD_PRELOAD": str(LIB),
               "FAKETIME_TIMESTAMP_FILE": str(clock), "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
               "TZ": "UTC", "PYTHONPATH": str(SHIM)}
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "--headless"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(15)
            now, written = start, time.monotonic() - 15
            for _ in range(jumps):
                time.sleep(random.uniform(0, 30))  # a random moment of the wake cycle
                arrivals.clear()
                now += timedelta(seconds=time.monotonic() - written, hours=3)
                clock.write_text(f"@{now:%Y-%m-%d %H:%M:%S}\n")
                jumped = written = time.monotonic()
                deadline = jumped + 120
                while len({p for _, p in arrivals}) < personas and time.monotonic() < deadline:
                    time.sleep(0.05)
                got = sorted(t - jumped for t, _ in arrivals)
                seen = len({p for _, p in arrivals})
                if seen < personas:
                    print(f"  a jump: only {seen} of {personas} personas checked in within 120 s", flush=True)
                if got:
                    firsts.append(got[0])
                    alls.extend(got)
        finally:
            proc.terminate()
            proc.wait(30)
    return firsts, alls


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=300.0, help="idle measurement per run (default 300)")
    ap.add_argument("--jumps", type=int, default=10, help="clock jumps for the latency part")
    ap.add_argument("--personas", type=int, default=20)
    args = ap.parse_args()
    from fakemodel import FakeModel

    arrivals: list[tuple[float, str]] = []
    lock = threading.Lock()

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        system = body["messages"][0]["content"]
        who = next((w for w in system.split() if w.startswith("p") and w[1:3].isdigit()), "?")
        with lock:
            arrivals.append((time.monotonic(), who[:3]))
        return {"text": "HEARTBEAT_OK"}

    with FakeModel(default=answer) as fm:
        # 20 check-ins start at once: the loopback server's default listen backlog (5) would
        # refuse some connections, which is the fake's limit, not what is measured here
        fm.server.socket.listen(128)
        model_env = {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}
        on = idle_cost(args.personas, args.seconds, 30, model_env)
        off = idle_cost(args.personas, args.seconds, 0, model_env)
        print(f"idle CPU over {args.seconds:g} s, {args.personas} personas: check-ins on {on:.3f} % of a core, "
              f"check-ins off {off:.3f} %, difference {on - off:+.3f} %")
        if not LIB.exists():
            print("wake -> check-in latency: skipped (libfaketime not installed)")
            return
        firsts, alls = latency(args.personas, args.jumps, fm, arrivals)
    if firsts:
        print(f"wake -> first overdue check-in request after a +3 h jump ({len(firsts)} jumps): "
              f"p50 {statistics.median(firsts):.1f} s, p95 {pct(firsts, 0.95):.1f} s, max {max(firsts):.1f} s")
        print(f"  all {len(alls)} persona requests: p50 {statistics.median(alls):.1f} s, "
              f"p95 {pct(alls, 0.95):.1f} s, max {max(alls):.1f} s")
    else:
        print("wake -> check-in latency: no check-in arrived")


if __name__ == "__main__":
    main()
