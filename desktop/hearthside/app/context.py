"""The one composition root shared by the CLI, the tray and headless mode.

Services are built on first use so a CLI command only pays for what it touches (the
``--version`` path imports none of this). Each service owns one concern.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING

from .paths import AppPaths
from .personas import PersonaService
from .settings import SettingsStore

if TYPE_CHECKING:  # the services are imported on first use, never at start
    from ..adapters.secrets import KeyringSecretStore
    from .agents import AgentService
    from .conversations import ConversationService
    from .drift import DriftService
    from .forks import ForkService
    from .heartbeat import HeartbeatService
    from .mcp import McpService
    from .memory import MemoryService
    from .model import ModelService
    from .notify import NotificationHistory
    from .plugins import PluginService
    from .runtime import Runtime
    from .sessions import SessionService


class AppContext:
    """Holds the app's paths, settings and services for one process."""

    def __init__(self, paths: AppPaths | None = None, safe_mode: bool | None = None) -> None:
        self.paths = paths or AppPaths.from_environment()
        if safe_mode is None:
            safe_mode = os.environ.get("HEARTHSIDE_SAFE_MODE", "") not in ("", "0", "false")
        self.safe_mode = safe_mode

    @cached_property
    def settings(self) -> SettingsStore:
        return SettingsStore(self.paths.settings_file)

    @cached_property
    def personas(self) -> PersonaService:
        return PersonaService(self.paths, self.settings)

    @cached_property
    def drift(self) -> DriftService:
        """Drift of the soul and persona files against approved copies (live watcher on start())."""
        from .drift import DriftService

        return DriftService(self.paths, self.settings, self.personas, self.soul_path)

    @cached_property
    def agents(self) -> AgentService:
        """Specialists: agent files of the persona tier and the user tier, as frozen listings."""
        from .agents import AgentService

        return AgentService(self.paths, self.personas, lambda: self.drift, lambda: self.secrets)

    @cached_property
    def secrets(self) -> KeyringSecretStore:
        """The OS keyring (recommended backends only) as the app's SecretStore."""
        from ..adapters.secrets import KeyringSecretStore

        return KeyringSecretStore()

    @cached_property
    def mcp(self) -> McpService:
        """Configured and pack-contributed MCP servers, their secrets and sessions."""
        from .mcp import McpService

        def contributions() -> list[object]:
            return list(self.plugins.mcp_servers())

        from .sandbox import build_policies

        return McpService(self.paths, lambda: self.secrets, lambda: self.runtime, contributions,
                          sandbox=build_policies(self))

    @cached_property
    def model(self) -> ModelService:
        """Which model personas talk to, its key and the rule for where the key may go."""
        from .model import ModelService

        return ModelService(self.settings, lambda: self.secrets)

    @cached_property
    def plugins(self) -> PluginService:
        """Plugin packs: loaded on first ``load()`` (honours safe mode and the block list)."""
        from .plugins import PluginService

        return PluginService(self.paths, self.settings, self.safe_mode)

    @cached_property
    def memory(self) -> MemoryService:
        """Each persona's learned-memory store (data dir, never the persona folder)."""
        from .memory import MemoryService

        return MemoryService(self.paths)

    @cached_property
    def conversations(self) -> ConversationService:
        """Kept conversations of every persona (data dir, never a persona folder)."""
        from .conversations import ConversationService
        from .writeguard import build_write_guard

        return ConversationService(self.paths, self.settings, lambda: [p.name for p in self.personas.list()],
                                   write_guard=lambda: build_write_guard(self.paths, self.personas, self.soul_path()))

    @cached_property
    def sessions(self) -> SessionService:
        """Builds chat and heartbeat sessions (turn 0, catalog, model client)."""
        from .sessions import SessionService

        return SessionService(self)

    @cached_property
    def notifications(self) -> NotificationHistory:
        """The bounded notification history in the state dir."""
        from .notify import NotificationHistory

        return NotificationHistory(self.paths.history_file)

    @cached_property
    def forks(self) -> ForkService:
        """Writing specialists' forks of the workspace, waiting for review (state dir)."""
        from .forks import ForkService
        from .shell import fork_runner
        from .writeguard import build_write_guard

        return ForkService(self.paths.state_dir, self.settings,
                           lambda: build_write_guard(self.paths, self.personas, self.soul_path()),
                           runner_for=lambda tree: fork_runner(self, tree))

    @cached_property
    def heartbeat(self) -> HeartbeatService:
        """Per-persona heartbeats on the runtime loop (log + desktop notifier by default)."""
        from .heartbeat import HeartbeatService

        return HeartbeatService(self, history=self.notifications)

    @cached_property
    def runtime(self) -> Runtime:
        """The asyncio worker thread (started on first use)."""
        from .runtime import Runtime

        return Runtime()

    def built(self, name: str) -> bool:
        """Has the service ``name`` been built yet? Stopping asks this, so that quitting never
        builds (and starts) a service nobody used. An unknown name is a programming error."""
        if isinstance(getattr(type(self), name, None), cached_property):
            return name in self.__dict__
        raise ValueError(f"{name!r} is not a service of the app context")

    def soul_path(self, override: str | None = None) -> str:
        """The soul file: ``--soul-file``, else the ``soul_file`` setting, else the default."""
        if override:
            return os.path.expanduser(override)
        configured = self.settings.get("soul_file")
        if isinstance(configured, str) and configured:
            return os.path.expanduser(configured)
        return str(self.paths.soul_file)
