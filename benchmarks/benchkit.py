"""What the benchmarks share: the median of timed runs, and a throwaway home.

Each benchmark runs as a script (``.venv/bin/python benchmarks/bench_x.py``), so this folder is
on ``sys.path`` and ``from benchkit import ...`` finds this module.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def median_ms(fn: Callable[[], Any], runs: int, *, before: Callable[[], Any] | None = None,
              after: Callable[[Any], Any] | None = None) -> tuple[float, Any]:
    """Run ``fn`` ``runs`` times; the median in milliseconds and what the last run returned.

    ``before`` (no argument) and ``after`` (given what ``fn`` returned) run around each run,
    untimed: to set each run up afresh or to clean up after it."""
    times: list[float] = []
    last: Any = None
    for _ in range(runs):
        if before is not None:
            before()
        t = time.perf_counter()
        last = fn()
        times.append((time.perf_counter() - t) * 1000)
        if after is not None:
            after(last)
    return statistics.median(times), last


def throwaway_home(name: str) -> Path:
    """A new temporary folder set as HOME and as every XDG base folder below it, so a benchmark
    never reads or writes the real home (the caller removes it, if it wants to)."""
    home = Path(tempfile.mkdtemp(prefix=f"hearthside-bench-{name}-"))
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_DATA_HOME": str(home / ".local/share"), "XDG_STATE_HOME": str(home / ".local/state"),
                       "XDG_CACHE_HOME": str(home / ".cache")})
    return home
