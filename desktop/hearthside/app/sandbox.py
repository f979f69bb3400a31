"""The sandbox policies of the processes Hearthside starts: what each may change.

Protected (read-only inside every sandbox) is exactly what the write guard protects — the soul
file, every persona folder, Hearthside's config, data and state folders — built by the same
function (:func:`hearthside.app.writeguard.build_write_guard`) so the two can never disagree.
Writable is what the process was given: a stdio MCP server's own roots (the folders among its
arguments and its working folder, as :func:`hearthside.core.mcppaths.server_roots` reads them),
the shell's working folder, and caches its launcher fills (``~/.npm`` for ``npx``).

Per server, ``settings.toml`` decides the rest::

    [mcp.servers.files]
    sandbox = false          # off for this server (it runs with your rights; the guard still applies)
    network = false          # cut its network (default: on, off when the session bus is abstract)
    writable = ["~/notes"]   # more folders it may change
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..adapters import sandbox as _sandbox
from ..core.mcpconfig import ServerConfig
from ..core.mcppaths import server_roots
from ..core.sandbox import SandboxPolicy, ServerSandboxSettings, launcher_caches, network_for, server_settings
from .paths import AppPaths, ensure_dir

if TYPE_CHECKING:
    from .context import AppContext

log = logging.getLogger(__name__)

#: Where the per-server table lives in ``settings.toml``.
SETTINGS_KEY = "mcp.servers"


class SandboxPolicies:
    """Builds policies from the app's places and settings, fresh for each launch (a persona
    folder added a minute ago is protected in the next server start)."""

    def __init__(self, paths: AppPaths, protected: Callable[[], list[str]],
                 settings: Callable[[str], object] | None = None) -> None:
        self.paths = paths
        self._protected = protected
        self._settings = settings
        self._told: set[str] = set()

    @classmethod
    def for_paths(cls, paths: AppPaths) -> SandboxPolicies:
        """Policies protecting Hearthside's own folders only (which hold the default soul and
        personas folder): for a bare MCP service built without the app context."""
        return cls(paths, lambda: [str(paths.config_dir), str(paths.data_dir), str(paths.state_dir)])

    def protected(self) -> tuple[str, ...]:
        """Every protected place, as given and with links resolved. Hearthside's own folders are
        created first (they are its own to create), so a sandboxed process finds them there and
        read-only rather than absent and free to be made by it."""
        for d in (self.paths.config_dir, self.paths.data_dir, self.paths.state_dir):
            try:
                ensure_dir(d)
            except OSError as exc:
                log.warning("could not create %s before starting a sandboxed process: %s", d, exc)
        out: list[str] = []
        for p in self._protected():
            out += [os.path.abspath(p), os.path.realpath(p)]
        return tuple(dict.fromkeys(out))

    def server_settings(self, name: str) -> ServerSandboxSettings:
        raw = self._settings(f"{SETTINGS_KEY}.{name}") if self._settings is not None else None
        found = server_settings(name, raw)
        for problem in found.problems:
            if problem not in self._told:
                self._told.add(problem)
                log.warning("%s", problem)
        return found

    def for_server(self, cfg: ServerConfig, env: Mapping[str, str]) -> SandboxPolicy:
        """The policy of one stdio MCP server (``env``: what it is started with)."""
        own = self.server_settings(cfg.name)
        if not own.sandbox:
            return SandboxPolicy(enabled=False, env=dict(env), cwd=cfg.cwd,
                                 off_reason=f"the sandbox is turned off for it in settings.toml "
                                            f"([mcp.servers.{cfg.name}] sandbox = false)")
        roots = server_roots(cfg.args, cfg.cwd, ours=False)
        caches = launcher_caches(cfg.command)
        for cache in caches:  # made as the launcher would make it: inside, the home is read-only
            try:
                os.makedirs(cache, mode=0o700, exist_ok=True)
            except OSError as exc:
                log.info("could not create %s for %s: %s", cache, cfg.name, exc)
        writable = (*roots, *caches, *own.writable)
        return SandboxPolicy(protected=self.protected(), writable=tuple(writable),
                             network=network_for(own.network, _sandbox.session_bus()),
                             cwd=cfg.cwd, env=dict(env), readable=own_install())

    def for_folder(self, folder: str, env: Mapping[str, str], network: bool | None = False) -> SandboxPolicy:
        """The policy of a command run in ``folder`` (the shell pack): that folder read-write,
        the network off unless asked for."""
        return SandboxPolicy(protected=self.protected(), writable=(folder,),
                             network=network_for(network, _sandbox.session_bus()), cwd=folder, env=dict(env),
                             readable=own_install())


def own_install() -> tuple[str, ...]:
    """Hearthside's interpreter, its environment and its package: what a pack's server or a
    bundle's launcher may run with, so it stays readable even when installed under ``/tmp``."""
    import hearthside

    return tuple(dict.fromkeys((sys.executable, sys.prefix, os.path.dirname(os.path.dirname(hearthside.__file__)))))


def build_policies(app: AppContext) -> SandboxPolicies:
    """The app's policies: the write guard's protected places, the settings' per-server tables."""
    from .writeguard import build_write_guard

    def protected() -> list[str]:
        guard = build_write_guard(app.paths, app.personas, app.soul_path())
        return [r.path for r in guard.roots]

    return SandboxPolicies(app.paths, protected, app.settings.get)


def notice(policies: SandboxPolicies, stdio_servers: list[str]) -> str:
    """One plain sentence for the doctor and the MCP window when a stdio server would start
    without the sandbox ("" when every one is sandboxed): the machine's reason first, else the
    servers the user turned it off for."""
    status = _sandbox.probe()
    if not status.ok:
        return (f"The sandbox cannot run: {status.reason}; MCP programs run with your rights and only "
                "Hearthside's argument guard keeps them from your persona files.")
    off = [n for n in stdio_servers if not policies.server_settings(n).sandbox]
    if off:
        return (f"The sandbox is turned off in settings.toml for {', '.join(off)}: "
                f"{'it runs' if len(off) == 1 else 'they run'} with your rights, with only the argument guard.")
    return ""
