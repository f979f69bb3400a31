"""Skills in the agentskills.io format (contract section 7): parsing, sources, precedence, assets.

A skill is a folder ``<name>/SKILL.md`` whose YAML front matter names and describes it; the
rest of the file is the body the ``Skill`` tool loads on demand. Other files in the folder are
*assets*, addressed by a validated logical name (never an OS path), so a skill can point the
model at ``references/api.md`` without opening a path-traversal door.

Sources are snapshots: a folder is scanned once, when the catalog for a session is built.
Precedence is by source order (persona folder, user folder, packs): the first name wins, and a
name the first source holds back stays taken (no later copy fills in for it).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml  # type: ignore[import-untyped,unused-ignore]

from .boundedread import read_bounded
from .injection import InjectionHit, scan_for_injection

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024
MAX_ASSET_BYTES = 1024 * 1024
MAX_ASSETS = 256
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_ALLOWED_TOOLS = 64

_NAME_RX = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
#: One ``allowed-tools`` entry: a name, with an optional ``(pattern)`` that may hold spaces
#: (``Bash(git diff:*)``); entries are separated by spaces or commas (``Read, Grep``).
_TOOL_RX = re.compile(r"[^\s,()]+(?:\([^)]*\))?")
_FRONT_RX = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)

#: Origins are admission tiers, never locations.
ORIGIN_PERSONA = "persona"
ORIGIN_USER = "user"
ORIGIN_PACK = "pack"


class SkillNotFound(LookupError):
    """No skill of that name in the catalog."""


class SkillAssetNotFound(LookupError):
    """The skill exists but has no asset of that logical name."""


class InvalidAssetName(ValueError):
    """An asset name that is not a safe relative logical name (``..``, leading ``/``, ...)."""


@dataclass(frozen=True)
class SkillMeta:
    """What sits in the prompt for a skill, plus advisory fields. No path, no body.

    ``allowed_tools`` is advisory only: it is never a permission.
    """

    name: str
    description: str
    origin: str
    license: str = ""
    compatibility: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    has_assets: bool = False
    pack: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "origin": self.origin,
            "pack": self.pack,
            "license": self.license,
            "compatibility": self.compatibility,
            "metadata": dict(self.metadata),
            "allowed_tools": list(self.allowed_tools),
            "has_assets": self.has_assets,
        }


@dataclass(frozen=True)
class SkillAsset:
    """One auxiliary file of a skill, by logical name (``references/api.md``)."""

    name: str
    size: int
    executable: bool = False


@dataclass(frozen=True)
class SkillDoc:
    """A parsed, valid ``SKILL.md``: metadata, body, non-fatal warnings and a fingerprint."""

    meta: SkillMeta
    body: str
    text: str
    warnings: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SkillDiagnostic:
    """Why a skill was skipped (malformed, shadowed, held back), for ``plugins list`` and logs."""

    skill: str
    origin: str
    reason: str
    pack: str = ""


def validate_skill_name(name: object) -> str:
    """"" when ``name`` is a valid skill name, else a sentence saying why not."""
    if not isinstance(name, str) or not name:
        return "the skill has no 'name' in its front matter"
    if len(name) > MAX_NAME or not _NAME_RX.match(name):
        return (
            f"skill name {name!r} is invalid: use 1-64 lowercase letters, digits and single "
            "hyphens, not at the start or end"
        )
    return ""


def validate_asset_name(name: object) -> str:
    """"" when ``name`` is a safe logical asset name, else why it is not.

    Relative, ``/``-separated, no ``.``/``..`` or empty segments, no leading ``/``, no
    backslash, no NUL: a logical name can never point outside its skill.
    """
    if not isinstance(name, str) or not name:
        return "an asset name must be a non-empty string"
    if "\x00" in name:
        return "an asset name may not contain a NUL character"
    if "\\" in name:
        return f"asset name {name!r} may not contain a backslash; use '/'"
    if name.startswith("/"):
        return f"asset name {name!r} must be relative (no leading '/')"
    if any(seg in ("", ".", "..") for seg in name.split("/")):
        return f"asset name {name!r} may not contain '..', '.' or empty segments"
    if len(name.encode("utf-8")) > 1024:
        return "an asset name may be at most 1024 bytes"
    return ""


def _yaml_kind(value: object) -> str:
    """A word for a YAML value's shape, for error sentences."""
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return "single value"


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """A sentence for a YAML error: what, on which line of SKILL.md, and the usual fix."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" on line {mark.line + 2} of SKILL.md" if mark is not None else ""  # +1 base, +1 for '---'
    return (f"the front matter is not valid YAML{where} ({problem}); a value that contains ': ' or "
            "starts with a quote, '[' or '{' must be put in quotes")


def _scalar_str(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)) or value is None:
        return "" if value is None else str(value)
    return None


def parse_skill(
    text: str, folder_name: str, origin: str, pack: str = "", has_assets: bool = False
) -> tuple[SkillDoc | None, str]:
    """Parse and validate one ``SKILL.md``; returns ``(doc, "")`` or ``(None, reason)``."""
    text = text.removeprefix("\ufeff")
    m = _FRONT_RX.match(text)
    if not m:
        return None, "SKILL.md has no front matter: it must start with a '---' line, then YAML, then '---'"
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        return None, _yaml_reason(exc)
    if not isinstance(front, dict):
        return None, "the front matter must be a YAML mapping (key: value lines)"
    name = front.get("name")
    reason = validate_skill_name(name)
    if reason or not isinstance(name, str):
        return None, reason
    warnings: list[str] = []
    if name != folder_name:
        # The Agent Skills spec wants them equal, but the hosts people use load a skill by its
        # 'name' (4 of Vercel's 7 public skills differ): load it so, and say so.
        warnings.append(folder_name_warning(name, folder_name))
    desc = front.get("description")
    if not isinstance(desc, str) or not desc.strip():
        return None, ("the skill has no 'description' in its front matter; add one saying what the "
                      "skill does and when to use it")
    desc = desc.strip()
    if len(desc) > MAX_DESCRIPTION:
        return None, (f"the description is {len(desc)} characters; shorten it to at most {MAX_DESCRIPTION} "
                      "and move the details into the body")
    lic = _scalar_str(front.get("license"))
    if lic is None:
        return None, "'license' must be a string"
    compat = _scalar_str(front.get("compatibility"))
    if compat is None:
        return None, "'compatibility' must be a string"
    if len(compat) > MAX_COMPATIBILITY:
        return None, f"'compatibility' is {len(compat)} characters; at most {MAX_COMPATIBILITY} are allowed"
    raw_meta = front.get("metadata") or {}
    if not isinstance(raw_meta, dict):
        return None, (f"'metadata' is a {_yaml_kind(raw_meta)}, but it must be a mapping of names to "
                      "text (indented 'key: value' lines)")
    metadata: dict[str, str] = {}
    for k, v in raw_meta.items():
        sv = _scalar_str(v)
        if sv is None:  # nested (OpenClaw's ``metadata: {"openclaw": {...}}``): advisory, so drop it
            warnings.append(f"'metadata' entry {str(k)!r} is a {_yaml_kind(v)}, not text, and was ignored; "
                            "the skill still loads")
            continue
        metadata[str(k)] = sv
    raw_tools = front.get("allowed-tools")
    tools: list[str]
    if raw_tools is None:
        tools = []
    elif isinstance(raw_tools, str):
        tools = _TOOL_RX.findall(raw_tools)
    elif isinstance(raw_tools, list) and all(isinstance(t, str) for t in raw_tools):
        tools = [t for t in raw_tools if t]
    else:
        return None, "'allowed-tools' must be a space-separated string or a list of names"
    if len(tools) > MAX_ALLOWED_TOOLS or any(len(t) > 64 for t in tools):
        warnings.append("'allowed-tools' was cut to 64 names of at most 64 characters")
        tools = [t[:64] for t in tools[:MAX_ALLOWED_TOOLS]]
    body = text[m.end():].replace("\r\n", "\n").strip("\n")
    meta = SkillMeta(
        name=name,
        description=" ".join(desc.split()),
        origin=origin,
        license=lic.strip(),
        compatibility=compat.strip(),
        metadata=metadata,
        allowed_tools=tuple(tools),
        has_assets=has_assets,
        pack=pack,
    )
    return SkillDoc(meta, body, text, tuple(warnings)), ""


def folder_name_warning(name: str, folder_name: str) -> str:
    """The warning for a skill whose ``name`` differs from its folder's name (it still loads)."""
    return (f"skill name {name!r} does not match its folder name {folder_name!r}; it is loaded as "
            f"{name!r} (rename the folder to {name!r} to silence this warning)")


