"""A persona as a value: its name, its folder, and the prompt composed from it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .compose import Composition, compose_persona

#: Persona names become folder names: keep them portable across Linux, macOS and Windows.
_NAME_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {
    f"lpt{i}" for i in range(1, 10)
}


def validate_persona_name(name: str) -> str:
    """Return "" when ``name`` can be a persona folder name, else a sentence saying why not."""
    if not _NAME_RX.match(name or ""):
        return (
            f"{name!r} is not a valid persona name: use 1-64 letters, digits, spaces, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    if name.endswith((".", " ")) or name.split(".")[0].lower() in _RESERVED:
        return f"{name!r} is not a valid persona name on every system; choose another"
    return ""


def folder_problem(path: Path) -> str:
    """A sentence saying why ``path`` cannot be a persona folder, or "" when it can."""
    if not path.exists():
        return (
            f"The persona folder {path} does not exist. Check the path, or create a new "
            "persona with 'hearthside persona new NAME'."
        )
    if not path.is_dir():
        return f"{path} is not a folder; a persona is a folder of Markdown files."
    return ""


@dataclass(frozen=True)
class Persona:
    """A runnable persona: the composed prompt is a frozen snapshot taken at construction."""

    name: str
    directory: str
    composition: Composition
    settings: dict[str, object] = field(default_factory=dict)

    @property
    def system_prompt(self) -> str:
        return self.composition.soul

    @property
    def found(self) -> tuple[str, ...]:
        return self.composition.found


def from_dir(
    directory: str | os.PathLike[str],
    name: str | None = None,
    exclude: frozenset[str] = frozenset(),
    settings: dict[str, object] | None = None,
    approved_links: Mapping[str, str] | None = None,
) -> Persona:
    """Build a persona from its folder; the name is the folder name unless given.

    Raises ``FileNotFoundError``/``NotADirectoryError`` with a sentence when the folder is
    missing, since a persona with no folder is a user mistake worth saying out loud.
    ``approved_links`` lets in files that lead outside the folder (see ``compose_persona``).
    """
    path = Path(directory).expanduser()
    problem = folder_problem(path)
    if problem:
        raise (FileNotFoundError if not path.exists() else NotADirectoryError)(problem)
    comp = compose_persona(path, exclude, approved_links=approved_links)
    return Persona(name or path.resolve().name, str(path), comp, dict(settings or {}))
