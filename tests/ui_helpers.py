"""Shared by the window tests: a real bridge over the app's real runtime, and a wait helper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def bridge(qtbot, app_context) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from hearthside.ui.bridge import Bridge

    b = Bridge(lambda: app_context.runtime)
    yield b
    b.close()
    if "runtime" in app_context.__dict__:
        app_context.runtime.stop()
