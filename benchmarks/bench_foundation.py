"""Foundation benchmarks (issue 2). Prints figures; asserts nothing.

- compose of a persona folder with all seven files at the 2 MiB cap vs plain Path.read_bytes()
  of the same files, median of N runs, and the peak extra memory of one compose;
- SoulStore("/dev/zero").load(): wall time and memory growth;
- `hearthside --version` cold start wall time.

Run: .venv/bin/python benchmarks/bench_foundation.py [--runs N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from hearthside import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, SoulStore, compose_soul
from hearthside.core.compose import compose_persona


def median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_compose(runs: int, line_text: str, label: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        line = line_text.encode()
        block = (line * (MAX_BOOTSTRAP_FILE_BYTES // len(line) + 1))[:MAX_BOOTSTRAP_FILE_BYTES]
        block = block.decode("utf-8", "ignore").encode()  # whole characters only
        for n in BOOTSTRAP_ORDER:
            (root / n).write_bytes(block)
        total = sum((root / n).stat().st_size for n in BOOTSTRAP_ORDER)
        paths = [root / n for n in BOOTSTRAP_ORDER]

        def plain() -> None:
            # Keep the bytes, as compose keeps them: discarding each buffer at once lets
            # malloc hand back the same warm pages, a speed no real reader gets.
            held = [p.read_bytes() for p in paths]
            del held

        def plain_text() -> None:
            held = [p.read_text(encoding="utf-8") for p in paths]
            del held

        def floor() -> None:
            # The least any compose returning one str can do: read + decode each file, then
            # build the one str. The final str is a fresh 14+ MiB block, so it pays page
            # faults that the per-file baselines (served from warm, reused heap) do not.
            held = "".join([p.read_text(encoding="utf-8") for p in paths])
            del held

        def composed() -> None:
            compose_soul(root)

        def scanned() -> None:
            # what a session does: compose plus the injection scan of each file
            compose_persona(root, scan=True)

        plain(), composed()  # warm the page cache
        rounds = []
        for _ in range(3):  # interleave to share the machine's noise fairly
            rounds.append((median_ms(plain, runs), median_ms(composed, runs), median_ms(plain_text, runs),
                           median_ms(floor, runs), median_ms(scanned, runs)))
        p_ms = statistics.median(r[0] for r in rounds)
        c_ms = statistics.median(r[1] for r in rounds)
        t_ms = statistics.median(r[2] for r in rounds)
        f_ms = statistics.median(r[3] for r in rounds)
        s_ms = statistics.median(r[4] for r in rounds)
        tracemalloc.start()
        soul, _ = compose_soul(root)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        composed_bytes = len(soul.encode())
        print(f"compose 7 x 2 MiB {label} ({total / 2**20:.1f} MiB): median {c_ms:.2f} ms; "
              f"plain read_bytes median {p_ms:.2f} ms; ratio {c_ms / p_ms:.2f}x (target <= 1.5x); "
              f"read_text (read + UTF-8 decode) median {t_ms:.2f} ms; ratio {c_ms / t_ms:.2f}x")
        print(f"  floor (read_text of each file, then one joined str) median {f_ms:.2f} ms = "
              f"{f_ms / p_ms:.2f}x plain; compose / floor {c_ms / f_ms:.2f}x")
        print(f"  compose + injection scan (a session's compose) median {s_ms:.2f} ms = "
              f"{s_ms / c_ms:.2f}x compose")
        print(f"compose peak extra memory: {peak / 2**20:.1f} MiB = "
              f"{peak / composed_bytes:.2f}x the {composed_bytes / 2**20:.1f} MiB composed (target <= 3x)")


def bench_dev_zero(runs: int) -> None:
    def once() -> None:
        SoulStore("/dev/zero").load()

    ms = median_ms(once, runs)
    tracemalloc.start()
    res = SoulStore("/dev/zero").load_with_meta()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"SoulStore('/dev/zero').load(): median {ms:.3f} ms (target <= 50 ms); "
          f"peak memory {peak / 1024:.1f} KiB (target < 1 MiB); reason: {res.reason!r}")


def bench_version(runs: int) -> None:
    exe = Path(sys.executable).with_name("hearthside")
    cmd = [str(exe) if exe.exists() else sys.executable, "--version"]
    if not exe.exists():
        cmd = [sys.executable, "-m", "hearthside", "--version"]
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    base = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True)
        base.append(time.perf_counter() - t0)
    print(f"`hearthside --version` cold start: median {statistics.median(times[1:]) * 1000:.0f} ms "
          f"(target <= 300 ms); bare `python -c pass` {statistics.median(base) * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    print(f"# foundation benchmarks on {os.cpu_count()} cores, {a.runs} runs each")
    bench_compose(a.runs, "The quick brown fox jumps over the lazy dog.\n", "ASCII text")
    bench_compose(a.runs, "Le cœur a ses raisons — Ünïcödé ✓ 日本語のテキスト\n", "non-ASCII text")
    bench_dev_zero(a.runs)
    bench_version(a.runs)


if __name__ == "__main__":
    main()