def scan_skill(doc: SkillDoc) -> InjectionHit | None:
    """The injection scan applied to pack skills: the whole ``SKILL.md`` text."""
    return scan_for_injection(doc.text)


class SkillSource(Protocol):
    """A read-only snapshot of skills. Where they come from is the source's own business."""

    def list(self) -> builtins.list[SkillMeta]: ...

    def withheld(self) -> builtins.set[str]:
        """Names the source has but does not offer: they stay claimed, never filled by a later
        source (a held-back persona skill must not be replaced by an unreviewed copy)."""
        ...

    def body(self, name: str) -> str: ...

    def assets(self, name: str) -> builtins.list[SkillAsset]: ...

    def read_asset(self, skill: str, asset: str) -> bytes: ...

    @property
    def diagnostics(self) -> builtins.list[SkillDiagnostic]: ...


def _list_assets(folder: Path) -> builtins.list[tuple[SkillAsset, Path]]:
    """Regular files under ``folder`` (not following links), sorted, capped at MAX_ASSETS."""
    out: list[tuple[SkillAsset, Path]] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for fname in sorted(filenames):
            full = Path(dirpath) / fname
            rel = full.relative_to(folder).as_posix()
            if rel == SKILL_FILE or fname.startswith(".") or validate_asset_name(rel):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            out.append((SkillAsset(rel, st.st_size, bool(st.st_mode & 0o111)), full))
            if len(out) >= MAX_ASSETS:
                return out
    return out


