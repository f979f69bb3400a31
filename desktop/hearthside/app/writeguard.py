"""Builds the session's write guard from where Hearthside and the user's files live.

Protected, whatever ``files.workspace`` is: the soul file (the configured one and the
default), Hearthside's config, data and state folders (settings, ``mcp.json``, memory, packs,
baselines, logs), the personas folder and every persona folder the user added. Built fresh
for every session, so a folder added a minute ago is protected in the next chat.
"""

from __future__ import annotations

from pathlib import Path

from ..core.writeguard import WriteGuard
from .paths import AppPaths
from .personas import PersonaService


def build_write_guard(paths: AppPaths, personas: PersonaService, soul_path: str) -> WriteGuard:
    """The guard for one session (see the module docstring for what it protects). The most
    specific places come first, so the refusal names the persona rather than the config dir."""
    entries: list[tuple[str | Path, str]] = [
        (soul_path, "your soul file"),
        (paths.soul_file, "your soul file"),
    ]
    try:
        listed = personas.list()
    except OSError:
        listed = []
    for info in listed:
        entries.append((info.path, f"the persona folder of {info.name}"))
    for folder in personas.added_folders():
        entries.append((folder, f"the persona folder {folder.name!r}"))
    entries += [
        (paths.personas_dir, "your personas folder"),
        (paths.config_dir, "Hearthside's config folder"),
        (paths.data_dir, "Hearthside's data folder"),
        (paths.state_dir, "Hearthside's state folder"),
    ]
    return WriteGuard.of(entries)
