"""The specialists a persona can hand work to: agent files from two tiers, as one frozen listing.

Tiers, the first winning a name clash (with a note):

* **persona** — ``<persona folder>/agents/*.md``. These are persona files: read only (this
  module opens nothing for writing), read the way drift reads them
  (:func:`~hearthside.core.compose.read_persona_file`: bounded, no FIFO, no device, nothing
  under /proc), watched for drift (``agents/x.md`` is a watched name), injection-scanned (a
  finding is a note, like a bootstrap file's), a link leading out of the folder is used only
  once that link is approved, and in strict mode a file is used only when its text is the very
  text the user approved.
* **user** — ``$XDG_CONFIG_HOME/hearthside/agents/*.md``: the same parser, caps and reading
  rules, but no approvals (they are the user's own, like the user skills folder).

A secret written into an inline MCP server's header (``Authorization: Bearer ...``) is stored
in the keyring on load and carried in memory only; since Hearthside never edits the user's
files, the notice asks the user to replace the value with ``${keyring}``, after which the
value is read from the keyring.

A listing is a frozen value built fresh by :meth:`AgentService.listing`; a session takes one
when it is built and keeps it (snapshot semantics).

A specialist's ``memory`` (the seed's read-only v1) names where its ``MEMORY.md`` is:
``user`` → ``$XDG_CONFIG_HOME/hearthside/agent-memory/<name>/MEMORY.md``, ``persona`` (or the
seed's ``project``) → ``<persona folder>/agents/<name>/MEMORY.md``, a persona file under the
same rules as the agent files. :meth:`AgentService.memories` reads the head of each when the
session is built; Hearthside never writes a memory file.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.agentdefs import AgentDef, AgentDefListing, AgentMCPServer, AgentOrigin, merge_tiers
from ..core.agentfiles import (
    KEYRING_PLACEHOLDER,
    MAX_AGENT_FILE_BYTES,
    MAX_AGENT_FILES,
    InlineSecret,
    parse_agent_file,
)
from ..core.compose import link_left_out_reason, outside_target, read_persona_file, secret_finding
from ..core.drift import fingerprint
from ..core.loopback import is_loopback_host
from ..core.mcpconfig import origin_of
from ..core.redact import register_secret
from ..core.secrets import SecretStore, SecretStoreError
from .drift_types import AGENT_MEMORY, AGENT_SUFFIX, AGENTS, is_agent_file_name

if TYPE_CHECKING:
    from .drift import DriftService
    from .paths import AppPaths
    from .personas import PersonaService

log = logging.getLogger(__name__)

#: Where strict mode's note points the user.
APPROVE_HINT = "approve it in the review window or with 'hearthside soul approve {path}'"

#: How much of a specialist's MEMORY.md goes into its system prompt (characters).
MEMORY_HEAD_CHARS = 4000
#: ``memory:`` values and the tier each means (``project`` is the seed's name for the persona's).
MEMORY_TIERS = {"user": "user", "persona": "persona", "project": "persona"}
#: The user tier's memory folders, under Hearthside's config folder.
USER_MEMORY_DIR = "agent-memory"


def memory_section(label: str, body: str) -> str:
    """The system-prompt part for one specialist's memory: the head of ``body``, said to be
    read-only, with a note when it was cut."""
    text = body.strip()
    head = text[:MEMORY_HEAD_CHARS]
    cut = (f"\n[… cut: the first {MEMORY_HEAD_CHARS:,} of {len(text):,} characters are shown]"
           if len(text) > MEMORY_HEAD_CHARS else "")
    return (f"Your memory from earlier tasks ({label}; read-only, you cannot change it):\n"
            f"{head}{cut}")


def agent_secret_ref(tier: str, agent: str, server: str, header: str) -> str:
    """The keyring reference of one inline server header of one specialist. ``tier`` is
    ``user`` or ``persona/<persona name>``, so two personas' files never share a secret."""
    return f"agent/{tier}/{agent}/mcp/{server}/header/{header.lower()}"


@dataclass(frozen=True)
class AgentFolder:
    """One tier's folder: where to read, the tier, and (persona tier) the persona's name."""

    root: Path
    origin: AgentOrigin
    persona: str = ""

    @property
    def secret_tier(self) -> str:
        return f"persona/{self.persona}" if self.origin is AgentOrigin.PERSONA else "user"


class ListingSource:
    """An :class:`~hearthside.core.agentdefs.AgentDefSource` over one frozen listing."""

    def __init__(self, listing: AgentDefListing) -> None:
        self._listing = listing

    def list_agent_defs(self) -> AgentDefListing:
        return self._listing


