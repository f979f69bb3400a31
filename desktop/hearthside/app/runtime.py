"""The asyncio runtime on a worker thread: MCP sessions, model calls and heartbeats run here.

Qt owns the main thread and ``PySide6.QtAsyncio`` breaks anyio (which the ``mcp`` SDK needs), so
Hearthside runs a plain asyncio loop on its own thread and hands results to the UI as Qt
signals. The CLI uses the same runtime, so both paths exercise the same code.

Blocking work the loop hands off (``asyncio.to_thread``: tools, keyring look-ups, DNS) runs on
daemon threads (:class:`DaemonExecutor`), not the default ``ThreadPoolExecutor``, whose threads
Python joins at exit: one stuck tool call kept ``hearthside chat`` alive after Ctrl-C.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each job on a daemon thread of its own, so exit never waits for one.

    A job nobody waits for any more (its caller was cancelled, the app is quitting) simply
    ends with the process. At most ``max_workers`` jobs run at once; the rest queue. (A
    ``ThreadPoolExecutor`` only because asyncio's ``set_default_executor`` insists: none of
    its pooled, joined-at-exit threads is ever started.)
    """

    def __init__(self, max_workers: int = 16, name: str = "hearthside-offloop") -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=name)
        self._slots = threading.BoundedSemaphore(max_workers)
        self._name = name
        self._closed = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if self._closed:
            raise RuntimeError("cannot schedule new work after shutdown")
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            with self._slots:
                if not fut.set_running_or_notify_cancel():
                    return
                try:
                    fut.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                    fut.set_exception(exc)

        threading.Thread(target=run, name=self._name, daemon=True).start()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new work; running jobs are never waited for (that is the point)."""
        self._closed = True


class Runtime:
    """One asyncio event loop running on a daemon thread for the life of the app."""

    def __init__(self, name: str = "hearthside-runtime") -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_default_executor(DaemonExecutor())
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the runtime; the returned future is safe to wait on anywhere."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the runtime and block the calling (non-runtime) thread for it."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("Runtime.run() called from the runtime thread; await instead")
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
