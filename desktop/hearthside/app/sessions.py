"""Builds a persona's session: composition, soul, memory index, skills and the tool catalog.

The catalog is memory tools + pack tools + the host's Skill/ToolSearch/WebSearch tools + the
tools of connected MCP servers, and the ``Subagent`` tool when the persona has specialists.
Everything is read once here and frozen in the snapshot, so a running chat keeps the persona it
started with. Parts that fail (a pack, the skills, MCP, the specialists) are left out with a note
rather than stopping the session.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.agent import (
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TURNS,
    Agent,
    AgentLimits,
    AllowAll,
    Approver,
    ChatModel,
    DenyAll,
    needs_approval,
)
from ..core.agentdefs import AgentDef, AgentDefListing
from ..core.environment import Environment
from ..core.memory.model import CorruptMemoryError, MemoryEntry, MemoryStoreError
from ..core.memory.tools import memory_tools
from ..core.session import SessionSnapshot, SkillLine, assemble_session
from ..core.skills import SkillCatalog
from ..core.soul import SoulResult, SoulStore
from ..core.subagent import ChildModel, ForkHook, ParentLink, SubagentTool
from ..core.tools import Catalog, CatalogError, PermissionMode, ToolEnv
from .clock import current_time_line
from .drift import HeldBack
from .personas import PersonaInfo
from .specialist_mcp import SpecialistServerConnector
from .writeguard import build_write_guard

if TYPE_CHECKING:
    from .agents import AgentService
    from .drift import DriftService
    from .forks import ForkService
    from .mcp import McpService
    from .memory import MemoryService
    from .model import ModelService
    from .paths import AppPaths
    from .personas import PersonaService
    from .plugins import PluginService
    from .settings import SettingsStore

log = logging.getLogger(__name__)


@dataclass
class PreparedSession:
    """A snapshot plus what running it needs (the persona's folder and the tool environment)."""

    info: PersonaInfo
    snapshot: SessionSnapshot
    env: ToolEnv
    session_id: str
    notes: list[str] = field(default_factory=list)
    #: The specialists this session may hand work to: one frozen listing, taken when it was built.
    agents: AgentDefListing = field(default_factory=lambda: AgentDefListing(()))


class SessionDeps(Protocol):
    """The collaborators a session is built from (the app context provides them, each built on
    first use, so a session that needs no MCP never starts it)."""

    @property
    def paths(self) -> AppPaths: ...

    @property
    def settings(self) -> SettingsStore: ...

    @property
    def personas(self) -> PersonaService: ...

    @property
    def drift(self) -> DriftService: ...

    @property
    def memory(self) -> MemoryService: ...

    @property
    def plugins(self) -> PluginService: ...

    @property
    def mcp(self) -> McpService: ...

    @property
    def agents(self) -> AgentService: ...

    @property
    def model(self) -> ModelService: ...

    @property
    def forks(self) -> ForkService: ...

    def soul_path(self, override: str | None = None) -> str: ...


#: Model aliases of Claude Code's agent files, which mean nothing to an OpenAI-compatible endpoint.
MODEL_ALIASES = frozenset({"sonnet", "opus", "haiku"})


class SessionService:
    """Prepares chat and heartbeat sessions for personas."""

    def __init__(self, app: SessionDeps) -> None:
        self.app = app

    def prepare(self, persona: str, mode: PermissionMode = PermissionMode.DEFAULT, *,
                unattended: bool = False, allow_mutating: bool = False) -> PreparedSession:
        """Build turn 0 for ``persona``. Unattended sessions keep only read-only and
        approval-exempt (memory) tools unless ``allow_mutating``."""
        app = self.app
        info = app.personas.get(persona)
        notes: list[str] = []
        held = self._held_back(info.path, notes)
        comp = app.personas.compose(info.path, held.files, held.links)
        for name, reason in comp.skipped.items():
            if name not in held.files:  # strict mode already said why, in its own note
                notes.append(f"{name} skipped: {reason}")
        notes.extend(comp.extras.values())  # OpenClaw files that are recognised, not composed
        for name, finding in comp.findings.items():
            notes.append(f"{name} contains an {finding}")
        soul = SoulStore(app.soul_path()).load_with_meta()
        if held.soul:
            soul = SoulResult("", "", 0, "held back in strict mode", soul.path)
        elif soul.reason and not _optional_soul_absent(app, soul.path):
            notes.append(f"soul not used: {soul.reason}")
        sid = uuid.uuid4().hex[:12]
        store = app.memory.store(persona)
        index: list[MemoryEntry] = []
        try:
            index = store.index()
        except (CorruptMemoryError, MemoryStoreError) as exc:
            notes.append(str(exc))
        catalog = Catalog()
        for t in memory_tools(store, sid):
            catalog.register(t, "builtin")
        skills, skill_body = self._add_pack_parts(catalog, info.path, mode, notes, held.skill_reasons())
        agents = self._agents(persona, notes)
        self._add_specialists(catalog, agents, persona, mode, notes, skill_body, unattended=unattended,
                              allow_mutating=allow_mutating)
        workspace = _workspace(app)
        env = ToolEnv(persona=persona, workspace=workspace, services={"hydrated_tools": set(), "memory": store},
                      write_guard=build_write_guard(app.paths, app.personas, app.soul_path()),
                      environment=self._environment(persona, workspace, notes))
        snap = assemble_session(persona, comp.soul, soul.body, index, skills, catalog, mode,
                                found=comp.found, notes=notes)
        if unattended:
            kept = tuple(t for t in snap.tools if allow_mutating or not needs_approval(t))
            snap = SessionSnapshot(snap.persona, snap.system_prompt, kept, snap.mode, snap.found,
                                   snap.memory_keys, snap.skills, snap.notes)
        for n in notes:
            log.info("session %s/%s: %s", persona, sid, n)
        return PreparedSession(info, snap, env, sid, notes, agents)

    def agent(self, prepared: PreparedSession, model: ChatModel, approver: Approver | None = None, *,
              unattended: bool = False, allow_mutating: bool = False, limits: AgentLimits | None = None,
              on_tool: Any = None) -> Agent:
        """An agent over the prepared snapshot. Unattended runs deny anything needing approval
        unless the persona was granted more."""
        preface = None
        if unattended:
            approver = AllowAll() if allow_mutating else DenyAll()
        else:  # a check-in writes its own time line (with the last check-in); a chat gets this one
            preface = self._time_preface(prepared.info.name)
        limits = limits or AgentLimits(
            _positive_int(self.app.settings, "agent.max_turns", DEFAULT_MAX_TURNS),
            _positive_int(self.app.settings, "agent.max_tool_calls", DEFAULT_MAX_TOOL_CALLS),
        )
        approver = approver or DenyAll()
        # The Subagent tool is lent this agent's model, approver, mode and limits: a specialist
        # never gets more than the session that calls it.
        link = ParentLink(model, approver, prepared.snapshot.mode, limits, on_tool, _pick_model)
        tools = [t.bound(link) if isinstance(t, SubagentTool) else t for t in prepared.snapshot.tools]
        return Agent(model, tools, prepared.snapshot.system_prompt, env=prepared.env,
                     approver=approver, mode=prepared.snapshot.mode, limits=limits,
                     on_tool=on_tool, preface=preface)

    def _add_specialists(self, catalog: Catalog, listing: AgentDefListing, persona: str, mode: PermissionMode,
                         notes: list[str], skill_body: Callable[[str], str] | None, *, unattended: bool,
                         allow_mutating: bool) -> None:
        """Register ``Subagent`` when the persona has specialists. Its default tool set is the
        session's own; plan mode and check-ins (unless granted mutating tools) give specialists
        read-only tools only and offer none that writes."""
        if not listing.defs:
            return
        read_only = mode is PermissionMode.PLAN or (unattended and not allow_mutating)
        seconds = self.app.settings.get("agent.specialist_time_limit")
        memory, memory_notes = self.app.agents.memories(persona, listing)
        notes.extend(memory_notes)
        tool = SubagentTool(listing, catalog.tools(), persona=persona, skill_body=skill_body,
                            read_only_inside=read_only, forks=self.fork_hook(persona),
                            seconds=seconds if isinstance(seconds, (int, float)) else None,
                            servers=SpecialistServerConnector(), memory=memory)
        _register(catalog, tool, "builtin", notes)

    def fork_hook(self, persona: str) -> ForkHook | None:
        """Where a writing specialist gets its copy of the workspace: the app's fork service
        (``app.forks.hook(persona)``). When the fork service cannot be built a writing
        specialist is refused with a sentence, and nothing it would write can reach the workspace."""
        try:
            return self.app.forks.hook(persona)
        except Exception as exc:  # noqa: BLE001 - no forks: writers are refused
            log.warning("forks unavailable for %s: %s", persona, exc)
            return None

    def _time_preface(self, persona: str) -> Callable[[], str]:
        """``Current time: ...`` in the persona's check-in zone (else the system's), worked out
        at each message so a conversation left open over lunch still knows the time."""
        def line() -> str:
            personas = self.app.settings.get("personas", {})
            raw = personas.get(persona) if isinstance(personas, dict) else None
            zone = raw.get("timezone", "") if isinstance(raw, dict) else ""
            return current_time_line(zone if isinstance(zone, str) else "")
        return line

    def model(self) -> ChatModel:
        """The configured model client (see :class:`hearthside.app.model.ModelService`).

        Raises :class:`hearthside.app.model.ModelNotConfigured` or ``InsecureModelEndpoint``
        with a sentence."""
        return self.app.model.client()

    def skill_catalog(self, persona: str | None) -> SkillCatalog:
        """The skills a new session of ``persona`` gets (no persona: the user folder and packs),
        built exactly as :meth:`prepare` builds them, held-back skills included as such, so
        ``plugins skills --persona`` lists what the session will really get."""
        if persona is None:
            return self.app.plugins.skill_catalog(None)
        folder = self.app.personas.get(persona).path
        held = self._held_back(folder, [])
        return self.app.plugins.skill_catalog(folder, held.skill_reasons())

    # -- parts from other services (each may be missing or broken) --------------------------
    def _agents(self, persona: str, notes: list[str]) -> AgentDefListing:
        """The session's specialists, taken once now (snapshot); why any is left out joins the
        session's notes."""
        try:
            listing = self.app.agents.listing(persona)
        except Exception as exc:  # noqa: BLE001 - a broken agents folder must not stop a chat
            notes.append(f"specialists unavailable: {exc}")
            return AgentDefListing(())
        notes.extend(listing.notes)
        return listing

    def _environment(self, persona: str, workspace: str | None, notes: list[str]) -> Environment | None:
        """The session's workspace and the shell bound to it (:mod:`hearthside.app.shell`)."""
        try:
            from .shell import session_environment  # POSIX-only parts (resource, process groups)

            return session_environment(self.app, persona, workspace)
        except Exception as exc:  # noqa: BLE001 - no shell is a note, never a failed session
            notes.append(f"no shell in this session: {exc}")
            return None

    def _held_back(self, folder: Path, notes: list[str]) -> HeldBack:
        """What this session leaves out: in strict mode drifted or new files, skills and the soul;
        always, persona skills behind an unapproved link. Approved links come along too."""
        try:
            held: HeldBack = self.app.drift.held_back(folder)
        except Exception as exc:  # noqa: BLE001 - drift trouble must not stop a chat
            log.warning("drift check failed for %s: %s", folder, exc)
            return HeldBack()
        notes.extend(held.notes())
        return held

    def _add_pack_parts(self, catalog: Catalog, folder: Path, mode: PermissionMode, notes: list[str],
                        held_skills: Mapping[str, str] | None = None,
                        ) -> tuple[list[SkillLine], Callable[[str], str] | None]:
        """Pack, skill, search and MCP tools; returns the skills list and how to read a skill's
        body (for specialists that preload skills)."""
        from ..core.hosttools import make_skill_tool, make_tool_search, make_web_search

        app = self.app
        skills: list[SkillLine] = []
        body: Callable[[str], str] | None = None
        try:
            for tool, pack in app.plugins.tool_entries():
                _register(catalog, tool, pack, notes)
            cat = app.plugins.skill_catalog(folder, held_skills)
            metas = cat.list()
            skills = [SkillLine(m.name, m.description) for m in metas]
            body = cat.body
            if metas:
                _register(catalog, make_skill_tool(cat), "builtin", notes)
            provider = app.plugins.search_provider()
            if provider is not None:
                _register(catalog, make_web_search(provider), "builtin", notes)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"plugin packs unavailable: {exc}")
        try:
            for tool in app.mcp.tools():
                origin = "mcp:" + tool.spec.name.split("__")[1] if "__" in tool.spec.name else "mcp"
                _register(catalog, tool, origin, notes)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"MCP tools unavailable: {exc}")
        _register(catalog, make_tool_search(catalog, mode), "builtin", notes)
        return skills, body


