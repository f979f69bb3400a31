"""Learned-memory benchmarks (issue 6). Prints figures; asserts nothing.

1. Search over 4,096 entries (BM25): median latency of warm queries (index cached for the
   file's bytes) and of a cold query (the first after a write: parse + index build).
2. remember() with 1,000 small entries present, single process: median latency and ops/s.
Baseline for both, measured in the same run: one plain ``json.loads`` of the same document
plus an atomic save (temp file, fsync, rename) of it.

Usage: .venv/bin/python benchmarks/bench_memory.py [--runs 200]
Runs in a throwaway folder; the real home is never touched.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "desktop"))

from hearthside.adapters.atomicfile import write_atomic
from hearthside.adapters.memory_store import JsonMemoryStore
from hearthside.core.memory.model import MemoryDocument

WORDS = ["coffee", "tea", "lisbon", "porto", "sister", "brother", "meeting", "sync", "budget", "garden", "bike",
         "train", "music", "piano", "book", "novel", "doctor", "dentist", "invoice", "holiday", "birthday", "dinner",
         "lunch", "recipe", "oat", "milk", "project", "deadline", "report", "weekend", "morning", "evening", "run",
         "swim", "yoga", "cat", "dog", "plant"]


def ms(samples: list[float]) -> str:
    p95 = sorted(samples)[int(len(samples) * .95)]
    return f"median {statistics.median(samples) * 1000:.2f} ms (p95 {p95 * 1000:.2f} ms)"


def fill(folder: Path, n: int, rng: random.Random) -> JsonMemoryStore:
    doc = MemoryDocument()
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        doc.remember(f"topic{i % 64}/item{i}", words, f"note {i}: {words[:40]}", now=time.time())
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "memory.json", json.dumps(doc.to_json_obj(), separators=(",", ":")))
    return JsonMemoryStore(folder)


def baseline(path: Path, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        doc = json.loads(path.read_bytes())
        write_atomic(path.with_name("baseline.json"), json.dumps(doc, separators=(",", ":")))
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print("# learned memory (JSON + file lock), single process")

        store = fill(root / "big", 4096, rng)
        base_big = baseline(store.path, max(20, args.runs // 10))
        store.search("coffee")  # build the index once
        warm = []
        for _ in range(args.runs):
            q = " ".join(rng.choice(WORDS) for _ in range(2))
            t = time.perf_counter()
            store.search(q)
            warm.append(time.perf_counter() - t)
        cold = []
        for i in range(max(10, args.runs // 20)):
            store.remember("topic0/item0", f"v{i} garden")  # changes the file -> next search rebuilds
            store._cache = None
            t = time.perf_counter()
            store.search("garden budget")
            cold.append(time.perf_counter() - t)
        size = store.path.stat().st_size
        print(f"search, 4,096 entries ({size / 1024:.0f} KiB): warm {ms(warm)}; cold {ms(cold)}")
        print(f"  baseline json load + atomic save of the same document: {ms(base_big)}")
        print(f"  ratio warm search / baseline: {statistics.median(warm) / statistics.median(base_big):.3f}; "
              f"cold search / baseline: {statistics.median(cold) / statistics.median(base_big):.2f}")

        store = fill(root / "small", 1000, rng)
        base_small = baseline(store.path, max(20, args.runs // 4))
        lat = []
        t0 = time.perf_counter()
        for i in range(args.runs):
            t = time.perf_counter()
            store.remember(f"bench/k{i}", f"small value {i}")
            lat.append(time.perf_counter() - t)
        total = time.perf_counter() - t0
        print(f"remember, 1,000 entries present: {ms(lat)}; {args.runs / total:.0f} ops/s")
        print(f"  baseline json load + atomic save of the same document: {ms(base_small)}")
        print(f"  ratio remember / baseline: {statistics.median(lat) / statistics.median(base_small):.2f}")


if __name__ == "__main__":
    main()
