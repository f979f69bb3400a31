"""Composing a persona folder into one prompt (contract section 2).

The directory is the agent: seven well-known Markdown files, read in a fixed bootstrap order
(identity first, memory last), each becoming a ``## NAME`` section. Composition is a snapshot
taken once per session, so a running chat keeps the persona it started with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .boundedread import open_regular, read_bounded, read_into
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


def utf8_cut_length(data: bytes | bytearray | memoryview, cap: int, start: int = 0) -> int:
    """How many bytes of ``data[start:]`` fit in ``cap`` without splitting a UTF-8 character."""
    if len(data) - start <= cap:
        return len(data) - start
    end = start + cap
    # Back off over continuation bytes (10xxxxxx) to the start of the character at ``cap``.
    while end > start and (data[end] & 0xC0) == 0x80:
        end -= 1
    return end - start


def cut_utf8(data: bytes, cap: int) -> bytes:
    """Cut ``data`` to at most ``cap`` bytes without splitting a UTF-8 character."""
    return data[: utf8_cut_length(data, cap)]


def read_persona_file(
    path: str | os.PathLike[str], name: str | None = None, scan: bool = True
) -> PersonaFile:
    """Read one bootstrap file, bounded; anything that is not a readable regular file is absent.

    ``scan`` runs the injection scan on the clean body (skipped by the hot compose path, which
    only needs the text; drift review and ``persona compose`` ask for it).
    """
    name = name or os.path.basename(os.fspath(path))
    got = read_bounded(path, MAX_BOOTSTRAP_FILE_BYTES)
    if got.data is None:
        return PersonaFile(name, None, got.reason)
    data = got.data
    truncated = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    if truncated:
        data = cut_utf8(data, MAX_BOOTSTRAP_FILE_BYTES)
    text = data.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    if truncated:
        text += TRUNCATION_NOTICE
    # str.strip() copies the whole body; skip it when there is nothing to strip.
    body = text.strip() if text[:1].isspace() or text[-1:].isspace() else text
    return PersonaFile(name, body, "", truncated, scan_for_injection(body) if scan else None)


def compose_files(files: list[PersonaFile]) -> str:
    """Join present files as ``## NAME\\n\\nbody`` sections separated by a blank line."""
    parts: list[str] = []
    for f in files:
        if f.body is None:
            continue
        parts += ("\n\n## " if parts else "## ", f.name, "\n\n", f.body)
    return "".join(parts)


