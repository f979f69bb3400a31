"""The asyncio runtime on a worker thread: MCP sessions, model calls and heartbeats run here.

Qt owns the main thread and ``PySide6.QtAsyncio`` breaks anyio (which the ``mcp`` SDK needs), so
Hearthside runs a plain asyncio loop on its own thread and hands results to the UI as Qt
signals. The CLI uses the same runtime, so both paths exercise the same code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Runtime:
    """One asyncio event loop running on a daemon thread for the life of the app."""

    def __init__(self, name: str = "hearthside-runtime") -> None:
        self._loop = asyncio.new_event_loop()
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
