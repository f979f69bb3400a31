"""The plugin API: everything a plugin pack imports from Hearthside, and nothing else.

A pack imports only from here (``from hearthside.plugin import hookimpl, FunctionTool, ...``).
The modules behind these names (``hearthside.core.*``, ``hearthside.pluginhost.*``) are
internal and change without notice; the names below do not (see the promise).

Compatibility promise (``PLUGIN_API_VERSION`` is ``MAJOR.MINOR``):

- Within one MAJOR version, every name exported here keeps working: a hook keeps its name and
  its arguments (new arguments may be added; a hook implementation asks only for those it
  uses, so adding one never breaks a pack), a class keeps its fields and methods (new optional
  ones may be added), a ``register`` callable keeps accepting what it accepts today.
- MINOR grows when something is added (a hook, an argument, a helper): 1.1 added the hooks
  ``hearthside_commands`` and ``hearthside_settings_forms``, the form types and the pack
  helpers (folders, secrets, config); 1.2 added the shell names (``CommandResult``,
  ``CommandRunner``, ``CommandStreamer``, ``ErrNoShell``, ``AlwaysAsk``), the safe fetch
  (``safe_get``, ``safe_client``, ``check_web_url``, ``shown_url``, ``Fetched``,
  ``FetchError``, ``FetchRefused``, ``MAX_REDIRECTS``) and ``untrusted_line``. A pack that
  needs an added helper checks ``PLUGIN_API_VERSION`` before importing it (and raises
  ``ImportError`` with a sentence, so an older Hearthside disables it with that reason); a
  pack that implements an added hook marks it ``@hookimpl(optionalhook=True)`` so an older
  Hearthside loads it without that hook instead of refusing it.
- Anything removed or changed incompatibly bumps MAJOR, and is announced one MINOR release
  before, with a deprecation warning.

Hooks (each called once when the pack loads; each takes ``register`` and optionally
``settings``, a read-only view with ``settings.get("dotted.key", default)``):

- ``hearthside_tools(register: RegisterTool, settings)``: tools a persona can call;
- ``hearthside_skills(register: RegisterSkills, settings)``: folders of agentskills.io skills;
- ``hearthside_search_providers(register: RegisterSearchProvider, settings)``: web search;
- ``hearthside_mcp_servers(register: RegisterMcpServer, settings)``: MCP servers;
- ``hearthside_commands(register: RegisterCommand, settings)`` (1.1): ``click`` commands added
  to the ``hearthside`` command line under their own names;
- ``hearthside_settings_forms(register: RegisterSettingsForm, settings)`` (1.1): forms drawn on
  the pack's page of the Plugins window (:class:`SettingsForm`).

Helpers (1.1) for a pack's own service code: :func:`pack_data_dir` and :func:`pack_cache_dir`
(private folders outside every persona folder), :func:`pack_secrets` (the OS keyring only) and
:func:`pack_config` (one JSON document, written atomically under a lock).

The shell (1.2): a tool runs a command through ``env.environment.command_runner()``, a
:class:`CommandRunner` (maybe also a :class:`CommandStreamer`) that returns a
:class:`CommandResult`, or raises :class:`ErrNoShell` when the session has no shell; a tool
with ``always_ask = True`` (:class:`AlwaysAsk`) is asked about on every call.

Safe fetch (1.2), for a pack that reads the web: :func:`safe_get` (``https://`` to a public
address or this computer, ``http://`` only to a literal loopback address, every redirect and
every resolved address re-checked, a size cap and one deadline for all hops, no cookies, no
proxy or ``.netrc`` from the environment) returning :class:`Fetched`, or raising
:class:`FetchRefused` (an address it does not read) or :class:`FetchError` (one sentence);
:func:`check_web_url` (the same address rule, to check a URL the user gives before storing it),
:func:`shown_url` (a URL as shown in a sentence, without its query or password) and
:func:`safe_client` (the httpx2 client behind it, for a request ``safe_get`` does not make).
:func:`untrusted_line` (1.2) makes one field of untrusted text safe inside a fence: one line,
capped, escaped, by the rule Hearthside's own search-results fence uses.

``@hookimpl(optionalhook=True)`` marks an implementation of a hook this Hearthside may not
have (one added in a later MINOR version): an older Hearthside then skips it instead of
disabling the pack with "the pack may need a newer Hearthside". Hook wrappers are refused.
"""

