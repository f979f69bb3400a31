"""Composing a persona folder into one prompt (contract section 2).

The directory is the agent: seven well-known Markdown files, read in a fixed bootstrap order
(identity first, memory last), each becoming a ``## NAME`` section. Composition is a snapshot
taken once per session, so a running chat keeps the persona it started with.

Files are taken as people save them: UTF-8 (with or without a BOM) or UTF-16 with a BOM (as
some Windows editors write); anything else that is not text (NUL bytes, invalid UTF-8) is left
out with the reason rather than composed as mojibake. A file whose real location is outside
the folder (it is a link, or sits in a linked folder) is left out until the user approved that
link (see :func:`compose_persona`): a shared or cloned persona folder can carry a link to
``~/.ssh/id_ed25519``, and trusting it on first use would send the key to the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .boundedread import read_bounded
from .injection import InjectionHit, scan_for_injection
from .redact import secret_shape_finding

BOOTSTRAP_ORDER: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)

#: A Hermes home keeps the user profile and the memory under ``memories/``. They fill the slot
#: their name implies when the folder has no top-level file of that name (which then wins).
HERMES_MEMORIES: dict[str, str] = {"USER.md": "memories/USER.md", "MEMORY.md": "memories/MEMORY.md"}

#: Every name a persona folder may compose from: the bootstrap files and the Hermes ones.
PERSONA_FILE_NAMES: frozenset[str] = frozenset(BOOTSTRAP_ORDER) | frozenset(HERMES_MEMORIES.values())


def bootstrap_files(root: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """``(slot, name)`` for each slot of the bootstrap order: the file that fills it, by its
    name in the folder. ``USER.md`` and ``MEMORY.md`` come from ``memories/`` (a Hermes home)
    when the folder has no top-level file of that name and ``memories/`` has one. Composing,
    drift watching and ``persona list`` all take their names from here, so a file that reaches
    the prompt is always a watched one."""
    out: list[tuple[str, str]] = []
    for slot in BOOTSTRAP_ORDER:
        alt = HERMES_MEMORIES.get(slot)
        if alt and not os.path.lexists(os.path.join(root, slot)) and os.path.lexists(os.path.join(root, alt)):
            out.append((slot, alt))
        else:
            out.append((slot, slot))
    return tuple(out)


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
    real_path: str = ""  # where the bytes really came from (links resolved)
    encoding: str = "utf-8"
    secret: str = ""  # what secret-shaped text the body holds ("what looks like a password (line 2)")


@dataclass(frozen=True)
class Composition:
    """The composed prompt plus what shaped it: which files, which were skipped and why.

    ``extras`` notes the OpenClaw workspace files that are recognised but not composed
    (``BOOTSTRAP.md``, ``BOOT.md``, a lowercase ``memory.md``), each with what to do.
    ``secrets`` names the files holding secret-shaped text (a password, a token): they are
    composed as they are, since that is what the user wrote; the finding says so.
    """

    soul: str
    found: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    findings: dict[str, str] = field(default_factory=dict)
    truncated: tuple[str, ...] = ()
    extras: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)


class NotText(ValueError):
    """A persona file's bytes are not text Hearthside can compose; the message says why."""


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


_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")


def section_body(data: bytes) -> tuple[str, bool]:
    """One file's section body and whether it was cut; :class:`NotText` when it is not text.

    UTF-16 with a BOM goes to :func:`_utf16_section`. For UTF-8 the contract reads: cut at the
    cap on a character boundary, decode, drop a leading BOM, append the notice when cut, strip.
    Done literally that copies a 2 MiB body three times. Here the BOM and the ASCII whitespace
    at both edges are skipped as bytes first (an ASCII byte is always a whole character, so the
    split cannot change what decodes), then only the middle is decoded, strictly: a NUL byte
    or invalid UTF-8 means the file is not text and it is left out. A non-ASCII space left at
    an edge is stripped as text. tests/test_compose.py checks this against the definition.
    """
    if data.startswith(_UTF32_BOMS):
        raise NotText("is UTF-32 text, which Hearthside does not read; save it as UTF-8")
    if data[:2] in _UTF16_BOMS:
        return _utf16_section(data, _UTF16_BOMS[data[:2]])
    cut = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    end = utf8_cut_length(data, MAX_BOOTSTRAP_FILE_BYTES)
    nul = data.find(b"\x00", 0, end)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise NotText(f"holds NUL bytes (line {line}), so it is not text; if it is UTF-16 "
                      "without a BOM, save it as UTF-8")
    i = len(_BOM) if data.startswith(_BOM) else 0
    while i < end and data[i] in _ASCII_SPACE:
        i += 1
    j = end
    if not cut:  # a cut body ends with the notice, so its tail is never stripped
        while j > i and data[j - 1] in _ASCII_SPACE:
            j -= 1
    try:
        text = data.decode("utf-8") if i == 0 and j == len(data) else str(memoryview(data)[i:j], "utf-8")
    except UnicodeDecodeError as exc:
        pos = exc.start + (0 if i == 0 and j == len(data) else i)
        line = data.count(b"\n", 0, pos) + 1
        raise NotText(f"is not UTF-8 text (byte 0x{data[pos]:02X} on line {line}); save it as "
                      "UTF-8 and it will be used") from None
    if cut:
        text += TRUNCATION_NOTICE
        return (text.lstrip() if text[:1].isspace() else text), True
    if text[:1].isspace() or text[-1:].isspace():
        text = text.strip()
    return text, False


