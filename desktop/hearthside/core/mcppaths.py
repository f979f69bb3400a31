"""The write guard for MCP tool calls: paths in a call's arguments, found and resolved.

An MCP server runs with the user's rights, so a filesystem server given the home folder can
write the soul file, a persona folder or ``settings.toml`` — and did, under accept-edits. The
server's own allow-list is not Hearthside's promise, so before a mutating MCP tool runs every
string argument that looks like a local path is resolved the way the write guard resolves a
first-party tool's target (``~``, ``..`` and links) and checked against the same protected
places (:class:`hearthside.core.writeguard.WriteGuard`). What looks like a path:

* an absolute path, a ``~`` path or a ``file://`` URL;
* any other one-line string, taken relative to each root the server was given: the folders
  among a stdio server's arguments (``server-filesystem /home/ada``), its working folder, and
  (for relative paths the server resolves itself) Hearthside's own working folder.

Guessing wide is the safe side: a relative string that is not a path at all ("hello") only
matters if, under some root, it names a protected place. Nested lists and objects are
searched too (``read_multiple_files``' ``paths``, an ``edits`` list).

Only servers on this computer are checked (stdio, or HTTP on a loopback address): a remote
server's ``path`` (a repository file, an API route such as ``/``) names nothing here.

Tools the server marks ``readOnlyHint`` are not checked: reading stays allowed, and the hint
is what already decides whether a call needs approval. A server that lies about the hint is a
hostile server; keeping it inside its limits is the process sandbox's job.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .writeguard import WriteGuard

#: Strings longer than this, or with a line break or NUL, are content, not paths.
MAX_PATH_CHARS = 4096
#: How deep nested arguments are searched (an argument nested deeper is not a path anyone typed).
MAX_DEPTH = 8


@dataclass(frozen=True)
class PathArgument:
    """A path found in the arguments: where (``path``, ``edits[0].file``), as written, and the
    absolute candidates it may name (links and ``..`` resolved)."""

    where: str
    given: str
    resolved: tuple[str, ...]

    @property
    def readings(self) -> str:
        """What a prompt shows: the resolved path, or each reading of a relative one."""
        return " or ".join(self.resolved)

    @property
    def worth_showing(self) -> bool:
        """True for what is surely meant as a path (absolute, ``~``, ``file://``, with a
        folder separator, or existing): a one-word text argument is checked, not shown."""
        g = self.given
        return (g.startswith(("/", "~")) or g.lower().startswith("file://") or os.sep in g
                or any(os.path.lexists(r) for r in self.resolved))


def _strings(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]", depth + 1)


def _real(path: str) -> str:
    try:
        return os.path.realpath(os.path.normpath(path))
    except (OSError, ValueError):
        return os.path.normpath(path)


def server_roots(args: Iterable[Any], cwd: str | None, ours: bool = True) -> tuple[str, ...]:
    """The folders a server was given: existing directories among its (plain) arguments —
    ``--root=/x`` style too — its working folder, and (unless ``ours`` is False: the sandbox's
    writable roots are only what the user gave) ours, what a relative path means to a server
    that did not change directory."""
    roots: list[str] = []
    for a in args:
        if not isinstance(a, str):
            continue
        value = a.partition("=")[2] if a.startswith("-") and "=" in a else a
        if not value or value.startswith("-"):
            continue
        expanded = os.path.expanduser(value)
        if os.path.isabs(expanded) and os.path.isdir(expanded):
            roots.append(os.path.abspath(expanded))
    if cwd:
        roots.append(os.path.abspath(os.path.expanduser(cwd)))
    if ours:
        roots.append(os.getcwd())
    return tuple(dict.fromkeys(roots))


def as_path(text: str, roots: Iterable[str]) -> tuple[str, ...]:
    """The absolute paths ``text`` may name (empty when it cannot be a local path)."""
    if not text or len(text) > MAX_PATH_CHARS or any(c in text for c in "\n\r\x00"):
        return ()
    if text.lower().startswith("file://"):
        parsed = urllib.parse.urlsplit(text)
        if parsed.netloc not in ("", "localhost"):
            return ()
        return (_real(urllib.parse.unquote(parsed.path)),)
    if "://" in text:  # another scheme (https://...): not a local path
        return ()
    expanded = os.path.expanduser(text)
    if os.path.isabs(expanded):
        return (_real(expanded),)
    return tuple(dict.fromkeys(_real(os.path.join(root, expanded)) for root in roots))


def path_arguments(args: Mapping[str, Any], roots: Iterable[str]) -> list[PathArgument]:
    """Every argument that may be a local path, with what it resolves to."""
    roots = tuple(roots)
    out: list[PathArgument] = []
    for where, text in _strings(args, ""):
        resolved = as_path(text, roots)
        if resolved:
            out.append(PathArgument(where, text, resolved))
    return out


def refusal(guard: WriteGuard, found: Iterable[PathArgument]) -> str:
    """The write guard's sentence for the first path argument that names a protected place
    (under any of its readings), or ``""`` when the call may run."""
    for arg in found:
        for candidate in arg.resolved:
            why = guard.refusal(candidate)
            if why:
                return why
    return ""
