"""The types of the plugin API's hook arguments: what a pack's hook receives.

They are defined here, in ``core``, so that the hook specifications
(:mod:`hearthside.pluginhost.specs`) and the plugin API (:mod:`hearthside.plugin`, which
re-exports every name below and is what packs import) share the very same objects without an
import cycle. Nothing here imports Qt or an adapter library.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from .contributions import McpServerContribution
from .search import SearchProvider
from .tools import Tool


class PackSettings(Protocol):
    """The ``settings`` argument of every hook: Hearthside's settings, read-only."""

    def get(self, key: str, default: Any = None) -> Any: ...


#: ``register`` in ``hearthside_tools``: one tool per call (see :class:`Tool`).
RegisterTool = Callable[[Tool], None]
#: ``register`` in ``hearthside_skills``: a folder that is one skill or holds skill folders.
RegisterSkills = Callable[[str | os.PathLike[str]], None]
#: ``register`` in ``hearthside_search_providers``: one provider per call.
RegisterSearchProvider = Callable[[SearchProvider], None]
#: ``register`` in ``hearthside_mcp_servers``: one server per call.
RegisterMcpServer = Callable[[McpServerContribution], None]
