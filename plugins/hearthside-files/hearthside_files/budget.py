"""Time, size and cancellation budgets for the file tools, and running them off the event loop.

A model can ask for work that never ends (a Glob over thousands of folders, a pattern RE2
needs minutes for). The tools run off the loop so the shared asyncio loop (heartbeats, MCP,
the chat) keeps going, and the work checks a :class:`Budget` as it goes: past its deadline,
past its entry or byte allowance, or once the caller was cancelled (Ctrl-C, Stop), it stops
with a sentence instead of running on. The checks come between files and lines; what one
check cannot interrupt (one long match) is bounded by running Read, Glob and Grep in a worker
process killed at the deadline (:mod:`.isolate`).

The waiting is done on a *daemon* thread per call, never a ``ThreadPoolExecutor``: Python
joins an executor's threads at exit, so one stuck call kept Hearthside alive after Ctrl-C.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

DEFAULT_SECONDS = 10.0
DEFAULT_ENTRIES = 200_000
DEFAULT_BYTES = 64 * 1024 * 1024

_T = TypeVar("_T")


class BudgetExceeded(Exception):
    """The work went over its budget or was cancelled; the message says which."""


@dataclass
class Budget:
    """What one tool call may spend. ``tick`` and ``spend`` raise :class:`BudgetExceeded`."""

    seconds: float = DEFAULT_SECONDS
    entries: int = DEFAULT_ENTRIES
    bytes: int = DEFAULT_BYTES
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    used_entries: int = 0
    used_bytes: int = 0

    def check(self) -> None:
        if self.cancelled.is_set():
            raise BudgetExceeded("stopped: the call was cancelled")
        if time.monotonic() - self.started > self.seconds:
            raise BudgetExceeded(self.overtime_sentence())

    def overtime_sentence(self) -> str:
        return f"stopped after {self.seconds:g} seconds, its time budget; narrow the pattern or the folder"

    def tick(self, n: int = 1) -> None:
        self.used_entries += n
        if self.used_entries > self.entries:
            raise BudgetExceeded(f"stopped after looking at {self.entries} files and folders, its "
                                 "budget; narrow the pattern or the folder")
        self.check()

    def spend(self, n: int) -> None:
        self.used_bytes += n
        if self.used_bytes > self.bytes:
            raise BudgetExceeded(f"stopped after reading {self.bytes // (1024 * 1024)} MiB, its budget; "
                                 "narrow the pattern or the folder")
        self.check()


def budget_from(settings: Any) -> Budget:
    """A budget from ``files.time_budget_seconds`` / ``files.entry_budget`` (defaults if unset
    or not a positive number)."""
    def num(key: str, default: float) -> float:
        value = settings.get(key) if settings is not None else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            return default
        return float(value)

    return Budget(seconds=num("files.time_budget_seconds", DEFAULT_SECONDS),
                  entries=int(num("files.entry_budget", DEFAULT_ENTRIES)))


async def off_loop(work: Callable[[Budget], _T], budget: Budget) -> _T:
    """Run ``work(budget)`` on a daemon thread of its own; cancelling the caller cancels the
    budget, so the work stops at its next check (a worker process is killed at once) rather
    than running on unseen. Exit never waits for the thread."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[_T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, work(budget))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
            pass

    threading.Thread(target=run, name="hearthside-files-call", daemon=True).start()
    try:
        return await fut
    except asyncio.CancelledError:
        budget.cancelled.set()
        raise
