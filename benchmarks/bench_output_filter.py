"""Cost of the output filter every CLI line and every streamed chat piece goes through
(issue 9 holes 4 and 10): redaction (known secrets + secret shapes) then control-sequence
stripping. Prints medians and ratios; asserts nothing.

1. A 4,000-character model answer streamed in 7-character pieces (as tests/fakemodel.py sends
   them) through ``StreamCleaner`` into a buffer, against writing the pieces unfiltered (the
   baseline).
2. ``safe_text`` on one 200-character line, with 0 and with 50 known secrets registered.

Usage: .venv/bin/python benchmarks/bench_output_filter.py [--runs 200]
Pure computation; no files are touched.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]

from hearthside.core import redact as redact_mod
from hearthside.core.termsafe import StreamCleaner, strip_controls

ANSWER = ("Here is what I found in your notes today. \x1b[1mImportant\x1b[0m: the meeting moved to "
          "Thursday, and Ada asked about the budget. " * 40)[:4000]
LINE = ("memory/notes/meeting  (v3, 2026-11-30)  The meeting moved to Thursday; Ada asked about "
        "the budget and the travel plans for December, see the shared folder for details.")[:200]


def median_us(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    runs = ap.parse_args().runs
    pieces = [ANSWER[i:i + 7] for i in range(0, len(ANSWER), 7)]

    def raw() -> None:
        out = io.StringIO()
        for p in pieces:
            out.write(p)

    def filtered() -> None:
        c = StreamCleaner(redact_mod.redact)
        out = io.StringIO()
        for p in pieces:
            out.write(c.feed(p))
        out.write(c.flush())

    def safe_line() -> None:
        strip_controls(redact_mod.redact(LINE))

    for _ in range(20):  # warm up the regex caches before measuring
        filtered()
        safe_line()
    base = median_us(raw, runs)
    stream0 = median_us(filtered, runs)
    line0 = median_us(safe_line, runs * 10)
    for i in range(50):
        redact_mod.register_secret(f"sk-bench-secret-{i:03d}-value")
    stream50 = median_us(filtered, runs)
    line50 = median_us(safe_line, runs * 10)
    print(f"streamed answer, {len(ANSWER)} chars in {len(pieces)} pieces (median of {runs}):")
    print(f"  unfiltered baseline           {base:9.1f} us")
    print(f"  filtered, 0 known secrets     {stream0:9.1f} us  ({stream0 / len(ANSWER):.2f} us/char)")
    print(f"  filtered, 50 known secrets    {stream50:9.1f} us  ({stream50 / len(ANSWER):.2f} us/char)")
    print(f"one 200-char line through safe_text: {line0:.1f} us (0 secrets), {line50:.1f} us (50 secrets), "
          f"ratio {line50 / line0:.2f}")


if __name__ == "__main__":
    main()
