"""Injection scan benchmark and corpus counts (issue 12 item 1). Prints figures; asserts nothing.

- false alarms (clean texts with a finding) and misses (attacks without one) on the corpus in
  tests/injection_corpus.py, for the current scan and, with ``--old REV``, the scan as it was
  at a git revision (its ``core/injection.py`` and the soul's fence check);
- median time of ``scan_for_injection`` over 2 MiB texts: ASCII, accented Latin, Persian with
  ZWNJ, Chinese with fullwidth punctuation (which NFKC changes, so the offset map is built).

Run: .venv/bin/python benchmarks/bench_injection.py [--runs N] [--old 2a3948f]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hearthside.core import injection as current
from hearthside.core.soul import validate_body
from injection_corpus import ATTACKS, CLEAN, SOUL_FENCE_ATTACKS

Scan = Callable[[str], Any]


def load_old(rev: str) -> Any:
    """The injection module as it was at ``rev`` (it imports only the standard library)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:desktop/hearthside/core/injection.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_injection.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_injection", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_injection"] = mod
    spec.loader.exec_module(mod)
    return mod


def counts(scan: Scan, fence: Callable[[str], bool]) -> tuple[int, int, list[str], list[str]]:
    alarms = [n for n, t in CLEAN.items() if scan(t) is not None]
    misses = [n for n, t in ATTACKS.items() if scan(t) is None]
    misses += [f"soul fence: {n}" for n, t in SOUL_FENCE_ATTACKS.items() if scan(t) is None and not fence(t)]
    return len(alarms), len(misses), alarms, misses


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def big(line: str) -> str:
    data = (line * (2 * 1024 * 1024 // len(line.encode()) + 1)).encode()[: 2 * 1024 * 1024]
    return data.decode("utf-8", "ignore")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--old", default="", help="a git revision whose scan to compare with")
    a = ap.parse_args()
    total_clean, total_attacks = len(CLEAN), len(ATTACKS) + len(SOUL_FENCE_ATTACKS)
    print(f"# corpus: {total_clean} clean texts, {total_attacks} attacks")
    scans: list[tuple[str, Scan]] = [("current", current.scan_for_injection)]
    old = load_old(a.old) if a.old else None
    if old is not None:
        scans.append((f"old ({a.old})", old.scan_for_injection))
    for label, scan in scans:
        if scan is current.scan_for_injection:
            def fence(t: str) -> bool:
                return "fence tag" in validate_body(t)[1]
        else:
            def fence(t: str) -> bool:
                return "</soul>" in t.strip()
        n_alarm, n_miss, alarms, misses = counts(scan, fence)
        print(f"{label}: false alarms {n_alarm}/{total_clean}, misses {n_miss}/{total_attacks}")
        if alarms:
            print(f"  false alarms: {', '.join(alarms)}")
        if misses:
            print(f"  misses: {', '.join(misses)}")
    texts = {
        "ASCII": big("The quick brown fox jumps over the lazy dog.\n"),
        "accented Latin + CJK (NFKC-stable)": big("Le cœur a ses raisons — Ünïcödé ✓ 日本語のテキスト\n"),
        "Persian with ZWNJ": big(CLEAN["persian"] + "\n"),
        "Chinese with fullwidth punctuation": big(CLEAN["chinese"] + "\n"),
    }
    current.scan_for_injection("ｘ")  # build the NFKC table once, as a session would
    for label, text in texts.items():
        now = median_ms(lambda t=text: current.scan_for_injection(t), a.runs)
        row = f"scan 2 MiB {label}: current median {now:.1f} ms"
        if old is not None:
            row += f"; old median {median_ms(lambda t=text: old.scan_for_injection(t), a.runs):.1f} ms"
        print(row)


if __name__ == "__main__":
    main()
