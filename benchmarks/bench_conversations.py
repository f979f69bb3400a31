"""Kept conversations: list, search and append over 2,000 conversations (200,000 messages) of one
persona (issue 23).

Targets: listing <= 300 ms (what the sidebar needs to paint: titles, times, counts), search
<= 100 ms warm, appending one message <= 2 ms. Baseline in the same run: reading the same files
and ``json.loads``-ing every line (what a list that parsed every message would cost), and for the
append, a bare ``open(..., "a").write(line)`` with no lock and no fsync. Median of several runs.

What is measured:
* list, cold: a new service and no ``.index.json`` (the first list ever, or after the cache was
  removed): every file is read once and the cache written.
* list, after a restart: a new service with the cache on disk (what the tray's first sidebar
  paint costs): the cache is read and each file ``stat``-ed.
* list, warm: the same service again.
* search, first: builds the persona's index; warm: the same service again (one conversation
  appended to between runs, so the index really is brought up to date).
* append: ``ConversationService.append`` of one message (lock, checks, redaction, one write;
  the fdatasync follows within half a second on a background thread).

Usage: .venv/bin/python benchmarks/bench_conversations.py [--runs 7] [--conversations 2000]
Runs in a throwaway HOME (under $TMPDIR; the file system is printed, since fdatasync costs what
the disk makes it cost); the real home is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]
from benchkit import median_ms, throwaway_home

WORDS = ("garden", "tomato", "invoice", "tax", "april", "meeting", "lisbon", "coffee", "tea", "train",
         "ticket", "doctor", "appointment", "birthday", "present", "recipe", "soup", "bread", "python",
         "script", "backup", "photo", "holiday", "beach", "mountain", "weather", "rain", "umbrella",
         "budget", "rent", "landlord", "plumber", "kitchen", "sink", "library", "book", "novel", "chapter",
         "deadline", "report", "slides", "review", "friday", "monday", "sync")


def make_data(folder: Path, conversations: int, messages: int, seed: int = 23) -> list[str]:
    from hearthside.core.conversations import ConversationId, Header, Kind, Record, dumps_line

    r = random.Random(seed)
    folder.mkdir(parents=True, mode=0o700)
    ids = []
    t0 = 1_780_000_000.0
    for c in range(conversations):
        cid = ConversationId(f"20260101-{c // 3600:02d}{c // 60 % 60:02d}{c % 60:02d}-{c:08x}")
        ids.append(cid.value)
        start = t0 + c * 3600
        lines = [dumps_line(Header(cid, "Ada", start))]
        for m in range(messages):
            kind = Kind.USER if m % 2 == 0 else Kind.ASSISTANT
            text = " ".join(r.choice(WORDS) for _ in range(r.randrange(10, 60)))
            lines.append(dumps_line(Record(kind, start + m * 30, text)))
        path = folder / f"{cid.value}.jsonl"
        path.write_bytes(b"".join(lines))
        os.chmod(path, 0o600)
    return ids


def json_loads_all(folder: Path) -> int:
    n = 0
    for path in folder.glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            json.loads(line)
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--conversations", type=int, default=2000)
    ap.add_argument("--messages", type=int, default=100)
    args = ap.parse_args()
    home = throwaway_home("conversations")
    from hearthside.app.conversations import ConversationService
    from hearthside.app.paths import AppPaths
    from hearthside.app.settings import SettingsStore
    from hearthside.core.conversations import ConversationId, Kind, Record

    try:
        paths = AppPaths.from_environment()
        folder = paths.data_dir / "conversations" / "Ada"
        t = time.perf_counter()
        ids = make_data(folder, args.conversations, args.messages)
        fs = subprocess.run(["stat", "-f", "-c", "%T", str(folder)], capture_output=True, text=True,
                            check=False).stdout.strip()
        print(f"{len(ids)} conversations, {len(ids) * args.messages} messages, "
              f"{sum(p.stat().st_size for p in folder.glob('*.jsonl')) / 1e6:.0f} MB on {fs} "
              f"(made in {time.perf_counter() - t:.1f} s); median of {args.runs} runs")

        def service() -> ConversationService:
            return ConversationService(paths, SettingsStore(paths.settings_file))

        baseline, lines = median_ms(lambda: json_loads_all(folder), max(3, args.runs // 2))
        print(f"baseline: read + json.loads every line ({lines} lines): {baseline:9.1f} ms")
        index = folder / ".index.json"
        cold, metas = median_ms(lambda: service().list("Ada"), max(3, args.runs // 2),
                                before=lambda: index.unlink(missing_ok=True))
        assert len(metas) == len(ids) and metas[0].messages == args.messages
        print(f"list, cold (no cache, every file read):   {cold:9.1f} ms   {baseline / cold:6.1f}x vs baseline")
        restart, _ = median_ms(lambda: service().list("Ada"), args.runs)
        print(f"list, after a restart (cache on disk):    {restart:9.1f} ms   {baseline / restart:6.1f}x"
              "  (target <= 300)")
        svc = service()
        svc.list("Ada")
        warm, _ = median_ms(lambda: svc.list("Ada"), args.runs)
        print(f"list, warm (same service):                {warm:9.1f} ms   {baseline / warm:6.1f}x")

        first, hits = median_ms(lambda: service().search("Ada", "plumber kitchen sink"), 3)
        print(f"search, first (index built):              {first:9.1f} ms   {baseline / first:6.1f}x")
        svc = service()
        svc.search("Ada", "plumber")
        target = ConversationId(ids[len(ids) // 2])
        counter = iter(range(10**9))

        def touch() -> None:  # one appended message between searches: the warm index catches up
            svc.append("Ada", target, [Record(Kind.USER, time.time(), f"zeppelin ride {next(counter)}")])

        warm_s, hits = median_ms(lambda: svc.search("Ada", "zeppelin plumber"), args.runs, before=touch)
        assert hits and hits[0].meta.id == target
        print(f"search, warm (after one append):          {warm_s:9.1f} ms   {baseline / warm_s:6.1f}x"
              "  (target <= 100)")

        rec = Record(Kind.ASSISTANT, time.time(), " ".join(WORDS[:40]))
        append, _ = median_ms(lambda: svc.append("Ada", target, [rec]), max(args.runs, 50))
        plain = folder.parent / "plain.jsonl"
        line = json.dumps(rec.as_json()) + "\n"

        def bare() -> None:
            with open(plain, "a") as fh:
                fh.write(line)

        bare_ms, _ = median_ms(bare, max(args.runs, 50))
        print(f"append one message (lock, checks, write):  {append:6.2f} ms   "
              f"bare open+write: {bare_ms:.2f} ms  (target <= 2)")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
