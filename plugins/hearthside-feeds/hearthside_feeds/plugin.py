"""The pack's entry point: the two read-only feed tools, ``hearthside feeds ...`` and the
settings forms (the last two are plugin API 1.1 hooks, optional for an older Hearthside)."""

from __future__ import annotations

from hearthside.plugin import (
    PackSettings,
    RegisterCommand,
    RegisterSettingsForm,
    RegisterTool,
    hookimpl,
)

from .commands import feeds
from .form import forms
from .tools import make_tools


@hookimpl
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    for tool in make_tools():
        register(tool)


@hookimpl(optionalhook=True)
def hearthside_commands(register: RegisterCommand, settings: PackSettings) -> None:
    register(feeds)


@hookimpl(optionalhook=True)
def hearthside_settings_forms(register: RegisterSettingsForm, settings: PackSettings) -> None:
    for form in forms():
        register(form)
