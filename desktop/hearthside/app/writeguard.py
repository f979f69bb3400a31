"""Builds the session's write guard from where Hearthside and the user's files live.

Protected, whatever ``files.workspace`` is: the soul file (the configured one and the
default), Hearthside's config, data and state folders (settings, ``mcp.json``, memory, packs,
baselines, logs), the personas folder and every persona folder the user added. Built fresh
for every session, so a folder added a minute ago is protected in the next chat. A path
inside a fork is judged as the same name in that fork's workspace (``ForkWriteGuard``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.boundedread import read_text_bounded
from ..core.safeparse import loads_json
from ..core.writeguard import ForkWriteGuard, WriteGuard
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
    plain = WriteGuard.of(entries)
    return ForkWriteGuard(plain.roots, str(forks_dir(paths)), fork_parent_reader(paths))


def forks_dir(paths: AppPaths) -> Path:
    """Where forks live (``app/forks.py`` keeps its registry and the forks' folders there)."""
    return paths.state_dir / "forks"


def fork_parent_reader(paths: AppPaths) -> Callable[[str], str | None]:
    """``fork id -> its workspace`` from the fork registry, for the guard: None for a fork that
    is not being worked on or reviewed (applied, discarded, unknown, damaged)."""
    folder = forks_dir(paths)

    def parent_of(fid: str) -> str | None:
        if not fid or not all(c in "0123456789abcdef" for c in fid) or len(fid) > 32:
            return None
        text, _why = read_text_bounded(folder / f"{fid}.json", 64 * 1024 * 1024)
        if text is None:
            return None
        try:
            doc = loads_json(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or doc.get("status") not in ("working", "ready"):
            return None
        ws = doc.get("workspace")
        return ws if isinstance(ws, str) and ws else None

    return parent_of