from __future__ import annotations

import os

# the safe fetch (1.2): httpx2 is imported on the first fetch, so importing this module stays light
from .adapters.safe_fetch import (
    MAX_REDIRECTS,
    Fetched,
    FetchError,
    FetchRefused,
    check_web_url,
    safe_client,
    safe_get,
    shown_url,
)
from .core.boundedread import BoundedRead, read_bounded
from .core.contributions import McpServerContribution, SecretNeed

# the shell (1.2, issue 24): ``env.environment.command_runner()`` is the session's runner
from .core.environment import CommandResult, CommandRunner, CommandStreamer, ErrNoShell
from .core.forms import FormField, SettingsForm
from .core.packtypes import (
    PackSettings,
    RegisterMcpServer,
    RegisterSearchProvider,
    RegisterSkills,
    RegisterTool,
)
from .core.search import SearchProvider, SearchQuery, SearchResult, SearchUnavailable, untrusted_line
from .core.tools import AlwaysAsk, CallTarget, FunctionTool, Tool, ToolEnv, ToolResult, ToolSpec

# the write guard (issue 9): every mutating pack tool goes through check_write, below
from .core.writeguard import ProtectedRoot, WriteGuard, WriteRefused

# the pack helpers (1.1): the pack's own folders, secrets and configuration
from .pluginhost.packfiles import (
    PackConfig,
    PackConfigError,
    PackSecretError,
    PackSecrets,
    pack_cache_dir,
    pack_config,
    pack_data_dir,
    pack_secrets,
)
from .pluginhost.specs import (
    ENTRY_POINT_GROUP,
    HOOK_NAMES,
    RegisterCommand,
    RegisterSettingsForm,
    hookimpl,
)

#: The plugin API's version, ``MAJOR.MINOR`` (see the compatibility promise above).
PLUGIN_API_VERSION = "1.2"


def check_write(env: ToolEnv, path: str | os.PathLike[str]) -> None:
    """Call before a tool writes, renames, deletes or creates anything at ``path``.

    Raises :class:`WriteRefused` with a sentence for the model when ``path`` (after links and
    ``..`` are resolved) is the user's soul, inside a persona folder or inside Hearthside's
    own config, data or state folders. Every mutating tool must go through it; the files
    pack does for each Write and Edit (through its workspace). Reading is never refused.
    """
    env.write_guard.check(path)


__all__ = [
    "ENTRY_POINT_GROUP",
    "HOOK_NAMES",
    "MAX_REDIRECTS",
    "PLUGIN_API_VERSION",
    "AlwaysAsk",
    "BoundedRead",
    "CallTarget",
    "CommandResult",
    "CommandRunner",
    "CommandStreamer",
    "ErrNoShell",
    "FetchError",
    "FetchRefused",
    "Fetched",
    "FormField",
    "FunctionTool",
    "McpServerContribution",
    "PackConfig",
    "PackConfigError",
    "PackSecretError",
    "PackSecrets",
    "PackSettings",
    "ProtectedRoot",
    "RegisterCommand",
    "RegisterMcpServer",
    "RegisterSearchProvider",
    "RegisterSettingsForm",
    "RegisterSkills",
    "RegisterTool",
    "SearchProvider",
    "SearchQuery",
    "SearchResult",
    "SearchUnavailable",
    "SecretNeed",
    "SettingsForm",
    "Tool",
    "ToolEnv",
    "ToolResult",
    "ToolSpec",
    "WriteGuard",
    "WriteRefused",
    "check_web_url",
    "check_write",
    "hookimpl",
    "pack_cache_dir",
    "pack_config",
    "pack_data_dir",
    "pack_secrets",
    "read_bounded",
    "safe_client",
    "safe_get",
    "shown_url",
    "untrusted_line",
]
