"""The one write guard: no tool may write the soul, a persona folder or Hearthside's own dirs.

Hearthside's promise is that it never writes what the user writes by hand (the soul file and
every persona folder) and that nothing a persona runs can change Hearthside's own config, data
or state (a tool that rewrote ``mcp.json`` could make the next chat launch any command). The
files pack's workspace may overlap any of them — an OpenClaw user's workspace *is* the persona
folder — so the rule cannot live in one tool: every mutating tool asks this guard, first-party
tools through their workspace, packs through ``hearthside.plugin.check_write``.

The decision is pure (:func:`decide`, over already-resolved paths); :class:`WriteGuard` adds the
one piece of I/O it needs, resolving links and ``..`` with ``os.path.realpath`` so a link or a
long ``notes/////../SOUL.md`` that leads into a protected place counts as that place. Reading
is never refused here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass


class WriteRefused(PermissionError):
    """A tool tried to write a protected place; ``str(exc)`` is the sentence for the model."""


@dataclass(frozen=True)
class ProtectedRoot:
    """A protected file or folder (absolute, normalised) and what it is, in words."""

    path: str
    what: str


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def decide(roots: Iterable[ProtectedRoot], candidates: Iterable[str], shown: str) -> str:
    """The refusal sentence for writing any of ``candidates`` (resolved absolute paths that
    name the same target), or ``""`` when the write is allowed.

    A target inside a protected root is refused; so is a target that *contains* one (moving or
    deleting a parent folder would take the persona folder with it).
    """
    cands = [c for c in candidates if c]
    for root in roots:
        for c in cands:
            if _within(c, root.path):
                return (f"Refused: {shown} is inside {root.what} ({root.path}), which Hearthside "
                        "never lets a tool change; reading it is still allowed.")
            if _within(root.path, c):
                return (f"Refused: {shown} contains {root.what} ({root.path}), which Hearthside "
                        "never lets a tool change; reading it is still allowed.")
    return ""


@dataclass(frozen=True)
class WriteGuard:
    """The protected roots of one session. An empty guard protects nothing (bare test
    environments); the app always builds a full one (``hearthside.app.writeguard``)."""

    roots: tuple[ProtectedRoot, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[tuple[str | os.PathLike[str], str]]) -> WriteGuard:
        """A guard over ``(path, what)`` pairs. Each path is protected as given *and* as its
        links resolve, so a protected folder reached through a link is still protected."""
        seen: set[str] = set()
        roots: list[ProtectedRoot] = []
        for path, what in entries:
            raw = _norm(os.fspath(path))
            for p in (raw, os.path.realpath(raw)):
                if p not in seen and p != os.sep:
                    seen.add(p)
                    roots.append(ProtectedRoot(p, what))
        return cls(tuple(roots))

    def refusal(self, target: str | os.PathLike[str]) -> str:
        """Why writing ``target`` is refused, or ``""``. Both the fully resolved target (where
        the bytes would land through a link) and the link itself (what a rename would replace)
        are checked."""
        if not self.roots:
            return ""
        raw = _norm(os.fspath(target))
        try:
            resolved = os.path.realpath(raw)
            link_itself = os.path.join(os.path.realpath(os.path.dirname(raw)), os.path.basename(raw))
        except OSError as exc:  # a link changed under us: refuse rather than guess
            return f"Refused: {raw} could not be resolved ({exc.strerror or exc}); try again."
        return decide(self.roots, (resolved, link_itself, raw), resolved)

    def check(self, target: str | os.PathLike[str]) -> None:
        """Raise :class:`WriteRefused` (with the reason) if ``target`` may not be written."""
        reason = self.refusal(target)
        if reason:
            raise WriteRefused(reason)

    def protects(self, target: str | os.PathLike[str]) -> bool:
        return bool(self.refusal(target))



@dataclass(frozen=True)
class ForkWriteGuard(WriteGuard):
    """The write guard that also knows Hearthside's forks.

    A fork (``<forks_dir>/<id>/tree``) lives in Hearthside's state folder, which the plain guard
    protects, but it stands for a workspace: a path inside a fork's tree is judged as the same
    name in that fork's workspace (``parent_of(id)``), so ``<fork>/SOUL.md`` is refused exactly
    when ``<workspace>/SOUL.md`` is (the workspace is a persona folder), and every other path as
    the plain guard judges it. The app builds every session's guard this way, so a specialist's
    tools inherit it with the session and the write guard applies inside a fork exactly as
    outside; a fork that no longer exists (``parent_of`` None) is judged as the state folder it
    is in, which is refused."""

    forks_dir: str = ""
    parent_of: Callable[[str], str | None] | None = None

    def refusal(self, target: str | os.PathLike[str]) -> str:
        if not self.forks_dir or self.parent_of is None:
            return super().refusal(target)
        raw = _norm(os.fspath(target))
        try:
            resolved = os.path.realpath(raw)
            link_itself = os.path.join(os.path.realpath(os.path.dirname(raw)), os.path.basename(raw))
            forks = os.path.realpath(_norm(self.forks_dir))
        except OSError as exc:
            return f"Refused: {raw} could not be resolved ({exc.strerror or exc}); try again."
        if not (_within(resolved, forks) and _within(link_itself, forks)):
            return super().refusal(target)  # outside every fork, or a link leading out of one
        parts = os.path.relpath(resolved, forks).split(os.sep)
        if len(parts) < 3 or parts[1] != "tree":
            return super().refusal(target)  # a fork's record, its folder or the tree itself
        parent = self.parent_of(parts[0])
        if not parent:
            return super().refusal(target)
        rel = os.path.join(*parts[2:])
        in_parent = os.path.join(_norm(parent), rel)
        reason = WriteGuard(self.roots).refusal(in_parent)
        return reason.replace(in_parent, f"{in_parent} (in the fork: {rel})", 1) if reason else ""
