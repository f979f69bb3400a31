"""The pack's entry point: the calendar tools, the ``calendar`` command and the settings form."""

from __future__ import annotations

from hearthside.plugin import (
    PackSettings,
    RegisterCommand,
    RegisterSettingsForm,
    RegisterTool,
    hookimpl,
)

from .tools import make_tools


@hookimpl
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    """Register calendar_agenda, calendar_next and calendar_search (all read-only)."""
    for tool in make_tools(settings):
        register(tool)


@hookimpl(optionalhook=True)
def hearthside_commands(register: RegisterCommand, settings: PackSettings) -> None:
    """``hearthside calendar add|list|remove``."""
    from .cli import calendar_group

    register(calendar_group)


@hookimpl(optionalhook=True)
def hearthside_settings_forms(register: RegisterSettingsForm, settings: PackSettings) -> None:
    """The "Calendars" form in the Plugins window."""
    from .form import calendars_form

    register(calendars_form())