class AgentService:
    """Reads both tiers of agent files into a frozen :class:`AgentDefListing`."""

    def __init__(self, paths: AppPaths, personas: PersonaService, drift: Callable[[], DriftService],
                 secrets: Callable[[], SecretStore]) -> None:
        self.paths = paths
        self.personas = personas
        self._drift = drift
        self._secrets = secrets

    @property
    def user_dir(self) -> Path:
        return self.paths.user_agents_dir

    def listing(self, persona: str | None) -> AgentDefListing:
        """Every specialist a new session of ``persona`` gets (None: the user tier only), sorted
        by name, with one note per file left out or changed. Raises ``PersonaError`` for an
        unknown persona (the caller says so); any other trouble is a note."""
        tiers: list[AgentDefListing] = []
        if persona is not None:
            info = self.personas.get(persona)
            tiers.append(self._persona_tier(AgentFolder(Path(info.path) / AGENTS, AgentOrigin.PERSONA, persona)))
        tiers.append(self._read_folder(AgentFolder(self.user_dir, AgentOrigin.USER), {}, None))
        return merge_tiers(tiers)

    def source(self, persona: str | None) -> ListingSource:
        """A snapshot source for a session: :meth:`listing`, taken once now."""
        return ListingSource(self.listing(persona))

    @property
    def user_memory_dir(self) -> Path:
        return self.paths.config_dir / USER_MEMORY_DIR

    def memories(self, persona: str | None, listing: AgentDefListing) -> tuple[dict[str, str], tuple[str, ...]]:
        """The memory section (see :func:`memory_section`) of each specialist of ``listing``
        whose ``memory`` names a tier and whose MEMORY.md can be used, read once now (the
        session keeps it), plus one note per value or file that cannot be used. No file is a
        cold start, not a note. Only reads: Hearthside never writes a memory file."""
        out: dict[str, str] = {}
        notes: list[str] = []
        view: tuple[dict[str, str], dict[str, str] | None] | None = None
        for d in listing.defs:
            if not d.memory:
                continue
            tier = MEMORY_TIERS.get(d.memory.strip().lower())
            if tier is None:
                notes.append(f"specialist {d.name}: memory {d.memory!r} is not one of user, persona or project; "
                             "it starts without a memory")
                continue
            if tier == "user":
                root = self.user_memory_dir
                got = self._memory_file(root / d.name / AGENT_MEMORY, f"{USER_MEMORY_DIR}/{d.name}/{AGENT_MEMORY}",
                                        os.path.realpath(root), None, notes, user=True)
            elif persona is None:
                notes.append(f"specialist {d.name}: memory 'persona' needs a persona; it starts without a memory")
                continue
            else:
                pdir = Path(self.personas.get(persona).path)
                if view is None:
                    view = self._drift_view(pdir, notes)
                label = f"{AGENTS}/{d.name}/{AGENT_MEMORY}"
                got = self._memory_file(pdir / label, label, os.path.realpath(pdir), view, notes, user=False)
            if got:
                out[d.name] = got
        return out, tuple(notes)

    def _drift_view(self, persona_dir: Path, notes: list[str]) -> tuple[dict[str, str], dict[str, str] | None]:
        """(approved links, approved fingerprints in strict mode else None) for persona files."""
        try:
            drift = self._drift()
            links = dict(drift.held_back(persona_dir).links)
            return links, (drift.approved_fingerprints(persona_dir) if drift.strict_mode else None)
        except Exception as exc:  # noqa: BLE001 - then strict mode decides
            log.warning("drift check failed for the specialists' memory of %s: %s", persona_dir, exc)
            if self._strict_fallback():
                notes.append(f"the specialists' memory files are left out: their approvals cannot be checked ({exc})")
                return {}, {}
            return {}, None

    def _memory_file(self, path: Path, label: str, root_real: str,
                     view: tuple[dict[str, str], dict[str, str] | None] | None, notes: list[str], *,
                     user: bool) -> str:
        """One memory file's section, or "" (with a note when it exists but cannot be used)."""
        if not os.path.lexists(path):
            return ""
        pf = read_persona_file(path, label)
        if pf.body is None:
            notes.append(f"{label} is left out: {pf.reason}")
            return ""
        target = outside_target(root_real, pf.real_path)
        links, approved = view if view is not None else ({}, None)
        if target:
            if user:
                notes.append(f"{label} is left out: it leads to {target}, outside {root_real}; copy the file "
                             "into the folder instead")
                return ""
            if links.get(label) != target:
                notes.append(link_left_out_reason(label, str(path), target, links.get(label, "")))
                return ""
        if approved is not None and approved.get(label) != fingerprint(pf.body):
            notes.append(f"{label} left out: it changed since you approved it (strict mode); "
                         + APPROVE_HINT.format(path=path))
            return ""
        if pf.finding is not None:
            notes.append(f"{label} contains an {pf.finding.describe()}")
        if len(pf.body.strip()) > MEMORY_HEAD_CHARS:
            notes.append(f"{label} is longer than {MEMORY_HEAD_CHARS:,} characters; only its head is used")
        return memory_section(label, pf.body) if pf.body.strip() else ""

    # -- tiers ---------------------------------------------------------------------------------

    def _persona_tier(self, folder: AgentFolder) -> AgentDefListing:
        """The persona tier, under drift's rules: approved links only; in strict mode only the
        approved text of each file."""
        persona_dir = folder.root.parent
        if not folder.root.is_dir():
            return AgentDefListing(())
        links: dict[str, str] = {}
        approved: dict[str, str] | None = None
        try:
            drift = self._drift()
            held = drift.held_back(persona_dir)  # spends trust on first use before it is judged
            links = dict(held.links)
            if drift.strict_mode:
                approved = drift.approved_fingerprints(persona_dir)
        except Exception as exc:  # noqa: BLE001 - drift trouble must not hide every specialist
            log.warning("drift check failed for the specialists of %s: %s", persona_dir, exc)
            if self._strict_fallback():
                return AgentDefListing((), ((f"the persona's specialists are left out: their approvals "
                                            f"cannot be checked ({exc}) and strict mode is on"),))
        return self._read_folder(folder, links, approved)

    def _strict_fallback(self) -> bool:
        try:
            return bool(self.personas.settings.get("drift.strict", False))
        except Exception:  # noqa: BLE001
            return True

    def _read_folder(self, folder: AgentFolder, links: dict[str, str],
                     approved: dict[str, str] | None) -> AgentDefListing:
        names = _agent_names(folder.root)
        if names is None:
            return AgentDefListing(())
        defs: list[AgentDef] = []
        notes: list[str] = []
        by_name: dict[str, str] = {}
        if len(names) > MAX_AGENT_FILES:
            notes.append(f"the {folder.origin.value} specialists folder holds {len(names)} agent files; only "
                         f"the first {MAX_AGENT_FILES} (by name) are read")
            names = names[:MAX_AGENT_FILES]
        root_real = os.path.realpath(folder.root.parent if folder.origin is AgentOrigin.PERSONA else folder.root)
        for fname in names:
            label = f"{AGENTS}/{fname}"
            agent = self._read_file(folder, label, root_real, links, approved, notes)
            if agent is None:
                continue
            if agent.name in by_name:
                notes.append(f"{label} is left out: specialist {agent.name!r} is already defined by "
                             f"{by_name[agent.name]} in the same folder")
                continue
            by_name[agent.name] = label
            defs.append(agent)
        return AgentDefListing(tuple(sorted(defs, key=lambda d: d.name)), tuple(notes))

    def _read_file(self, folder: AgentFolder, label: str, root_real: str, links: dict[str, str],
                   approved: dict[str, str] | None, notes: list[str]) -> AgentDef | None:
        path = folder.root / label.split("/", 1)[1]
        pf = read_persona_file(path, label)
        if pf.body is None:
            notes.append(f"{label} is left out: {pf.reason}")
            return None
        target = outside_target(root_real, pf.real_path)
        if target:
            if folder.origin is AgentOrigin.USER:
                notes.append(f"{label} is left out: it leads to {target}, outside {folder.root}; copy the "
                             "file into the folder instead")
                return None
            if links.get(label) != target:
                notes.append(link_left_out_reason(label, str(path), target, links.get(label, "")))
                return None
        if approved is not None and approved.get(label) != fingerprint(pf.body):
            notes.append(f"{label} left out: it changed since you approved it (strict mode); "
                         + APPROVE_HINT.format(path=path))
            return None
        if len(pf.body.encode("utf-8")) > MAX_AGENT_FILE_BYTES:
            notes.append(f"{label} is left out: it is larger than {MAX_AGENT_FILE_BYTES // 1024} KiB")
            return None
        if pf.finding is not None:
            notes.append(f"{label} contains an {pf.finding.describe()}")
        parsed = parse_agent_file(pf.body, folder.origin, label)
        if pf.secret and not parsed.literal_secrets:
            notes.append(secret_finding(label, pf.secret))
        notes.extend(parsed.notes)
        if parsed.agent is None:
            return None
        return self._with_secrets(parsed.agent, folder, label, parsed.literal_secrets,
                                  parsed.keyring_headers, notes)

    # -- inline server secrets -----------------------------------------------------------------

    def _with_secrets(self, agent: AgentDef, folder: AgentFolder, label: str,
                      literal: tuple[InlineSecret, ...], keyring: tuple[InlineSecret, ...],
                      notes: list[str]) -> AgentDef:
        """The definition with each inline header secret resolved in memory: a literal one
        stored in the keyring (and the user told to take it out of the file), a ``${keyring}``
        one read from the keyring. A server whose secret cannot be had is left out."""
        if not literal and not keyring:
            return self._checked_transport(agent, label, notes)
        servers: list[AgentMCPServer] = []
        for server in agent.mcp_servers:
            headers: list[tuple[str, str]] = []
            keep = True
            for header, value in server.headers:
                item = InlineSecret(server.name, header)
                ref = agent_secret_ref(folder.secret_tier, agent.name, server.name, header)
                if item in literal:
                    register_secret(value)
                    notes.append(self._move_literal(ref, value, label, server.name, header))
                elif item in keyring:
                    got = self._keyring_value(ref, label, server.name, header, notes)
                    if got is None:
                        keep = False
                        break
                    value = got
                headers.append((header, value))
            if keep:
                servers.append(AgentMCPServer(server.name, server.url, tuple(headers)))
        return self._checked_transport(replace(agent, mcp_servers=tuple(servers)), label, notes)

    def _move_literal(self, ref: str, value: str, label: str, server: str, header: str) -> str:
        how = (f"Hearthside never edits your files, so please replace the value in {label} with "
               f"{KEYRING_PLACEHOLDER} (for example '{header}: \"{KEYRING_PLACEHOLDER}\"'); Hearthside then "
               "reads it from the keyring")
        try:
            store = self._secrets()
            if store.get(ref) != value:
                store.set(ref, value)
        except SecretStoreError as exc:
            log.warning("%s: the %s header of MCP server %r is written in the file and the keyring could "
                        "not keep it: %s", label, header, server, exc)
            return (f"{label}: the {header} header of MCP server {server!r} is written in the file and the "
                    f"keyring could not store it ({exc}); it is used from the file for now")
        log.warning("%s: the %s header of MCP server %r is written in the file; its value is now kept in "
                    "the keyring (the value is not logged)", label, header, server)
        return (f"{label}: the {header} header of MCP server {server!r} was written in the file; its value "
                f"is now kept in your keyring. {how}")

    def _keyring_value(self, ref: str, label: str, server: str, header: str, notes: list[str]) -> str | None:
        try:
            value = self._secrets().get(ref)
        except SecretStoreError as exc:
            notes.append(f"{label}: MCP server {server!r} is left out: its {header} header is kept in the "
                         f"keyring, which cannot be read ({exc})")
            return None
        if value is None:
            notes.append(f"{label}: MCP server {server!r} is left out: its {header} header says "
                         f"{KEYRING_PLACEHOLDER} but the keyring holds no value for it; write the value "
                         "in the file once and Hearthside moves it into the keyring")
            return None
        return value

    @staticmethod
    def _checked_transport(agent: AgentDef, label: str, notes: list[str]) -> AgentDef:
        """A server carrying headers must be https, or http on loopback (as for every server)."""
        kept: list[AgentMCPServer] = []
        for s in agent.mcp_servers:
            if s.headers and not s.is_reference:
                scheme, host, _ = origin_of(s.url)
                if scheme != "https" and not is_loopback_host(host):
                    notes.append(f"{label}: MCP server {s.name!r} is left out: it sends headers over plain "
                                 f"http to {host}, where anyone on the network could read them; use https")
                    continue
            kept.append(s)
        if len(kept) == len(agent.mcp_servers):
            return agent
        return replace(agent, mcp_servers=tuple(kept))


def _agent_names(root: Path) -> list[str] | None:
    """File names of ``root``'s agent files (``*.md``, not hidden, not folders), sorted; None when
    there is no such folder. Links are listed: whoever reads them judges where they lead."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return None
    names = []
    for e in entries:
        try:
            is_dir = e.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not is_dir and e.name.endswith(AGENT_SUFFIX) and is_agent_file_name(f"{AGENTS}/{e.name}"):
            names.append(e.name)
    return sorted(names)
