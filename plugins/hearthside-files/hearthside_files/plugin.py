"""The pack's entry point: registers the five file tools."""

from __future__ import annotations

from typing import Any

from hearthside import hookimpl

from .tools import make_tools


@hookimpl
def hearthside_tools(register: Any, settings: Any) -> None:
    """Register Read, Glob, Grep (read-only) and Edit, Write (mutating)."""
    for tool in make_tools(settings):
        register(tool)
