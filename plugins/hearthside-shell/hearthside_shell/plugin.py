"""The pack's entry point: registers the Bash tool.

The pack is off until the user turns it on (``hearthside plugins enable shell``): the host
keeps it in its list of opt-in packs, so a fresh install never offers a shell.
"""

from __future__ import annotations

from hearthside.plugin import PackSettings, RegisterTool, hookimpl

from .tool import BashTool


@hookimpl
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    """Register Bash (mutating, asked about on every call)."""
    register(BashTool())
