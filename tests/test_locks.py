"""adapters/locks.py: one lock per path per process, re-entrant in its thread, exclusive between
threads and between processes (real flock on real files)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hearthside.adapters.locks import LockBusy, lock_for, locked


def test_one_lock_object_per_path(tmp_path: Path) -> None:
    a = lock_for(tmp_path / "x.lock")
    assert lock_for(str(tmp_path / "x.lock")) is a
    assert lock_for(tmp_path / "sub" / ".." / "x.lock") is a
    assert lock_for(tmp_path / "y.lock") is not a


def test_re_entrant_in_the_holding_thread(tmp_path: Path) -> None:
    """A service that locks inside a locked block does not wait on itself (with two filelock
    objects on one path it did, until its timeout)."""
    with locked(tmp_path / "x.lock", 1), locked(tmp_path / "x.lock", 0):
        pass


def test_another_thread_waits_then_gets_it(tmp_path: Path) -> None:
    lock = lock_for(tmp_path / "x.lock")
    got: list[str] = []
    lock.acquire(1)

    def other() -> None:
        try:
            lock.acquire(0)
        except LockBusy:
            got.append("busy")
        lock.acquire(5)
        got.append("had it")
        lock.release()

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.2)
    assert got == ["busy"]
    lock.release()
    t.join(10)
    assert got == ["busy", "had it"]


def test_another_process_is_excluded_and_the_lock_is_free_after(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time\nfrom hearthside.adapters.locks import lock_for\n"
          "lock_for(sys.argv[1]).acquire(5)\nprint('held', flush=True)\nsys.stdin.readline()\n"),
         str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockBusy) as busy:
            lock_for(path).acquire(0.2)
        assert busy.value.lock_file == path
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(10)
    with locked(path, 5):
        pass