def _utf16_section(data: bytes, codec: str) -> tuple[str, bool]:
    """A UTF-16 file (BOM first): decoded, cut at the cap in the file's own bytes, never
    inside a character (a code unit, or a surrogate pair), then as for UTF-8."""
    raw = memoryview(data)[2:]
    cut = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    if cut:
        n = MAX_BOOTSTRAP_FILE_BYTES - 2
        n -= n % 2
        high = raw[n - 2] if codec == "utf-16-be" else raw[n - 1]
        if 0xD8 <= high <= 0xDB:  # the last unit opens a surrogate pair: keep the pair whole
            n -= 2
        raw = raw[:n]
    try:
        text = str(raw, codec)
    except UnicodeDecodeError:
        raise NotText(f"starts like {codec.upper()} text but is damaged (a broken character); "
                      "save it again, as UTF-8 if you can") from None
    if "\x00" in text:
        raise NotText("holds NUL characters, so it is not text")
    if cut:
        return (text + TRUNCATION_NOTICE).strip(), True
    return text.strip(), False


def read_persona_file(
    path: str | os.PathLike[str], name: str | None = None, scan: bool = True
) -> PersonaFile:
    """Read one bootstrap file, bounded; anything that is not a readable regular text file is
    absent, with the reason (special files under /proc, /sys and /dev are never read).

    ``scan`` runs the injection scan and the look for secret-shaped text on the clean body (skipped
    by ``compose_soul``, which only needs the text; sessions, drift review and ``persona compose``
    ask for it).
    ``real_path`` says where the bytes really came from, so callers judge links on what was
    read, not on a second look that a swap could fool.
    """
    name = name or os.path.basename(os.fspath(path))
    got = read_bounded(path, MAX_BOOTSTRAP_FILE_BYTES)
    if got.data is None:
        return PersonaFile(name, None, got.reason)
    try:
        body, truncated = section_body(got.data)
    except NotText as exc:
        return PersonaFile(name, None, f"{os.fspath(path)} {exc}", real_path=got.real_path)
    encoding = _UTF16_BOMS.get(got.data[:2], "utf-8")
    return PersonaFile(name, body, "", truncated, scan_for_injection(body) if scan else None,
                       got.real_path, encoding, secret_shape_finding(body) if scan else "")


def secret_finding(name: str, what: str) -> str:
    """The review finding for a persona file holding secret-shaped text. The file reaches the
    model as it is (it is the user's text, and ``persona compose`` shows it unmasked), so this
    is said once, here, instead of being hidden by a mask."""
    return (f"{name} contains {what}; the model receives this file as it is, so take the secret "
            "out if it should not go there")


def outside_target(root_real: str, real_path: str) -> str:
    """``real_path`` when it lies outside the folder whose real path is ``root_real``; "" when
    it is inside (or unknown). Real paths are compared, so a folder reached through a linked
    parent, or a link between two files of the folder, is still inside."""
    if not real_path or real_path == root_real or real_path.startswith(root_real.rstrip(os.sep) + os.sep):
        return ""
    return real_path


def link_left_out_reason(name: str, path: str, target: str, approved: str) -> str:
    """Why a linked file is not composed, and how to allow it."""
    cmd = f"'hearthside soul approve {path}'"
    if approved:
        return (f"{name} now leads to {target}, not to {approved} as when you approved it; it is "
                f"left out until you approve the link again with {cmd}")
    return (f"{name} is a link to {target}, outside the persona folder; it is left out until you "
            f"approve the link with {cmd}")


