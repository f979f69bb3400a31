"""A session's environment: its workspace folder and the shell bound to it (seed 004).

Which folder the shell is bound to: the files pack's workspace (``files.workspace``) when the
user set one — the shell and the file tools then see the same files — else a folder of the
persona's own, ``<XDG data home>/hearthside-shell/<persona>``, made on the first command. That
folder sits *beside* Hearthside's data folder, not inside it: Hearthside's folders are
read-only in the sandbox, so a working folder inside them could never be written.

The runner is made for every session (it costs nothing until a command runs); only the shell
pack's ``Bash`` tool uses it. It checks the sandbox at each command, so a session prepared
before bubblewrap broke still refuses rather than running bare.

``settings.toml``::

    [shell]
    timeout = 120        # seconds a command may run when the call does not say
    max_timeout = 600    # the most a call may ask for
    network = false      # true: commands share your network (default: none)
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from ..adapters.commandrunner import DEFAULT_TIMEOUT, MAX_TIMEOUT, LocalCommandRunner
from ..adapters.workspace_dir import DirectoryWorkspace
from ..core.environment import Environment, EnvironmentRef, new_environment
from ..core.sandbox import SandboxPolicy, within
from .sandbox import SandboxPolicies

if TYPE_CHECKING:
    from .sessions import SessionDeps

log = logging.getLogger(__name__)

#: The folder (under the XDG data home) that holds each persona's default shell folder.
DEFAULT_ROOT_NAME = "hearthside-shell"


def default_folder(persona: str) -> Path:
    """The persona's own shell folder when no workspace is set."""
    return Path(platformdirs.user_data_dir(DEFAULT_ROOT_NAME, appauthor=False, roaming=True)) / persona


def _seconds(settings: Any, key: str, default: float) -> float:
    value = settings.get(key)
    if value is None:
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 86_400:
        return float(value)
    log.warning("%s in settings.toml is %r, not a number of seconds above 0; using %g", key, value, default)
    return default


def policies(app: SessionDeps) -> SandboxPolicies:
    """The sandbox policies, protecting exactly what the session's write guard protects."""
    from .writeguard import build_write_guard

    def protected() -> list[str]:
        guard = build_write_guard(app.paths, app.personas, app.soul_path())
        return [r.path for r in guard.roots]

    return SandboxPolicies(app.paths, protected, app.settings.get)


def make_runner(app: SessionDeps, folder: Path, *, make_root: bool = False,
                carve_out: bool = False, grant: Callable[[str], bool] | None = None) -> LocalCommandRunner:
    """A runner bound to ``folder`` with the user's limits (also what a fork binds to its copy).

    ``carve_out``: ``folder`` is one Hearthside made inside its own *state* or *data* folder (a
    fork's copy under ``state/forks``) and the command may write it: the sandbox *grants* it
    (:attr:`~hearthside.core.sandbox.SandboxPolicy.grants`), binding it read-write after the
    protected places, so the folder that holds it stays read-only around it, and every other
    protected place — the soul, each persona folder, the config folder — stays protected. A
    folder inside a persona folder or the config folder is never carved out. ``grant(root)``
    (with ``carve_out``) is asked at every command, and False leaves the folder protected: a
    fork applied or discarded meanwhile is no longer writable (:func:`fork_runner`)."""
    pols = policies(app)
    network = app.settings.get("shell.network", False)
    if not isinstance(network, bool):
        log.warning("shell.network in settings.toml is %r, not true or false; the network stays off", network)
        network = False
    holders: tuple[str, ...] = ()
    if carve_out:
        real = os.path.realpath(folder)
        holders = tuple(str(d) for d in (app.paths.state_dir, app.paths.data_dir)
                        if within(real, os.path.realpath(d)) and real != os.path.realpath(d))
        if not holders:
            raise ValueError(f"{folder} is not inside Hearthside's state or data folder; nothing to carve out")
    holders_real = {os.path.realpath(h) for h in holders}

    def policy(root: str, env: Mapping[str, str]) -> SandboxPolicy:
        made = pols.for_folder(root, env, network=network)
        if not holders or (grant is not None and not grant(root)):
            return made
        others = [p for p in made.protected if os.path.realpath(p) not in holders_real and p not in holders]
        if any(within(os.path.realpath(root), os.path.realpath(p)) for p in others):
            return made  # inside something else protected (a persona folder): no carve-out
        return dataclasses.replace(made, grants=(root,))

    timeout = _seconds(app.settings, "shell.timeout", DEFAULT_TIMEOUT)
    return LocalCommandRunner(folder, policy, default_timeout=timeout,
                              max_timeout=_seconds(app.settings, "shell.max_timeout", MAX_TIMEOUT),
                              make_root=make_root)


def fork_runner(app: SessionDeps, tree: Path) -> LocalCommandRunner:
    """The shell of a fork: bound to the fork's own copy, which is the one place of Hearthside's
    state folder a command may change — and only while the registry knows it as a fork being
    worked on or waiting for review. The soul, every persona folder, Hearthside's folders and
    the other forks stay read-only; so a forked specialist's ``Bash`` changes only its copy."""
    return make_runner(app, tree, carve_out=True, grant=app.forks.is_live_tree)


def session_environment(app: SessionDeps, persona: str, workspace: str | None) -> Environment:
    """The environment of a session of ``persona``: the workspace folder (or the persona's own
    shell folder) and a runner bound to it."""
    if workspace:
        folder, own = Path(workspace), False
    else:
        folder, own = default_folder(persona), True
    runner = make_runner(app, folder, make_root=own)
    return new_environment(EnvironmentRef("workspace", persona), DirectoryWorkspace(os.fspath(folder)), runner)
