"""Forking a 10,000-file, 200 MB workspace (issue 24): the fork, and the diff/apply of a small change.

Targets: a copy fork <= 2 s; an overlay fork <= 100 ms (Hearthside has none: the reason is
printed; on a reflink filesystem the copy is copy-on-write and is measured as such). Baseline
in the same run: ``cp -a`` of the same tree. Median of several runs; each fork is made through
the app's ForkService (the path the Subagent tool takes: size check, base versions, copy,
registry) and discarded after it is timed. Between runs (untimed) ``sync`` writes back what the
previous run left dirty, for the fork and ``cp -a`` alike: without it, on a slow shared disk
every later run waits for the earlier runs' writeback and both figures grow tenfold.

Usage: .venv/bin/python benchmarks/bench_forks.py [--runs 5] [--files 10000] [--mb 200]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]
from benchkit import median_ms, throwaway_home


def make_tree(root: Path, files: int, total_mb: int) -> None:
    """``files`` files in 100 folders, ``total_mb`` MB in all (a few large files, many small)."""
    big = max(1, files // 500)  # 20 files carry most of the bytes, the rest are 1-8 KB notes
    small_bytes = 0
    for i in range(files - big):
        d = root / f"d{i % 100:02d}"
        d.mkdir(exist_ok=True)
        data = "\n".join(os.urandom(32).hex() for _ in range(16 * (1 + i % 8))).encode()  # text: diffable
        small_bytes += len(data)
        (d / f"note{i}.md").write_bytes(data)
    per_big = max(0, (total_mb * 1024 * 1024 - small_bytes) // big)
    for i in range(big):
        (root / f"media{i}.bin").write_bytes(os.urandom(per_big))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    home = throwaway_home("forks")
    from hearthside.adapters.forker import overlay_unavailable_reason, reflink_probe
    from hearthside.app.context import AppContext

    try:
        ws = home / "workspace"
        ws.mkdir()
        make_tree(ws, args.files, args.mb)
        size = sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())
        app = AppContext()
        app.settings.set("files.workspace", str(ws))
        forks = app.forks
        state = app.paths.state_dir
        state.mkdir(parents=True, exist_ok=True)
        subprocess.run(["sync"], check=False)

        def discard(fork: Any) -> None:
            forks.discard(forks.fork_id(fork))
            os.sync()  # untimed: each run starts with no dirty pages of the previous one to write back

        fork_ms, _ = median_ms(lambda: forks.create("bench", "bench"), args.runs, after=discard)
        n = 0

        def cp_a() -> Path:
            nonlocal n
            n += 1
            dst = state / f"cp-{n}"
            subprocess.run(["cp", "-a", str(ws), str(dst)], check=True)
            return dst

        def remove(dst: Path) -> None:
            shutil.rmtree(dst)
            os.sync()

        cp_ms, _ = median_ms(cp_a, args.runs, after=remove)

        # the diff and apply of a small change: 3 files changed, 1 added, 1 removed
        def prepared(run: int) -> str:
            fork = forks.create("bench", "small change")
            child = Path(forks.root_of(fork))
            for i in range(3):
                p = child / f"d{i:02d}" / f"note{i}.md"
                p.write_bytes(p.read_bytes() + b"\nchanged\n")
            (child / "d00" / f"new{run}.md").write_bytes(b"new\n")
            (child / "d01" / f"note{101 + 100 * run}.md").unlink()
            forks.finished(forks.fork_id(fork), "bench")
            return forks.fork_id(fork)

        diff_times, apply_times = [], []
        for run in range(args.runs):
            fid = prepared(run)
            os.sync()
            t = time.perf_counter()
            review = forks.show(fid)
            diff_times.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            forks.apply(fid)
            apply_times.append((time.perf_counter() - t) * 1000)
        reflink = reflink_probe(state)
        print(f"workspace: {args.files:,} files, {size / 1e6:.0f} MB; {args.runs} runs, median; "
              f"filesystem reflinks: {'yes' if reflink else 'no'}")
        kind = "reflink (copy-on-write)" if reflink else "copy (copy_file_range)"
        print(f"  fork, {kind}:               {fork_ms:8.1f} ms  (target <= 2000)")
        print(f"  baseline: cp -a of the same tree:        {cp_ms:8.1f} ms  (fork / cp -a = {fork_ms / cp_ms:.2f})")
        print(f"  overlay fork: not measured. {overlay_unavailable_reason()}")
        print(f"  diff of a small change (5 files):        {statistics.median(diff_times):8.1f} ms  "
              f"({len(review.files)} file diffs)")
        print(f"  apply of that change:                    {statistics.median(apply_times):8.1f} ms")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
