"""Composing a persona folder into one prompt (contract section 2).

The directory is the agent: seven well-known Markdown files, read in a fixed bootstrap order
(identity first, memory last), each becoming a ``## NAME`` section. Composition is a snapshot
taken once per session, so a running chat keeps the persona it started with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .boundedread import read_bounded
from .injection import InjectionHit, scan_for_injection

BOOTSTRAP_ORDER: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)

#: Per-file cap, counted in bytes.
MAX_BOOTSTRAP_FILE_BYTES = 2 * 1024 * 1024

TRUNCATION_NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"


@dataclass(frozen=True)
class PersonaFile:
    """One bootstrap file as read: its clean section body, or why it counts as absent."""

    name: str
    body: str | None
    reason: str = ""
    truncated: bool = False
    finding: InjectionHit | None = None


@dataclass(frozen=True)
class Composition:
    """The composed prompt plus what shaped it: which files, which were skipped and why."""

    soul: str
    found: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    findings: dict[str, str] = field(default_factory=dict)
    truncated: tuple[str, ...] = ()


def cut_utf8(data: bytes, cap: int) -> bytes:
    """Cut ``data`` to at most ``cap`` bytes without splitting a UTF-8 character."""
    if len(data) <= cap:
        return data
    end = cap
    # Back off over continuation bytes (10xxxxxx) to the start of the character at ``cap``.
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end]


def read_persona_file(path: str | os.PathLike[str], name: str | None = None) -> PersonaFile:
    """Read one bootstrap file, bounded; anything that is not a readable regular file is absent."""
    name = name or os.path.basename(os.fspath(path))
    got = read_bounded(path, MAX_BOOTSTRAP_FILE_BYTES)
    if got.data is None:
        return PersonaFile(name, None, got.reason)
    data = got.data
    truncated = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    if truncated:
        data = cut_utf8(data, MAX_BOOTSTRAP_FILE_BYTES)
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if truncated:
        text += TRUNCATION_NOTICE
    body = text.strip()
    return PersonaFile(name, body, "", truncated, scan_for_injection(body))


def compose_files(files: list[PersonaFile]) -> str:
    """Join present files as ``## NAME\\n\\nbody`` sections separated by a blank line."""
    return "\n\n".join(f"## {f.name}\n\n{f.body}" for f in files if f.body is not None)


def compose_persona(
    directory: str | os.PathLike[str], exclude: frozenset[str] = frozenset()
) -> Composition:
    """Compose a folder, reporting skipped names and injection findings instead of raising.

    ``exclude`` leaves names out (strict mode keeps drifted files out of new sessions).
    """
    root = Path(directory)
    present: list[PersonaFile] = []
    skipped: dict[str, str] = {}
    findings: dict[str, str] = {}
    for name in BOOTSTRAP_ORDER:
        path = root / name
        if name in exclude:
            skipped[name] = f"{name} was left out until you approve its changes"
            continue
        if not os.path.lexists(path):
            continue
        pf = read_persona_file(path, name)
        if pf.body is None:
            skipped[name] = pf.reason
            continue
        if pf.finding is not None:
            findings[name] = pf.finding.describe()
        present.append(pf)
    return Composition(
        soul=compose_files(present),
        found=tuple(f.name for f in present),
        skipped=skipped,
        findings=findings,
        truncated=tuple(f.name for f in present if f.truncated),
    )


def compose_soul(directory: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """Compose the bootstrap files of ``directory`` into ``(soul, found)``.

    Absent files are skipped silently; a name that is not a readable regular file counts as
    absent (see :func:`compose_persona` for the reasons). Never raises for a bad file.
    """
    c = compose_persona(directory)
    return c.soul, list(c.found)
