"""The hook specifications: the contract between Hearthside and a plugin pack (contract section 10).

A pack is a distribution with an entry point in the group ``hearthside.plugins`` pointing at a
module (or object) whose functions are marked with ``@hookimpl``. Every hook takes a
``register`` callback: a pack never returns values, so new hook arguments never break old packs.
A hook implementation may ask for any subset of the arguments listed here.

Each hook of each pack is called on its own. If a hook raises (even ``SystemExit``), registers
something invalid, or registers a name another pack already has, that pack is disabled with the
reason and everything it registered is dropped; Hearthside and the other packs carry on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ..plugin import PackSettings, RegisterCommand, RegisterSettingsForm

PROJECT = "hearthside"
ENTRY_POINT_GROUP = "hearthside.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def hearthside_tools(register: Any, settings: Any) -> None:
    """Called once when the pack is loaded, to contribute tools a persona can call.

    Call ``register(tool)`` for each tool. A tool implements ``hearthside.core.tools.Tool``
    (``spec``, ``read_only``, async ``execute(args, env)``); ``FunctionTool`` builds one from a
    plain function. The name must match ``TOOL_NAME_RX`` and be unique across all packs. Tools
    run inside sessions: use ``env.workspace`` and ``env.services`` for per-session state, never
    globals. ``settings`` is a read-only view of Hearthside's settings (``settings.get(key)``).
    """


@hookspec
def hearthside_skills(register: Any, settings: Any) -> None:
    """Called once when the pack is loaded, to contribute skills (agentskills.io folders).

    Call ``register(path)`` with a folder that either is one skill (it holds ``SKILL.md``) or
    holds skill folders (``<name>/SKILL.md``). Skills are read when a session starts; a
    malformed skill is skipped with a diagnostic, and a skill that trips the injection scan is
    held back until the user allows it.
    """


@hookspec
def hearthside_search_providers(register: Any, settings: Any) -> None:
    """Called once when the pack is loaded, to contribute web-search providers.

    Call ``register(provider)``; a provider implements ``hearthside.core.search.SearchProvider``
    (a ``name`` and an async ``search(query) -> list[SearchResult]``). The user picks one with
    the ``search.provider`` setting; without it the first registered provider is used. A
    provider must bound its own network calls (timeout and concurrency) and should read its
    configuration at search time so settings changes take effect without a restart.
    """


@hookspec
def hearthside_mcp_servers(register: Any, settings: Any) -> None:
    """Called once when the pack is loaded, to contribute MCP servers.

    Call ``register(McpServerContribution(name, config, secrets))`` from
    ``hearthside.core.contributions``. ``config`` is ``{"command", "args", "env"}`` for stdio or
    ``{"url", "headers"}`` for streamable HTTP; never put a secret in it, declare a
    ``SecretNeed`` instead so the user can enter it into the keyring.
    """


# --- added in plugin API 1.1 -----------------------------------------------------------------


@hookspec
def hearthside_commands(register: RegisterCommand, settings: PackSettings) -> None:
    """Called once when the pack is loaded (by the CLI only when a command it does not know is
    asked for, or when the commands are listed), to add commands to ``hearthside``.

    Call ``register(command)`` with a ``click.Command`` or ``click.Group``; it is added under
    its own name (``hearthside calendar add ...``). The name must be lowercase letters, digits
    and '-', and may not be a built-in command's or another pack's (the pack is then disabled
    and ``plugins list`` says why). Commands print with ``click.echo``; Hearthside's output
    filter (secrets masked, terminal escapes removed) applies to them. They may do I/O when
    run, but the hook itself only builds and registers them.
    """


@hookspec
def hearthside_settings_forms(register: RegisterSettingsForm, settings: PackSettings) -> None:
    """Called once when the pack is loaded, to contribute settings forms (``SettingsForm``) to
    the pack's page in the Plugins window.

    Call ``register(form)`` for each form. A malformed form (an unknown field kind, a key used
    twice, a callback that is not callable) disables the pack with the reason. The form's
    callbacks (``submit``, ``items``, ``remove``) run later on a worker thread, never on the Qt
    thread, and may do I/O; password fields reach ``submit`` and belong in ``pack_secrets``.
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
