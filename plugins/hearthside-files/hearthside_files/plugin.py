"""The pack's entry point: registers the five file tools."""

from __future__ import annotations

from hearthside.plugin import PackSettings, RegisterTool, hookimpl

from .tools import make_tools


@hookimpl
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    """Register Read, Glob, Grep (read-only) and Edit, Write (mutating)."""
    for tool in make_tools(settings):
        register(tool)