@dataclass
class _Loaded:
    doc: SkillDoc
    folder: Path
    assets: dict[str, tuple[SkillAsset, Path]]


class DirectorySkillSource:
    """Skills from folders on disk. Each root is one skill folder or a folder of skill folders.

    A skill is known by its ``name``, even when its folder is called otherwise (with a
    warning). Two folders of one source claiming the same name: the folder called by that name
    keeps it and the others are refused; when none is, all of them are refused, since there is
    no telling which one the user meant. Either way the name stays *claimed* by this source
    (see :meth:`withheld`), so a copy from a later source never fills in for it.

    ``exclude`` hides skills by name (held-back pack skills; it may be set after a scan, since
    it applies on lookup); :meth:`withhold` does the same with a reason the diagnostics show.
    The folders are scanned once, on first use, so a session sees a stable set.
    """

    def __init__(
        self,
        roots: Iterable[str | os.PathLike[str]],
        origin: str,
        pack: str = "",
        exclude: Iterable[str] = (),
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.origin = origin
        self.pack = pack
        self.exclude = frozenset(exclude)
        self._why_held: dict[str, str] = {}
        self._skills: dict[str, _Loaded] | None = None
        self._clashed: builtins.set[str] = builtins.set()
        self._diags: builtins.list[SkillDiagnostic] = []

    def _diag(self, skill: str, reason: str) -> None:
        self._diags.append(SkillDiagnostic(skill, self.origin, reason, self.pack))

    def withhold(self, reasons: Mapping[str, str]) -> None:
        """Hide these skills (name -> why) from sessions; the name stays claimed."""
        self.exclude = self.exclude | frozenset(reasons)
        self._why_held.update(reasons)

    def withhold_folders(self, reasons: Mapping[str, str]) -> None:
        """:meth:`withhold` by folder name (drift watches ``skills/<folder>/SKILL.md``, and a
        skill's name may differ from its folder's)."""
        self.withhold({name: reasons[s.folder.name] for name, s in self._scan().items()
                       if s.folder.name in reasons})

    def _scan(self) -> dict[str, _Loaded]:
        if self._skills is not None:
            return self._skills
        claims: dict[str, builtins.list[_Loaded]] = {}
        for root in self.roots:
            if (root / SKILL_FILE).exists():
                folders = [root]
            elif root.is_dir():
                try:
                    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
                except OSError as exc:
                    self._diag(root.name, f"the skills folder cannot be listed: {exc.strerror or exc}")
                    continue
                folders = [f for f in folders if (f / SKILL_FILE).exists() or self._missing(f)]
            else:
                continue
            for folder in folders:
                loaded = self._load_one(folder)
                if loaded is not None:
                    claims.setdefault(loaded.doc.meta.name, []).append(loaded)
        self._skills = {name: kept for name, group in claims.items()
                        if (kept := self._settle_claims(name, group)) is not None}
        return self._skills

    def _settle_claims(self, name: str, group: builtins.list[_Loaded]) -> _Loaded | None:
        """The one skill that keeps ``name`` among the folders claiming it, or None (all refused)."""
        if len(group) == 1:
            return group[0]
        self._clashed.add(name)
        exact = [g for g in group if g.folder.name == name]
        keeper = exact[0] if len(exact) == 1 else None
        for g in group:
            if g is keeper:
                continue
            if keeper is not None:
                self._diag(name, f"the folder {g.folder.name!r} also says its skill is {name!r}, but the "
                                 f"folder {name!r} has that name; this one was refused, so change its 'name'")
            else:
                others = ", ".join(repr(o.folder.name) for o in group if o is not g)
                self._diag(name, f"the folder {g.folder.name!r} and {others} all say their skill is "
                                 f"{name!r}, so none of them is used; give each its own 'name'")
        return keeper

    def _missing(self, folder: Path) -> bool:
        self._diag(folder.name, f"the folder {folder.name!r} has no {SKILL_FILE}")
        return False

    def _load_one(self, folder: Path) -> _Loaded | None:
        got = read_bounded(folder / SKILL_FILE, MAX_SKILL_BYTES)
        if not got.ok or got.data is None:
            self._diag(folder.name, got.reason)
            return None
        if got.over_cap:
            self._diag(folder.name, f"{SKILL_FILE} is larger than {MAX_SKILL_BYTES // 1024} KiB")
            return None
        try:
            text = got.data.decode("utf-8")
        except UnicodeDecodeError:
            self._diag(folder.name, f"{SKILL_FILE} is not UTF-8 text")
            return None
        assets = {a.name: (a, p) for a, p in _list_assets(folder)}
        doc, reason = parse_skill(text, folder.name, self.origin, self.pack, bool(assets))
        if doc is None:
            self._diag(folder.name, reason)
            return None
        for w in doc.warnings:  # under the name it is known by, which is what lists show
            self._diag(doc.meta.name, w)
        return _Loaded(doc, folder, assets)

    def withheld(self) -> builtins.set[str]:
        """Names this source claims but does not offer (held back, or refused as a clash)."""
        scanned = self._scan()
        return (builtins.set(scanned) & self.exclude) | (self._clashed - builtins.set(scanned))

    def folder_of(self, name: str) -> Path | None:
        """The folder the skill called ``name`` was read from (held back or not)."""
        s = self._scan().get(name)
        return s.folder if s is not None else None

    @property
    def diagnostics(self) -> builtins.list[SkillDiagnostic]:
        scanned = self._scan()
        held = [SkillDiagnostic(n, self.origin, f"held back: {why}", self.pack)
                for n, why in sorted(self._why_held.items()) if n in scanned]
        return list(self._diags) + held

    def docs(self) -> builtins.list[SkillDoc]:
        """Every valid skill (before ``exclude``), for scanning and review."""
        return [s.doc for s in self._scan().values()]

    def list(self) -> builtins.list[SkillMeta]:
        return [s.doc.meta for n, s in sorted(self._scan().items()) if n not in self.exclude]

    def _get(self, name: str) -> _Loaded:
        s = self._scan().get(name)
        if s is None or name in self.exclude:
            raise SkillNotFound(f"there is no skill named {name!r}")
        return s

    def body(self, name: str) -> str:
        return self._get(name).doc.body

    def assets(self, name: str) -> builtins.list[SkillAsset]:
        return [a for a, _ in self._get(name).assets.values()]

    def read_asset(self, skill: str, asset: str) -> bytes:
        reason = validate_asset_name(asset)
        if reason:
            raise InvalidAssetName(reason)
        s = self._get(skill)
        hit = s.assets.get(asset)
        if hit is None:
            raise SkillAssetNotFound(f"skill {skill!r} has no asset named {asset!r}")
        path = hit[1]
        if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(s.folder)):
            raise InvalidAssetName(f"asset {asset!r} now points outside its skill; it was not read")
        got = read_bounded(path, MAX_ASSET_BYTES)
        if got.data is None:
            raise SkillAssetNotFound(got.reason)
        if got.over_cap:
            raise SkillAssetNotFound(f"asset {asset!r} is larger than {MAX_ASSET_BYTES // 1024} KiB")
        return got.data


