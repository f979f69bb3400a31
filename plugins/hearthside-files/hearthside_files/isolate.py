"""Run a read-only file tool call in a worker process that is killed at its deadline.

The in-process budget is checked between files and lines, which bounds nothing while one RE2
``search`` runs for minutes over a long line with a large pattern. So Read, Glob and Grep run
in a child process (:mod:`.worker`); the caller waits for its reply at most the time budget
plus :data:`GRACE` (the child normally stops itself with the budget's sentence first), and
kills it the moment the deadline passes or the call is cancelled (Ctrl-C, Stop). A worker is
kept for the next call while it behaves, so a call costs a round trip on a pipe, not a start.

The child is started as ``sys.executable -c BOOT``: the source install's Python, or the
bundle's ``hearthside`` executable, which answers ``-c`` the same way. Workers still alive at
exit are killed (an idle one also ends by itself when its stdin closes).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from .budget import Budget, BudgetExceeded
from .worker import BOOT

#: Seconds past the time budget the parent waits for the child's own answer before killing it.
GRACE = 1.0
#: Calls that may run at once (each in its own process), and idle workers kept for reuse.
MAX_BUSY = 4
MAX_IDLE = 2

_idle: list[Worker] = []
_live: set[Worker] = set()
_guard = threading.Lock()
_slots = threading.BoundedSemaphore(MAX_BUSY)


class WorkerFailed(Exception):
    """The worker process could not start or ended without answering; the message says how."""


class Worker:
    """One child process and the buffered end of its reply pipe."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, close_fds=True)
        self._buf = b""
        with _guard:
            _live.add(self)
        self.send({"path": [p for p in sys.path if isinstance(p, str)]})

    def send(self, doc: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(doc, default=str).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerFailed(f"its worker process ended ({exc.strerror or exc})") from None

    def receive(self, deadline: float, cancelled: threading.Event, on_late: BudgetExceeded) -> dict[str, Any]:
        """The next reply; past ``deadline`` raises ``on_late``, on cancel "cancelled" (the
        caller kills the worker either way)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            if cancelled.is_set():
                raise BudgetExceeded("stopped: the call was cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                raise on_late
            ready, _, _ = select.select([fd], [], [], min(left, 0.05))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    raise WorkerFailed(_ended(code))
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        doc = json.loads(line)
        if not isinstance(doc, dict):
            raise WorkerFailed("its worker process answered something that is not a result")
        return doc

    def kill(self) -> None:
        with _guard:
            _live.discard(self)
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


def _ended(code: int) -> str:
    if code == -24:  # SIGXCPU: the CPU-time limit the worker sets for each call
        return "its worker process used up its CPU time"
    return f"its worker process ended unexpectedly (exit status {code})"


def _take(deadline: float, cancelled: threading.Event, on_late: BudgetExceeded) -> Worker:
    """An idle worker, or a new one started within the deadline (its start counts against
    the call's time: the budget is a promise about wall time)."""
    with _guard:
        while _idle:
            w = _idle.pop()
            if w.proc.poll() is None:
                return w
            _live.discard(w)
    w = Worker()
    try:
        ready = w.receive(deadline, cancelled, on_late)
    except BaseException:
        w.kill()
        raise
    if not ready.get("ready"):
        w.kill()
        raise WorkerFailed(f"its worker process could not start ({ready.get('error', 'no reason given')})")
    return w


def _give_back(w: Worker) -> None:
    with _guard:
        if len(_idle) < MAX_IDLE and w.proc.poll() is None:
            _idle.append(w)
            return
    w.kill()


def call(tool: str, args: Any, root: str, budget: Budget) -> dict[str, Any]:
    """Run ``tool`` with ``args`` over the workspace ``root`` in a worker process; blocks.

    Returns the worker's reply (``content``, ``is_error``, ``ledger``). Raises
    :class:`BudgetExceeded` when the budget's time ran out (the worker is killed) or the call
    was cancelled, :class:`WorkerFailed` when the worker broke.
    """
    late = BudgetExceeded(budget.overtime_sentence())
    deadline = budget.started + budget.seconds + GRACE
    while not _slots.acquire(timeout=0.05):
        if budget.cancelled.is_set():
            raise BudgetExceeded("stopped: the call was cancelled")
        if time.monotonic() > deadline:
            raise late
    try:
        w = _take(deadline, budget.cancelled, late)
        try:
            # The worker stops itself at the budget, with its own sentence; GRACE later it is killed.
            left = max(budget.started + budget.seconds - time.monotonic(), 0.0)
            w.send({"tool": tool, "args": args, "root": root, "seconds": budget.seconds, "left": left,
                    "entries": budget.entries, "bytes": budget.bytes})
            reply = w.receive(deadline, budget.cancelled, late)
        except BaseException:
            w.kill()
            raise
        _give_back(w)
        return reply
    finally:
        _slots.release()


@atexit.register
def _kill_all() -> None:
    """No worker outlives Hearthside, whatever it was doing."""
    with _guard:
        workers = list(_live)
        _idle.clear()
    for w in workers:
        w.kill()
