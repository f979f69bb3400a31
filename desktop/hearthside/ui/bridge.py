"""The one Qt bridge: service events and background results reach the UI as queued signals.

Services call back on whatever thread they run on (the watchdog thread, the asyncio runtime
thread, a worker thread). Qt widgets may only be touched on the Qt thread, so every callback
from a service goes through this object: a signal emitted from another thread is delivered
to the receivers on the Qt thread (queued connection). Nothing in ``ui/`` does file, network
or keyring I/O on the Qt thread: it hands the work to :meth:`Bridge.call` (blocking work on a
worker thread) or :meth:`Bridge.call_async` (a coroutine on the app's runtime loop) and gets
the result back as a signal.

Both are generic: ``call(fn, done)`` with ``fn: () -> T`` takes ``done: (T) -> None``, so mypy
checks that a window's callback expects what the work returns. Every result, failure and
:meth:`Bridge.post` travels one queued signal, in order, as a typed :class:`_Delivery`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Qt, Signal, Slot

from ..app.alerts import Notice
from ..app.drift_types import DriftEvent
from ..app.heartbeat import HeartbeatOutcome
from ..core.mcpconfig import ServerStatus

if TYPE_CHECKING:
    from ..app.runtime import Runtime

log = logging.getLogger("hearthside.ui")

T = TypeVar("T")
Failed = Callable[[BaseException], None]


@dataclass(frozen=True)
class _Delivery:
    """One callback bound to its value, to run on the Qt thread (the queued signal's payload)."""

    run: Callable[[], None]


class Bridge(QObject):
    """Re-emits service events as Qt signals and runs background work for the windows.

    Signals (each carries the service's own value object):

    - ``drift_event(DriftEvent)``: a settled change of a watched file.
    - ``heartbeat_outcome(HeartbeatOutcome)``: a check-in finished (silent, notified, skipped or failed).
    - ``notification(Notice)``: something the user should be told (the notifier decides how).
    - ``mcp_status(ServerStatus)``: an MCP server's status changed.
    - ``packs_changed()``: plugin packs were installed, removed, enabled or disabled.
    - ``service_error(str)``: a service failed on a background thread; one readable sentence.
    """

    drift_event = Signal(DriftEvent)
    heartbeat_outcome = Signal(HeartbeatOutcome)
    notification = Signal(Notice)
    mcp_status = Signal(ServerStatus)
    packs_changed = Signal()
    service_error = Signal(str)

    # internal: a finished background call (or a post), delivered on the Qt thread
    _finished = Signal(_Delivery)

    def __init__(self, runtime_provider: Callable[[], Runtime] | None = None,
                 parent: QObject | None = None, max_workers: int = 4) -> None:
        super().__init__(parent)
        self._runtime_provider = runtime_provider
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="hearthside-ui-work")
        # Always queued, even when emitted on the Qt thread: a call that finished before its
        # done-callback was attached reports from the Qt thread, and a direct delivery would
        # then overtake what the work posted while it ran (a chat turn "ended" before its
        # streamed pieces were shown).
        self._finished.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._closed = threading.Event()

    # --- background work -------------------------------------------------------------------
    def call(self, fn: Callable[[], T], done: Callable[[T], None] | None = None,
             failed: Failed | None = None) -> concurrent.futures.Future[T]:
        """Run blocking ``fn`` on a worker thread; ``done(result)``/``failed(exc)`` run on the
        Qt thread. After :meth:`close` (the app is quitting) nothing runs: a signal still in the
        Qt queue (a check-in that ended during the quit) must not raise on a stopped pool."""
        if self._closed.is_set():
            cancelled: concurrent.futures.Future[T] = concurrent.futures.Future()
            cancelled.cancel()
            return cancelled
        future = self._pool.submit(fn)
        future.add_done_callback(lambda f: self._report(f, done, failed))
        return future

    def call_async(self, make_coro: Callable[[], Coroutine[Any, Any, T]], done: Callable[[T], None] | None = None,
                   failed: Failed | None = None) -> concurrent.futures.Future[T]:
        """Run a coroutine on the app's asyncio runtime; callbacks run on the Qt thread."""
        if self._runtime_provider is None:
            raise RuntimeError("this bridge has no runtime")
        future = self._runtime_provider().submit(make_coro())
        future.add_done_callback(lambda f: self._report(f, done, failed))
        return future

    def _report(self, future: concurrent.futures.Future[T], done: Callable[[T], None] | None,
                failed: Failed | None) -> None:
        if self._closed.is_set():
            return
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            if failed is not None:
                self._queue(failed, exc)
            else:
                log.warning("background work failed: %s", exc)
                self.service_error.emit(str(exc) or type(exc).__name__)
        elif done is not None:
            self._queue(done, future.result())

    def _queue(self, callback: Callable[[T], None], value: T) -> None:
        self._finished.emit(_Delivery(lambda: callback(value)))

    def post(self, callback: Callable[[T], None], value: T) -> bool:
        """Run ``callback(value)`` on the Qt thread; may be called from any thread. False when
        the bridge is closed (nothing will run).

        It travels the same queued signal as every finished :meth:`call` / :meth:`call_async`,
        so it arrives in order with them: a piece of a streamed answer posted before the answer
        ended is shown before the end is reported."""
        if self._closed.is_set():
            return False
        self._queue(callback, value)
        return True

    @Slot(_Delivery)
    def _deliver(self, delivery: _Delivery) -> None:
        try:
            delivery.run()
        except Exception as exc:  # a UI callback must not kill the event loop
            log.exception("UI callback failed")
            self.service_error.emit(str(exc) or type(exc).__name__)

    def close(self) -> None:
        """Stop delivering results; running work is left to finish (or be cancelled by its owner)."""
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
