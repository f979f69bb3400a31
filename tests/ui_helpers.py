"""Shared by the window tests: a real bridge over the app's real runtime."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def make_bridge(app_context: Any) -> Iterator[Any]:
    """Yield a Bridge on the app's runtime; close both afterwards (use inside a fixture)."""
    from hearthside.ui.bridge import Bridge

    b = Bridge(lambda: app_context.runtime)
    yield b
    b.close()
    if app_context.built("runtime"):
        app_context.runtime.stop()
