"""The persona service: which personas exist, composing them, creating a new one from templates.

Personas are the folders under ``<config>/hearthside/personas/`` plus any folder the user added
(an OpenClaw workspace, a Hermes home) listed in ``settings.toml`` as ``persona_folders.paths``
(``hearthside persona add DIR``). The key sits in its own table so it can never collide with the
per-persona ``[personas.<name>]`` tables, whatever a persona is called.
The only write this service ever makes into a persona folder is ``create`` of a brand-new one.
"""

from __future__ import annotations

import os
import re
import shlex
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..core.compose import BOOTSTRAP_ORDER, Composition, bootstrap_files, compose_persona
from ..core.errors import ErrorKind, ServiceError
from ..core.persona import folder_problem, validate_persona_name
from .paths import AppPaths
from .settings import SettingsStore


class PersonaError(ServiceError):
    """A persona action the user asked for could not be done; the message says why (its kind
    and command-line advice kept apart, see :mod:`hearthside.core.errors`)."""


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
#: The persona name given to each added folder: ``[persona_folders.names] "/path" = "name"``.
ADDED_NAMES_KEY = "persona_folders.names"


def suggest_name(text: str) -> str:
    """A valid persona name close to ``text`` ("Café" -> "Cafe", "x(1)" -> "x-1"), or "persona"."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^A-Za-z0-9 _.-]+", "-", folded).strip(" .-_")[:64].rstrip(" .-_")
    return cleaned if cleaned and not validate_persona_name(cleaned) else "persona"


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

    def added_names(self) -> dict[str, str]:
        """The name each added folder was given (path -> name); hand edits of a wrong type are
        ignored, so a folder then falls back to its own name."""
        raw = self.settings.get(ADDED_NAMES_KEY, {}) or {}
        if not isinstance(raw, dict):
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, str) and v}

    def list(self) -> list[PersonaInfo]:
        """Every persona, sorted by name; an added folder that is gone is listed as missing."""
        found: dict[str, PersonaInfo] = {}
        root = self.paths.personas_dir
        if root.is_dir():
            for entry in sorted(root.iterdir()):
                if entry.is_dir() and not entry.name.startswith("."):
                    found[entry.name] = self._info(entry.name, entry, "personas")
        names = self.added_names()
        for folder in self.added_folders():
            name = names.get(str(folder)) or folder.name or str(folder)
            if name in found:
                name = f"{folder.parent.name}-{name}"
            found.setdefault(name, self._info(name, folder, "added"))
        return [found[k] for k in sorted(found)]

    def add_folder(self, folder: str | os.PathLike[str], name: str = "") -> PersonaInfo:
        """Add an existing folder (an OpenClaw workspace, a Hermes home) as a persona.

        The persona is called ``name``, or the folder's own name when that is a valid persona
        name; a folder called ``Café`` or ``x(1)`` needs ``name`` (the refusal suggests one).
        Only the setting changes; nothing is created or written in the folder itself.
        """
        path = Path(os.path.normpath(Path(os.path.expanduser(os.fspath(folder))).absolute()))
        problem = folder_problem(path)
        if problem:
            raise PersonaError(problem)
        if not path.name:
            raise PersonaError(f"{path} is the top of the file system, not a persona folder; add the "
                               "folder that holds the persona's Markdown files.")
        resolved = path.resolve()
        if resolved.parent == self.paths.personas_dir.resolve():
            raise PersonaError(f"{path} is already one of your personas.")
        current = self.added_folders()
        if any(p.resolve() == resolved for p in current):
            raise PersonaError(f"{path} is already added.")
        chosen = name or path.name
        reason = validate_persona_name(chosen)
        if reason and name:
            raise PersonaError(f"{reason}.")
        if reason:
            raise PersonaError(
                f"the folder's name {chosen!r} cannot be a persona name (use 1-64 letters, digits, spaces, "
                f"'.', '_' or '-', starting with a letter or digit); add it with a name, for example: "
                f"hearthside persona add {shlex.quote(str(path))} --name {shlex.quote(suggest_name(chosen))}"
            )
        clash = next((i for i in self.list() if i.name.casefold() == chosen.casefold()), None)
        if clash is not None:
            raise PersonaError(
                f"there is already a persona named {clash.name!r} ({clash.path}); add this folder "
                f"with another name: hearthside persona add {shlex.quote(str(path))} --name NAME"
            )

        def mutate(data: dict[str, object]) -> None:
            section = data.get("persona_folders")
            if not isinstance(section, dict):
                section = data["persona_folders"] = {}
            names = section.get("names")
            if not isinstance(names, dict):
                names = section["names"] = {}
            section["paths"] = [str(p) for p in current] + [str(path)]
            names[str(path)] = chosen

        self.settings.update(mutate)
        return next(i for i in self.list() if i.path == path)

    def remove_folder(self, name: str) -> Path:
        """Stop listing an added folder (by persona name or path); its files are left alone."""
        info = next((i for i in self.list() if i.name == name or str(i.path) == name), None)
        if info is None:
            raise PersonaError(f"There is no persona named {name!r}.", ErrorKind.NOT_FOUND)
        if info.source != "added":
            raise PersonaError(
                f"{info.name} lives in Hearthside's own persona folder ({info.path}); Hearthside "
                "never deletes a persona folder. Move or delete it yourself if you mean to."
            )
        keep = [str(p) for p in self.added_folders() if p != info.path]

        def mutate(data: dict[str, object]) -> None:
            section = data.get("persona_folders")
            if not isinstance(section, dict):
                section = data["persona_folders"] = {}
            section["paths"] = keep
            names = section.get("names")
            if isinstance(names, dict):
                names.pop(str(info.path), None)

        self.settings.update(mutate)
        return info.path

    def _info(self, name: str, path: Path, source: str) -> PersonaInfo:
        exists = path.is_dir()
        files = tuple(n for _, n in bootstrap_files(path) if exists and (path / n).is_file()) if exists else ()
        return PersonaInfo(name, path, files, exists, source)

    def get(self, name: str) -> PersonaInfo:
        """The persona called ``name``; one whose name cannot work (a folder added before names
        were checked) is refused with what to do, never passed on to fail later."""
        for info in self.list():
            if info.name == name:
                reason = validate_persona_name(name)
                if reason:
                    raise PersonaError(
                        f"{reason}. The folder {info.path} was added under that name; give it a name "
                        f"that works: hearthside persona remove {shlex.quote(str(info.path))}, then "
                        f"hearthside persona add {shlex.quote(str(info.path))} --name {shlex.quote(suggest_name(name))}"
                    )
                return info
        if validate_persona_name(name):
            raise PersonaError(f"There is no persona named {name!r}.", ErrorKind.NOT_FOUND,
                               " Run 'hearthside persona list' to see them.")
        raise PersonaError(f"There is no persona named {name!r}.", ErrorKind.NOT_FOUND,
                           " Run 'hearthside persona list' to see them, "
                           f"or 'hearthside persona new {name}' to create it.")

    def compose(self, folder: str | os.PathLike[str], exclude: frozenset[str] = frozenset(),
                approved_links: Mapping[str, str] | None = None) -> Composition:
        """Compose a persona folder; files leading outside it are left out unless their link
        is in ``approved_links`` (the drift service's approvals)."""
        path = Path(folder).expanduser()
        problem = folder_problem(path)
        if problem:
            raise PersonaError(problem)
        return compose_persona(path, exclude, approved_links=approved_links)

    def create(self, name: str, *, user_name: str = "", character: str = "") -> Path:
        """Create a new persona folder from the starter templates, create-only.

        Refuses a name that exists (as anything) and never overwrites a file: each file is
        opened with ``O_EXCL``, so even a race with another writer cannot clobber it.
        ``user_name`` (what the persona calls the user) and ``character`` (a sentence about the
        persona) from the welcome window go into USER.md and SOUL.md of the new folder only.
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
        templates = with_answers(starter_templates(), user_name, character, name)
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


#: Longest answer accepted for "what to call you" and the character sentence.
MAX_ANSWER = {"user_name": 80, "character": 600}

#: The starter SOUL.md's character paragraph; a character sentence of the user's takes its place
#: (tests/test_cli_foundation.py checks the shipped template still holds it).
STARTER_CHARACTER = "{{name}} is calm, kind and a little dry-humoured. It likes tidy lists and plain language."

#: Markup that would change what the file means to the model: a heading could open a section
#: of its own (``## USER.md``), a tag or a code fence could hide text.
_MARKUP_CHARS = "<>`[]"
_MARKUP_STARTS = ("#", "*", "-", "+", "=", ">", "|")
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def answer_problem(user_name: str, character: str) -> str:
    """Why the welcome answers cannot go into the files ("" when they can). An empty answer is
    no answer (the starter text stays); the caller refuses an empty answer it was given
    explicitly (``--character ""``)."""
    from ..core.injection import scan_for_injection

    for label, key, value in (("What to call you", "user_name", user_name),
                              ("The character sentence", "character", character)):
        text = value.strip()
        if not text:
            continue
        if len(text) > MAX_ANSWER[key]:
            return f"{label} is longer than {MAX_ANSWER[key]} characters; shorten it."
        if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI_CONTROLS for c in text):
            return f"{label} must be one line of plain text (no line breaks or control characters)."
        if any(c in _MARKUP_CHARS for c in text) or text.startswith(_MARKUP_STARTS):
            return (f"{label} must be plain words: leave out Markdown or HTML such as a leading '#', "
                    "'<', '>', '`' or '['.")
        hit = scan_for_injection(text)
        if hit is not None:
            return (f"{label} reads like an instruction to the model ({hit.describe()}); describe it "
                    "in your own words instead.")
    return ""


_SENTENCE_STARTS = ("it ", "she ", "he ", "they ", "{{name}} ")


def character_paragraph(character: str, name: str = "") -> str:
    """The user's character answer as SOUL.md's character paragraph: a whole sentence as
    written ("Juniper is patient.", "Juniper is kind", "It hums"), a phrase as the starter
    writes it ("cheerful and chatty" -> "{{name}} is cheerful and chatty.")."""
    text = " ".join(character.split())
    low = text.casefold()
    if text.endswith((".", "!", "?", "…")):
        return text
    if low.startswith(_SENTENCE_STARTS) or (name and low.startswith(name.casefold() + " ")):
        return text + "."
    return f"{{{{name}}}} is {text}."


def with_answers(templates: dict[str, str], user_name: str, character: str, name: str = "") -> dict[str, str]:
    """The starter files with the welcome answers in them: USER.md gets "Call me ...", and the
    character sentence *replaces* the starter's character paragraph in SOUL.md (it is not
    added after it). Raises :class:`PersonaError` for an unusable answer."""
    problem = answer_problem(user_name, character)
    if problem:
        raise PersonaError(problem)
    out = dict(templates)
    if user_name.strip() and "USER.md" in out:
        out["USER.md"] = out["USER.md"].rstrip("\n") + f"\n\n- Call me {' '.join(user_name.split())}.\n"
    if character.strip() and "SOUL.md" in out:
        soul = out["SOUL.md"]
        mine = character_paragraph(character, name)
        if STARTER_CHARACTER in soul:
            out["SOUL.md"] = soul.replace(STARTER_CHARACTER, mine, 1)
        else:  # a template without the starter paragraph: the answer is its character
            out["SOUL.md"] = soul.rstrip("\n") + f"\n\n{mine}\n"
    return out


def starter_templates() -> dict[str, str]:
    """The seven starter files shipped in ``hearthside/templates``, by bootstrap name."""
    pkg = resources.files("hearthside") / "templates"
    return {n: (pkg / n).read_text(encoding="utf-8") for n in BOOTSTRAP_ORDER}
