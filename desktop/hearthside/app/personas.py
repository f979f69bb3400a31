"""The persona service: which personas exist, composing them, creating a new one from templates.

Personas are the folders under ``<config>/hearthside/personas/`` plus any folder the user added
(an OpenClaw workspace, a Hermes home) listed in ``settings.toml`` as ``persona_folders.paths``
(``hearthside persona add DIR``). The key sits in its own table so it can never collide with the
per-persona ``[personas.<name>]`` tables, whatever a persona is called.
The only write this service ever makes into a persona folder is ``create`` of a brand-new one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..core.compose import BOOTSTRAP_ORDER, Composition, compose_persona
from ..core.persona import folder_problem, validate_persona_name
from .paths import AppPaths
from .settings import SettingsStore


class PersonaError(Exception):
    """A persona action the user asked for could not be done; the message says why."""


@dataclass(frozen=True)
class PersonaInfo:
    """A persona's name and folder, and which bootstrap files are in it."""

    name: str
    path: Path
    files: tuple[str, ...]
    exists: bool
    source: str  # "personas" (the app's folder) or "added" (a folder from settings)

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": str(self.path),
            "files": list(self.files),
            "exists": self.exists,
            "source": self.source,
        }


#: Where the folders a user added live in settings.toml: ``[persona_folders] paths = [...]``.
ADDED_FOLDERS_KEY = "persona_folders.paths"


class PersonaService:
    """Finds, composes and creates personas; never writes into an existing persona folder."""

    def __init__(self, paths: AppPaths, settings: SettingsStore) -> None:
        self.paths = paths
        self.settings = settings

    def added_folders(self) -> list[Path]:
        raw = self.settings.get(ADDED_FOLDERS_KEY, []) or []
        if isinstance(raw, str):  # `folders = "~/ws"`: one folder, not one persona per letter
            raw = [raw]
        if not isinstance(raw, list):
            return []
        return [Path(os.path.expanduser(p.strip())) for p in raw if isinstance(p, str) and p.strip()]

    def list(self) -> list[PersonaInfo]:
        """Every persona, sorted by name; an added folder that is gone is listed as missing."""
        found: dict[str, PersonaInfo] = {}
        root = self.paths.personas_dir
        if root.is_dir():
            for entry in sorted(root.iterdir()):
                if entry.is_dir() and not entry.name.startswith("."):
                    found[entry.name] = self._info(entry.name, entry, "personas")
        for folder in self.added_folders():
            name = folder.name if folder.name not in found else f"{folder.parent.name}-{folder.name}"
            found.setdefault(name, self._info(name, folder, "added"))
        return [found[k] for k in sorted(found)]

    def add_folder(self, folder: str | os.PathLike[str]) -> PersonaInfo:
        """Add an existing folder (an OpenClaw workspace, a Hermes home) as a persona.

        Only the setting changes; nothing is created or written in the folder itself.
        """
        path = Path(os.path.expanduser(os.fspath(folder))).absolute()
        problem = folder_problem(path)
        if problem:
            raise PersonaError(problem)
        resolved = path.resolve()
        if resolved.parent == self.paths.personas_dir.resolve():
            raise PersonaError(f"{path} is already one of your personas.")
        current = self.added_folders()
        if any(p.resolve() == resolved for p in current):
            raise PersonaError(f"{path} is already added.")
        self.settings.set(ADDED_FOLDERS_KEY, [str(p) for p in current] + [str(path)])
        return next(i for i in self.list() if i.path == path)

    def remove_folder(self, name: str) -> Path:
        """Stop listing an added folder (by persona name or path); its files are left alone."""
        info = next((i for i in self.list() if i.name == name or str(i.path) == name), None)
        if info is None:
            raise PersonaError(f"There is no persona named {name!r}.")
        if info.source != "added":
            raise PersonaError(
                f"{info.name} lives in Hearthside's own persona folder ({info.path}); Hearthside "
                "never deletes a persona folder. Move or delete it yourself if you mean to."
            )
        keep = [str(p) for p in self.added_folders() if p != info.path]
        self.settings.set(ADDED_FOLDERS_KEY, keep)
        return info.path

    def _info(self, name: str, path: Path, source: str) -> PersonaInfo:
        exists = path.is_dir()
        files = tuple(n for n in BOOTSTRAP_ORDER if exists and (path / n).is_file())
        return PersonaInfo(name, path, files, exists, source)

    def get(self, name: str) -> PersonaInfo:
        for info in self.list():
            if info.name == name:
                return info
        raise PersonaError(
            f"There is no persona named {name!r}. Run 'hearthside persona list' to see them, "
            f"or 'hearthside persona new {name}' to create it."
        )

    def compose(self, folder: str | os.PathLike[str], exclude: frozenset[str] = frozenset(),
                approved_links: Mapping[str, str] | None = None) -> Composition:
        """Compose a persona folder; files leading outside it are left out unless their link
        is in ``approved_links`` (the drift service's approvals)."""
        path = Path(folder).expanduser()
        problem = folder_problem(path)
        if problem:
            raise PersonaError(problem)
        return compose_persona(path, exclude, approved_links=approved_links)

    def create(self, name: str) -> Path:
        """Create a new persona folder from the starter templates, create-only.

        Refuses a name that exists (as anything) and never overwrites a file: each file is
        opened with ``O_EXCL``, so even a race with another writer cannot clobber it.
        """
        reason = validate_persona_name(name)
        if reason:
            raise PersonaError(reason)
        target = self.paths.personas_dir / name
        if any(i.name.casefold() == name.casefold() and i.name != name for i in self.list()):
            raise PersonaError(
                f"A persona with a name that differs from {name!r} only in capitals already "
                "exists; on macOS and Windows they would be the same folder. Choose another name."
            )
        if os.path.lexists(target):
            raise PersonaError(
                f"A persona folder already exists at {target}; Hearthside never overwrites it."
            )
        templates = starter_templates()
        try:
            self.paths.personas_dir.mkdir(parents=True, exist_ok=True)
            target.mkdir(mode=0o700)
        except FileExistsError as exc:
            raise PersonaError(f"A persona folder already exists at {target}.") from exc
        except OSError as exc:
            raise PersonaError(
                f"Could not create the persona folder {target}: {exc.strerror or exc}. "
                f"Check that {self.paths.personas_dir.parent} is a folder you can write to."
            ) from exc
        created: list[Path] = []
        try:
            for fname, text in templates.items():
                fd = os.open(target / fname, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                created.append(target / fname)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text.replace("{{name}}", name))
        except OSError as exc:
            # Undo only what this call created: the files it made with O_EXCL, then the
            # folder if nothing else appeared in it meanwhile.
            for path in created:
                path.unlink(missing_ok=True)
            try:
                target.rmdir()
            except OSError:
                pass
            raise PersonaError(
                f"Could not write the starter files into {target}: {exc.strerror or exc}. "
                "Nothing was kept; free some space or fix the folder's permissions and try again."
            ) from exc
        return target


def starter_templates() -> dict[str, str]:
    """The seven starter files shipped in ``hearthside/templates``, by bootstrap name."""
    pkg = resources.files("hearthside") / "templates"
    return {n: (pkg / n).read_text(encoding="utf-8") for n in BOOTSTRAP_ORDER}