def _pick_model(spec: AgentDef, parent: ChatModel) -> ChildModel:
    """The model a specialist talks to: the parent's for none, ``inherit`` or Claude Code's aliases
    (with a note), else the named model on the parent's own endpoint and key (its own client)."""
    from ..adapters.model_client import ModelConfig, OpenAICompatibleModel

    want = spec.model.strip()
    config = getattr(parent, "config", None)
    current = config.model if isinstance(config, ModelConfig) else None
    if not want or want == "inherit" or want == current:
        return ChildModel(parent)
    if want in MODEL_ALIASES or not isinstance(config, ModelConfig):
        return ChildModel(parent, f"the model {want!r} its definition names is not available here; "
                                  "the persona's model answered")
    own = OpenAICompatibleModel(dataclasses.replace(config, model=want))
    return ChildModel(own, close=own.aclose)


def _register(catalog: Catalog, tool: Any, source: str, notes: list[str]) -> None:
    try:
        catalog.register(tool, source)
    except CatalogError as exc:
        notes.append(str(exc))


def _positive_int(settings: Any, key: str, default: int) -> int:
    """A cap from settings; anything that is not a whole number above 0 means the default, so a
    typo in settings.toml never stops a chat or lets a persona run without limits. The typo is
    named in a warning (shown on the terminal), so the user learns why their limit is ignored."""
    value = settings.get(key)
    if value is None:
        return default
    n = 0
    if not isinstance(value, bool) and isinstance(value, (int, str)):
        try:
            n = int(value)
        except ValueError:
            n = 0
    if n > 0:
        return n
    log.warning("%s in settings.toml is %r, not a whole number above 0; using %d", key, value, default)
    return default


def _optional_soul_absent(app: SessionDeps, path: str) -> bool:
    """The soul file is optional: its default path being absent is not worth a note on every
    session (a configured path that is missing, or a file that is unusable, is)."""
    import os

    return path == str(app.paths.soul_file) and not os.path.lexists(path)


def _workspace(app: SessionDeps) -> str | None:
    ws = app.settings.get("files.workspace")
    return str(Path(ws).expanduser()) if isinstance(ws, str) and ws else None
