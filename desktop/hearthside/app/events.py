"""What flows up from the services to a front end: one typed protocol, :class:`AppEvents`.

The :class:`~hearthside.app.lifecycle.Lifecycle` subscribes to the services (drift, heartbeat,
MCP, the notice batcher) and hands each thing a user may need to hear about to the front end's
``AppEvents``. The tray's :class:`~hearthside.ui.app.Shell` turns every call into a queued Qt
signal on its bridge; ``--headless`` logs and uses the desktop notification service. A new
front end (or a test) implements these five methods and nothing else.

Every method is called on a service thread (the watcher, the runtime loop, the batcher's
timer) and must not block: hand the value on and return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..core.mcpconfig import ServerStatus
    from .alerts import Notice
    from .drift_types import DriftEvent
    from .heartbeat import HeartbeatOutcome


@runtime_checkable
class AppEvents(Protocol):
    """The front end's side of the seam: what the lifecycle tells it (any thread, never blocks)."""

    def on_drift(self, event: DriftEvent) -> None:
        """A watched file settled into a new state (edited, new, removed, approved)."""

    def on_outcome(self, outcome: HeartbeatOutcome) -> None:
        """A check-in finished: silent, notified, skipped or failed."""

    def on_mcp_status(self, status: ServerStatus) -> None:
        """An MCP server's state changed (connecting, connected, failed, disabled)."""

    def show(self, notice: Notice) -> None:
        """Tell the user this (already batched) notice; the history has it already."""

    def on_error(self, message: str) -> None:
        """A service failed in the background; one readable sentence. The app keeps running."""
