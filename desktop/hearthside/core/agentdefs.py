"""Agent definitions ("specialists"): the values and the read-only source seam (seed 004).

A specialist is a Markdown file with YAML front matter — the format Claude Code uses for its
sub-agents — that a persona can hand a task to through the ``Subagent`` tool. These types are
pure data: no path, folder or URL of where a definition came from appears in them (the
source's private business); :class:`AgentOrigin` is a tier label for display only. Trust is
decided where a source is built (a persona tier is composed under the same drift and strict
rules as the bootstrap files), never from a field a file sets about itself.

Limits a file asks for are capped here, once, so no caller can forget: turns, tool calls and
the depth of specialists starting specialists.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: Hard caps on what a definition may ask for (a larger number is lowered to these, with a note).
MAX_TURNS_CAP = 100
MAX_TOOL_CALLS_CAP = 500
#: How deep specialists may start specialists: 1 means a specialist cannot start one.
DEFAULT_DEPTH = 1
MAX_DEPTH_CAP = 3
#: Seconds a specialist's whole run may take (default, and the cap a definition cannot exceed).
DEFAULT_TIME_LIMIT = 300.0
MAX_TIME_LIMIT = 1800.0


class AgentOrigin(str, enum.Enum):
    """The tier a definition was admitted through (a label, never a location).

    ``persona`` is the seed's project tier (a persona's ``agents/`` folder: persona files,
    drift-watched and strict-gated); ``user`` is the user-wide tier (config dir ``agents/``)."""

    PERSONA = "persona"
    USER = "user"


@dataclass(frozen=True)
class AgentMCPServer:
    """A server scoped to one specialist: a reference to a configured server (``url`` empty) or
    an inline streamable-HTTP server. ``headers`` are secret-shaped: never shown, never logged."""

    name: str
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def is_reference(self) -> bool:
        return not self.url


@dataclass(frozen=True)
class AgentDef:
    """One specialist. Only ``name`` and ``description`` are required; ``tools`` None means the
    caller's default set; ``model`` empty or "inherit" means the parent's model."""

    name: str
    description: str
    body: str = ""
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str = ""
    provider: str = ""
    permission_mode: str = ""
    max_turns: int = 0
    max_tool_calls: int = 0
    max_depth: int = 0
    color: str = ""
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[AgentMCPServer, ...] = ()
    memory: str = ""
    origin: AgentOrigin = AgentOrigin.USER

    @property
    def writes(self) -> bool:
        """Whether the definition allows writing (``permissionMode: acceptEdits`` or a mutating
        tool listed) — such a specialist works in a fork of the workspace, never the workspace."""
        return self.permission_mode in ("acceptEdits", "bypassPermissions")


def capped(value: int, cap: int) -> int:
    """``value`` lowered to ``cap``; zero or less means "the caller's default" and stays 0."""
    return 0 if value <= 0 else min(value, cap)


@dataclass(frozen=True)
class AgentDefListing:
    """What a source admitted, and why anything else was left out (one sentence per file)."""

    defs: tuple[AgentDef, ...]
    notes: tuple[str, ...] = ()

    def get(self, name: str) -> AgentDef | None:
        return next((d for d in self.defs if d.name == name), None)


class AgentDefSource(Protocol):
    """The read-only seam definitions cross into a session: sorted by name, unique, and stable
    for the life of the source (a snapshot; a session resolves once when it is built)."""

    def list_agent_defs(self) -> AgentDefListing: ...


def merge_tiers(tiers: Sequence[AgentDefListing]) -> AgentDefListing:
    """Combine listings, the first tier winning a name clash (persona before user), with a note."""
    seen: dict[str, AgentDef] = {}
    notes: list[str] = []
    for listing in tiers:
        notes.extend(listing.notes)
        for d in listing.defs:
            if d.name in seen:
                notes.append(f"specialist {d.name!r} ({d.origin.value} tier) is left out: "
                             f"the {seen[d.name].origin.value} tier has one of the same name")
                continue
            seen[d.name] = d
    return AgentDefListing(tuple(sorted(seen.values(), key=lambda d: d.name)), tuple(notes))
