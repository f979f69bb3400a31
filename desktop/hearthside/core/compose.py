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


def utf8_cut_length(data: bytes, cap: int) -> int:
    """How many bytes of ``data`` fit in ``cap`` without splitting a UTF-8 character.

    A character is at most four bytes, so backing off over at most three continuation bytes
    (10xxxxxx) reaches its first byte; a longer run is not UTF-8 anyway and is cut as is.
    """
    if len(data) <= cap:
        return len(data)
    end = cap
    while end > cap - 3 and end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return end


def cut_utf8(data: bytes, cap: int) -> bytes:
    """Cut ``data`` to at most ``cap`` bytes without splitting a UTF-8 character."""
    return data[: utf8_cut_length(data, cap)]


#: ASCII bytes ``str.strip()`` removes; trimming them before decoding is exact (see below).
_ASCII_SPACE = frozenset(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ")
_BOM = b"\xef\xbb\xbf"


def section_body(data: bytes) -> tuple[str, bool]:
    """One file's section body and whether it was cut: the contract's steps, copied once.

    The contract reads: cut at the cap on a character boundary, decode, drop a leading BOM,
    append the notice when cut, strip. Done literally that copies a 2 MiB body three times.
    Here the BOM and the ASCII whitespace at both edges are skipped as bytes first (an ASCII
    byte is always a whole character, even in broken UTF-8, so the split cannot change what
    decodes), then only the middle is decoded; a non-ASCII space left at an edge is stripped
    as text. tests/test_compose.py checks this against the literal definition.
    """
    cut = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    end = utf8_cut_length(data, MAX_BOOTSTRAP_FILE_BYTES)
    i = len(_BOM) if data.startswith(_BOM) else 0
    while i < end and data[i] in _ASCII_SPACE:
        i += 1
    j = end
    if not cut:  # a cut body ends with the notice, so its tail is never stripped
        while j > i and data[j - 1] in _ASCII_SPACE:
            j -= 1
    if i == 0 and j == len(data):
        text = data.decode("utf-8", "replace")
    else:
        text = str(memoryview(data)[i:j], "utf-8", "replace")
    if cut:
        text += TRUNCATION_NOTICE
        return (text.lstrip() if text[:1].isspace() else text), True
    if text[:1].isspace() or text[-1:].isspace():
        text = text.strip()
    return text, False


def read_persona_file(
    path: str | os.PathLike[str], name: str | None = None, scan: bool = True
) -> PersonaFile:
    """Read one bootstrap file, bounded; anything that is not a readable regular file is absent.

    ``scan`` runs the injection scan on the clean body (skipped by ``compose_soul``, which
    only needs the text; sessions, drift review and ``persona compose`` ask for it).
    """
    name = name or os.path.basename(os.fspath(path))
    got = read_bounded(path, MAX_BOOTSTRAP_FILE_BYTES)
    if got.data is None:
        return PersonaFile(name, None, got.reason)
    body, truncated = section_body(got.data)
    return PersonaFile(name, body, "", truncated, scan_for_injection(body) if scan else None)


def compose_persona(
    directory: str | os.PathLike[str],
    exclude: frozenset[str] = frozenset(),
    scan: bool = True,
) -> Composition:
    """Compose a folder, reporting skipped names and injection findings instead of raising.

    ``exclude`` leaves names out (strict mode keeps drifted files out of new sessions);
    ``scan=False`` skips the injection scan when only the text is needed. Files are read one
    at a time and each file's bytes are dropped once decoded, so at most one raw file is held
    beside the decoded sections (benchmarks/bench_foundation.py measures the peak).
    """
    root = Path(directory)
    parts: list[str] = []
    found: list[str] = []
    skipped: dict[str, str] = {}
    findings: dict[str, str] = {}
    truncated: list[str] = []
    for name in BOOTSTRAP_ORDER:
        path = root / name
        if name in exclude:
            skipped[name] = f"{name} was left out until you approve its changes"
            continue
        pf = read_persona_file(path, name, scan)
        if pf.body is None:
            if os.path.lexists(path):
                skipped[name] = pf.reason
            continue
        parts += ("\n\n## " if parts else "## ", name, "\n\n", pf.body)
        found.append(name)
        if pf.truncated:
            truncated.append(name)
        if pf.finding is not None:
            findings[name] = pf.finding.describe()
    return Composition("".join(parts), tuple(found), skipped, findings, tuple(truncated))


def compose_soul(directory: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """Compose the bootstrap files of ``directory`` into ``(soul, found)``.

    Absent files are skipped silently; a name that is not a readable regular file counts as
    absent (see :func:`compose_persona` for the reasons). Never raises for a bad file.
    """
    c = compose_persona(directory, scan=False)
    return c.soul, list(c.found)
