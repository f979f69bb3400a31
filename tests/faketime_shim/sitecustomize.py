"""Loaded (via PYTHONPATH) only by processes the real-time tests run under libfaketime.

libfaketime 0.9.10 with ``FAKETIME_DONT_FAKE_MONOTONIC=1`` makes ``clock_nanosleep`` on the
monotonic clock fail with EINVAL, which is what ``time.sleep`` uses since Python 3.11. Sleeping
in ``select`` instead (a relative timeout, which libfaketime leaves alone) keeps the process
working; nothing about Hearthside's schedule changes.
"""

import select
import time


def _sleep(seconds: float) -> None:
    if seconds > 0:
        select.select([], [], [], seconds)


time.sleep = _sleep