#: ASCII characters ``str.isspace()`` accepts; non-ASCII edges take the exact (str) path.
_ASCII_SPACE = frozenset(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ")
_NOTICE = TRUNCATION_NOTICE.encode()


def _clean_in_place(buf: bytearray, start: int, end: int) -> int | None:
    """Strip the section ``buf[start:end]`` in place; return its new end, or None.

    Equivalent to ``decode("utf-8", "replace")``, BOM removal, cut notice and ``str.strip()``
    as long as both edges are ASCII; for anything else (a BOM, a non-ASCII space, a bad byte
    at an edge) it returns None and the caller takes the exact str path.
    """
    truncated = end - start > MAX_BOOTSTRAP_FILE_BYTES
    if truncated:
        end = start + utf8_cut_length(buf, MAX_BOOTSTRAP_FILE_BYTES, start)
    i = start
    while i < end and buf[i] in _ASCII_SPACE:
        i += 1
    j = end
    if not truncated:  # a cut section ends with the notice, so its tail is never stripped
        while j > i and buf[j - 1] in _ASCII_SPACE:
            j -= 1
        if j > i and buf[j - 1] >= 0x80:
            return None
    if i < end and buf[i] >= 0x80:
        return None
    if i > start:  # rare: leading blank lines; shift the body down over them
        buf[start : start + (j - i)] = buf[i:j]
    j = start + (j - i)
    if truncated:
        buf[j : j + len(_NOTICE)] = _NOTICE
        j += len(_NOTICE)
    return j


def _exact_section(data: bytes) -> bytes:
    """The slow, obviously-correct section body for files the in-place path declines."""
    over = len(data) > MAX_BOOTSTRAP_FILE_BYTES
    text = cut_utf8(data, MAX_BOOTSTRAP_FILE_BYTES).decode("utf-8", "replace").removeprefix("\ufeff")
    return ((text + TRUNCATION_NOTICE) if over else text).strip().encode("utf-8", "surrogatepass")


def compose_persona(
    directory: str | os.PathLike[str],
    exclude: frozenset[str] = frozenset(),
    scan: bool = True,
) -> Composition:
    """Compose a folder, reporting skipped names and injection findings instead of raising.

    ``exclude`` leaves names out (strict mode keeps drifted files out of new sessions);
    ``scan=False`` skips the injection scan when only the text is needed.

    Why the buffer juggling: a persona may hold 7 x 2 MiB. Every file is read straight into
    one preallocated buffer, stripped in place and decoded once, so the bytes are copied
    about as often as a plain read would copy them.
    """
    root = Path(directory)
    opened: list[tuple[str, int, int]] = []
    skipped: dict[str, str] = {}
    try:
        for name in BOOTSTRAP_ORDER:
            path = root / name
            if name in exclude:
                skipped[name] = f"{name} was left out until you approve its changes"
                continue
            got = open_regular(path)
            if isinstance(got, str):
                if os.path.lexists(path):
                    skipped[name] = got
                continue
            opened.append((name, got[0], min(got[1], MAX_BOOTSTRAP_FILE_BYTES) + 1))
        header = 16 + max((len(n) for n in BOOTSTRAP_ORDER), default=0)
        buf = bytearray(sum(r + header + len(_NOTICE) for _, _, r in opened))
        view = memoryview(buf)
        pos = 0
        found: list[str] = []
        truncated: list[str] = []
        findings: dict[str, str] = {}
        for name, fd, reserve in opened:
            head = (b"\n\n## " if found else b"## ") + name.encode() + b"\n\n"
            body_at = pos + len(head)
            if body_at + reserve + len(_NOTICE) > len(buf):  # an earlier exact section grew
                view.release()
                buf.extend(bytes(body_at + reserve + len(_NOTICE) - len(buf)))
                view = memoryview(buf)
            n = read_into(fd, view[body_at : body_at + reserve])
            if isinstance(n, str):
                skipped[name] = f"{root / name} {n}"
                continue
            end: int | None = None
            if n == reserve and reserve <= MAX_BOOTSTRAP_FILE_BYTES:
                # The file grew after fstat; read it again the simple, bounded way.
                data = read_bounded(root / name, MAX_BOOTSTRAP_FILE_BYTES).data or b""
                over = len(data) > MAX_BOOTSTRAP_FILE_BYTES
            else:
                over = n > MAX_BOOTSTRAP_FILE_BYTES
                end = _clean_in_place(buf, body_at, body_at + n)
                data = bytes(view[body_at : body_at + n]) if end is None else b""
            if end is None:
                body = _exact_section(data)
                end = body_at + len(body)
                if end > len(buf):
                    view.release()
                    buf.extend(bytes(end - len(buf)))
                    view = memoryview(buf)
                view[body_at:end] = body
            view[pos:body_at] = head
            if scan:
                hit = scan_for_injection(bytes(view[body_at:end]))
                if hit is not None:
                    findings[name] = hit.describe()
            found.append(name)
            if over:
                truncated.append(name)
            pos = end
        view.release()
        del buf[pos:]
        soul = buf.decode("utf-8", "replace")
    finally:
        for _, fd, _ in opened:
            os.close(fd)
    return Composition(soul, tuple(found), skipped, findings, tuple(truncated))


def compose_soul(directory: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """Compose the bootstrap files of ``directory`` into ``(soul, found)``.

    Absent files are skipped silently; a name that is not a readable regular file counts as
    absent (see :func:`compose_persona` for the reasons). Never raises for a bad file.
    """
    c = compose_persona(directory, scan=False)
    return c.soul, list(c.found)
