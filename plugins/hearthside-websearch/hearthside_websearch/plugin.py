"""The pack's entry point: the Brave and Tavily search providers, the ``web_read`` tool,
``hearthside websearch ...`` and the key form (the last two are plugin API 1.1 hooks)."""

from __future__ import annotations

from hearthside.plugin import (
    PackSettings,
    RegisterCommand,
    RegisterSearchProvider,
    RegisterSettingsForm,
    RegisterTool,
    hookimpl,
)

from .commands import websearch
from .form import forms
from .providers import BraveProvider, TavilyProvider
from .webread import WebRead


@hookimpl
def hearthside_search_providers(register: RegisterSearchProvider, settings: PackSettings) -> None:
    """Both providers; ``search.provider`` picks one, each reads its key at search time."""
    register(BraveProvider(settings))
    register(TavilyProvider(settings))


@hookimpl
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    register(WebRead())


@hookimpl(optionalhook=True)
def hearthside_commands(register: RegisterCommand, settings: PackSettings) -> None:
    register(websearch)


@hookimpl(optionalhook=True)
def hearthside_settings_forms(register: RegisterSettingsForm, settings: PackSettings) -> None:
    for form in forms():
        register(form)
