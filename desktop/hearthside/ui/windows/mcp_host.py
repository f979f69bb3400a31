"""What the MCP window's dialogs (Browse…, Install bundle…) need of the window they belong to.

A protocol rather than the window class itself, so the dialogs' modules do not import
``ui/windows/mcp.py`` back (``tests/test_ui_io.py`` keeps ``ui/`` free of import circles).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...app.context import AppContext
    from ...core.mcpconfig import ServerConfig


class McpHost(Protocol):
    """The MCP servers window, as its dialogs see it."""

    app: AppContext
    #: Emitted with what finished (tests wait on it): a PySide ``Signal(str)`` instance.
    finished_action: Any

    def call_bg(self, work: Callable[[], Any], done: Callable[[Any], None] | None = None,
                failed: Callable[[BaseException], None] | None = None) -> Any:
        """Blocking ``work`` on a worker thread; ``done``/``failed`` on the Qt thread."""

    def added(self, cfg: ServerConfig) -> None:
        """A server was added: say so and connect it."""
