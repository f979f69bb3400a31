"""The hook specifications: the contract between Hearthside and a plugin pack (contract section 10).

A pack is a distribution with an entry point in the group ``hearthside.plugins`` pointing at a
module (or object) whose functions are marked with ``@hookimpl``. Every hook takes a
``register`` callback: a pack never returns values, so new hook arguments never break old packs.
A hook implementation may ask for any subset of the arguments listed here. The arguments are
typed with the plugin API's own types (:mod:`hearthside.plugin`, defined in
:mod:`hearthside.core.packtypes`), so a pack that is type-checked sees what the host passes.

When hooks are called (each hook's docstring below repeats what applies to it):

- once per Hearthside process (the tray, ``--headless``, each ``hearthside`` command that needs
  packs), when packs are first needed, before any chat or check-in starts;
- for each pack in turn, in the order of :data:`HOOKS`, each hook at most once; never for a
  pack that is blocked or, in safe mode, for a pack the user installed;
- with standard output sent to standard error, so a ``print`` cannot spoil a command's JSON.

What a hook may do: call ``register`` any number of times while it runs (never after it
returned: a late call raises), and read settings. What it must not do: block for long (the
tray's start or the command waits for it), start work that outlives it, write anything, or rely
on being called again.

Each hook of each pack is called on its own. If a hook raises (even ``SystemExit``), registers
something invalid, or registers a name another pack already has, that pack is disabled with the
reason and everything it registered is dropped; Hearthside and the other packs carry on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import click
import pluggy

from ..core.forms import SettingsForm
from ..core.packtypes import (
    PackSettings,
    RegisterMcpServer,
    RegisterSearchProvider,
    RegisterSkills,
    RegisterTool,
)

#: ``register`` in ``hearthside_commands`` (1.1): one ``click.Command`` (or ``click.Group``) per
#: call. Defined here rather than in ``core`` (which never imports click); ``hearthside.plugin``
#: re-exports it.
RegisterCommand = Callable[[click.Command], None]
#: ``register`` in ``hearthside_settings_forms`` (1.1): one :class:`SettingsForm` per call.
RegisterSettingsForm = Callable[[SettingsForm], None]

PROJECT = "hearthside"
ENTRY_POINT_GROUP = "hearthside.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def hearthside_tools(register: RegisterTool, settings: PackSettings) -> None:
    """Contribute tools a persona can call.

    Called once per process when packs are loaded, first of the four hooks, before any session.

    :param register: call ``register(tool)`` once per tool, only while this hook runs. A tool
        implements :class:`hearthside.plugin.Tool` (``spec``, ``read_only``, an
        ``async def execute(args, env)``); :class:`hearthside.plugin.FunctionTool` builds one
        from a plain function. The name must match ``TOOL_NAME_RX``, must not be one of
        Hearthside's own, and must be unique across all packs.
    :param settings: Hearthside's settings, read-only (``settings.get("dotted.key", default)``).

    The tools run later, inside sessions: ``execute`` keeps per-session state in
    ``env.workspace`` and ``env.services``, never in globals, and calls
    :func:`hearthside.plugin.check_write` before it changes anything on disk. The return value
    is ignored; raising disables the pack with the reason.
    """


@hookspec
def hearthside_skills(register: RegisterSkills, settings: PackSettings) -> None:
    """Contribute skills (agentskills.io folders).

    Called once per process when packs are loaded, after :func:`hearthside_tools`.

    :param register: call ``register(path)`` with a folder that either is one skill (it holds
        ``SKILL.md``) or holds skill folders (``<name>/SKILL.md``); the folder must exist.
    :param settings: Hearthside's settings, read-only.

    The folders are only recorded now; the skills are read when a session starts. A malformed
    skill is skipped with a diagnostic, and one that trips the injection scan is held back until
    the user allows it. The return value is ignored; raising disables the pack with the reason.
    """


@hookspec
def hearthside_search_providers(register: RegisterSearchProvider, settings: PackSettings) -> None:
    """Contribute web-search providers.

    Called once per process when packs are loaded, after :func:`hearthside_skills`.

    :param register: call ``register(provider)`` once per provider; a provider implements
        :class:`hearthside.plugin.SearchProvider` (a lowercase ``name`` and an async
        ``search(query) -> list[SearchResult]``), and its name is unique across all packs.
    :param settings: Hearthside's settings, read-only.

    The user picks a provider with the ``search.provider`` setting; without it the first
    registered provider is used. A provider bounds its own network calls (timeout and
    concurrency) and reads its configuration at search time, so a settings change takes effect
    without a restart. The return value is ignored; raising disables the pack with the reason.
    """


@hookspec
def hearthside_mcp_servers(register: RegisterMcpServer, settings: PackSettings) -> None:
    """Contribute MCP servers.

    Called once per process when packs are loaded, last of the four hooks; the servers are
    connected later, with the user's own, by the app (never by the hook).

    :param register: call ``register(McpServerContribution(name, config, secrets))``
        (:class:`hearthside.plugin.McpServerContribution`). ``config`` is
        ``{"command", "args", "env"}`` for stdio or ``{"url", "headers"}`` for streamable HTTP.
        Never put a secret in it: declare a :class:`hearthside.plugin.SecretNeed` so the user
        enters it into the keyring. A user's server of the same name wins over the pack's.
    :param settings: Hearthside's settings, read-only.

    The return value is ignored; raising disables the pack with the reason.
    """


# --- added in plugin API 1.1 -----------------------------------------------------------------


@hookspec
def hearthside_commands(register: RegisterCommand, settings: PackSettings) -> None:
    """Add commands to ``hearthside`` (plugin API 1.1).

    Called once per process when packs are loaded; the CLI loads packs only when a command it
    does not know is asked for, or when the commands are listed (``--help``).

    :param register: call ``register(command)`` with a ``click.Command`` or ``click.Group``; it
        is added under its own name (``hearthside calendar add ...``). The name must be
        lowercase letters, digits and '-', and may not be a built-in command's or another
        pack's (the pack is then disabled and ``plugins list`` says why).
    :param settings: Hearthside's settings, read-only.

    Commands print with ``click.echo``; Hearthside's output filter (secrets masked, terminal
    escapes removed) applies to them. They may do I/O when run, but the hook itself only builds
    and registers them. The return value is ignored; raising disables the pack with the reason.
    """


@hookspec
def hearthside_settings_forms(register: RegisterSettingsForm, settings: PackSettings) -> None:
    """Contribute settings forms to the pack's page in the Plugins window (plugin API 1.1).

    Called once per process when packs are loaded.

    :param register: call ``register(form)`` for each :class:`hearthside.plugin.SettingsForm`.
        A malformed form (an unknown field kind, a key used twice, a callback that is not
        callable) disables the pack with the reason.
    :param settings: Hearthside's settings, read-only.

    The form's callbacks (``submit``, ``items``, ``remove``) run later on a worker thread, never
    on the Qt thread, and may do I/O; password fields reach ``submit`` and belong in
    ``pack_secrets``. The return value is ignored; raising disables the pack with the reason.
    """


@dataclass(frozen=True)
class HookKind:
    """One hook of the table below: its name, the kind of thing it registers (the key in
    ``plugins list``'s ``contributes``) and that thing's name in messages."""

    hook: str
    kind: str
    thing: str


#: The one table of hooks a pack may implement, in the order the host calls them. Adding a
#: hook means a hookspec above, a row here and a ``_<kind>`` validator in ``host._Register``.
HOOKS: tuple[HookKind, ...] = (
    HookKind("hearthside_tools", "tools", "tool"),
    HookKind("hearthside_skills", "skills", "skills folder"),
    HookKind("hearthside_search_providers", "providers", "search provider"),
    HookKind("hearthside_mcp_servers", "servers", "MCP server"),
    HookKind("hearthside_commands", "commands", "command"),
    HookKind("hearthside_settings_forms", "forms", "settings form"),
)
HOOK_NAMES: tuple[str, ...] = tuple(h.hook for h in HOOKS)
KIND_OF_HOOK: dict[str, HookKind] = {h.hook: h for h in HOOKS}