def compose_persona(
    directory: str | os.PathLike[str],
    exclude: frozenset[str] = frozenset(),
    scan: bool = True,
    approved_links: Mapping[str, str] | None = None,
) -> Composition:
    """Compose a folder, reporting skipped names and injection findings instead of raising.

    Each file becomes the section of its slot (``## USER.md``); ``found`` names the files as
    they are called in the folder, so a Hermes home's ``memories/USER.md`` is listed as such
    (see :func:`bootstrap_files`). ``exclude`` leaves names out (strict mode keeps drifted
    files out of new sessions);
    ``scan=False`` skips the injection scan when only the text is needed. A file that really
    lives outside the folder is composed only when ``approved_links`` maps its name to that
    very target (the user approved the link; the drift service keeps the approvals); it is
    never trusted on first use. Files are read one at a time and each file's bytes are dropped
    once decoded, so at most one raw file is held beside the decoded sections
    (benchmarks/bench_foundation.py measures the peak).
    """
    root = Path(directory)
    root_real = os.path.realpath(root)
    links = approved_links or {}
    parts: list[str] = []
    found: list[str] = []
    skipped: dict[str, str] = {}
    findings: dict[str, str] = {}
    truncated: list[str] = []
    secrets: dict[str, str] = {}
    slots: list[str] = []
    for slot, name in bootstrap_files(root):
        path = root / name
        if name in exclude:
            skipped[name] = f"{name} was left out until you approve its changes"
            continue
        pf = read_persona_file(path, name, scan)
        if pf.body is None:
            if os.path.lexists(path):
                skipped[name] = pf.reason
            continue
        target = outside_target(root_real, pf.real_path)
        if target and links.get(name) != target:
            skipped[name] = link_left_out_reason(name, str(path), target, links.get(name, ""))
            continue
        parts += ("\n\n## " if parts else "## ", slot, "\n\n", pf.body)
        found.append(name)
        slots.append(slot)
        if pf.truncated:
            truncated.append(name)
        if pf.finding is not None:
            findings[name] = pf.finding.describe()
        if pf.secret:
            secrets[name] = pf.secret
    return Composition("".join(parts), tuple(found), skipped, findings, tuple(truncated),
                       openclaw_extras(root, tuple(slots)), secrets)


#: OpenClaw workspace files Hearthside recognises but does not compose.
OPENCLAW_EXTRAS: tuple[str, ...] = ("BOOTSTRAP.md", "BOOT.md", "memory.md")


def openclaw_extras(root: Path, found: tuple[str, ...]) -> dict[str, str]:
    """A note for each OpenClaw extra file present in ``root``: what it is for in OpenClaw,
    and what Hearthside does with it (leaves it out) and what the user can do instead.

    Names are matched exactly as listed on disk, so on a case-insensitive disk a
    ``memory.md`` that *is* ``MEMORY.md`` is recognised as such and gets no note.
    """
    try:
        present = {e.name for e in os.scandir(root) if e.name in OPENCLAW_EXTRAS}
    except OSError:
        return {}
    notes: dict[str, str] = {}
    if "BOOTSTRAP.md" in present:
        missing = [n for n in ("IDENTITY.md", "USER.md") if n not in found]
        if missing:
            notes["BOOTSTRAP.md"] = (
                f"this persona relies on BOOTSTRAP.md: {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} missing, and in OpenClaw the agent would "
                "write them on its first run, following BOOTSTRAP.md. Hearthside never writes "
                "persona files, so that first run cannot happen here and BOOTSTRAP.md is left out: "
                f"fill in {' and '.join(missing)} yourself (BOOTSTRAP.md says what belongs there), "
                "then delete BOOTSTRAP.md."
            )
        else:
            notes["BOOTSTRAP.md"] = (
                "BOOTSTRAP.md is OpenClaw's one-time first-run script; Hearthside leaves it out "
                "(it never runs it, and never writes persona files). Your IDENTITY.md and USER.md "
                "are there, so you can delete BOOTSTRAP.md."
            )
    if "BOOT.md" in present:
        notes["BOOT.md"] = (
            "BOOT.md is OpenClaw's start-up checklist, run when its gateway starts; Hearthside has "
            "no such start-up run and leaves it out. Put recurring checks in HEARTBEAT.md."
        )
    if "memory.md" in present and not _same_file(root / "memory.md", root / "MEMORY.md"):
        if "MEMORY.md" in found:
            notes["memory.md"] = ("memory.md (lower case) is left out: Hearthside composes MEMORY.md, "
                                  "and that is there too. Merge the two by hand if both matter.")
        else:
            notes["memory.md"] = ("memory.md (lower case) is OpenClaw's other spelling of MEMORY.md; "
                                  "Hearthside composes only MEMORY.md, so it is left out. Rename it "
                                  "to MEMORY.md to use it.")
    return notes


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def compose_soul(directory: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """Compose the bootstrap files of ``directory`` into ``(soul, found)``.

    Absent files are skipped silently; a name that is not a readable regular text file counts
    as absent, and so does a link leading outside the folder (no approvals are known here; see
    :func:`compose_persona` for the reasons). Never raises for a bad file.
    """
    c = compose_persona(directory, scan=False)
    return c.soul, list(c.found)