class SkillCatalog:
    """The skills a session can use: several sources merged, the first name winning."""

    def __init__(self, sources: Sequence[SkillSource]) -> None:
        self.sources = list(sources)
        self._index: dict[str, tuple[SkillMeta, SkillSource]] | None = None
        self._shadowed: builtins.list[SkillDiagnostic] = []

    def _build(self) -> dict[str, tuple[SkillMeta, SkillSource]]:
        if self._index is None:
            index: dict[str, tuple[SkillMeta, SkillSource]] = {}
            claimed: dict[str, str] = {}  # name -> origin of the source that holds it back
            for src in self.sources:
                for meta in src.list():
                    if meta.name in index:
                        winner = index[meta.name][0]
                        self._shadowed.append(SkillDiagnostic(
                            meta.name, meta.origin,
                            f"hidden by the {winner.origin} skill of the same name", meta.pack,
                        ))
                        continue
                    if meta.name in claimed:
                        self._shadowed.append(SkillDiagnostic(
                            meta.name, meta.origin,
                            f"hidden: the {claimed[meta.name]} skill of the same name is held back, "
                            "and a held-back skill is never replaced by another copy", meta.pack,
                        ))
                        continue
                    index[meta.name] = (meta, src)
                for name in src.withheld():
                    if name not in index:
                        claimed.setdefault(name, getattr(src, "origin", "earlier"))
            self._index = index
        return self._index

    def list(self) -> builtins.list[SkillMeta]:
        return [m for _, (m, _) in sorted(self._build().items())]

    def meta(self, name: str) -> SkillMeta:
        hit = self._build().get(name)
        if hit is None:
            raise SkillNotFound(f"there is no skill named {name!r}")
        return hit[0]

    def _src(self, name: str) -> SkillSource:
        hit = self._build().get(name)
        if hit is None:
            raise SkillNotFound(f"there is no skill named {name!r}")
        return hit[1]

    def body(self, name: str) -> str:
        return self._src(name).body(name)

    def assets(self, name: str) -> builtins.list[SkillAsset]:
        return self._src(name).assets(name)

    def read_asset(self, skill: str, asset: str) -> bytes:
        reason = validate_asset_name(asset)
        if reason:
            raise InvalidAssetName(reason)
        return self._src(skill).read_asset(skill, asset)

    def diagnostics(self) -> builtins.list[SkillDiagnostic]:
        """Malformed skills from every source, then skills hidden by a higher-precedence one."""
        self._build()
        out: builtins.list[SkillDiagnostic] = []
        for src in self.sources:
            out.extend(src.diagnostics)
        return out + self._shadowed

    def __len__(self) -> int:
        return len(self._build())
