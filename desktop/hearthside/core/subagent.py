"""The ``Subagent`` tool: a persona hands one task to a specialist, who answers as a child agent.

A specialist (:class:`~hearthside.core.agentdefs.AgentDef`) runs as its own :class:`Agent`: its
own session, its own frozen snapshot (the specialist's instructions, the preloaded skills and one
line saying whom it works for), its own tool list cut from the caller's, and its own limits. Its
final reply is the tool result the persona sees. The limits are real: model turns and tool
calls (a definition's numbers capped by ``core.agentdefs``), a wall-clock time limit (the child
is cancelled there and the result says so) and a depth: a specialist gets the ``Subagent`` tool
only when its definition allows it, never deeper than ``MAX_DEPTH_CAP``.

The tool is read-only, so several calls in one turn run in parallel through the agent's
read-parallel dispatcher; cancelling the parent cancels every child, because a child runs
inside the parent's tool call. What a child may do is never more than its caller: plan mode
and unattended runs give it read-only tools only; its calls that need approval go to the
parent's approver, with the specialist's name on the question (:data:`ASKING`). A specialist
whose definition writes runs in a *fork* of the workspace (the :class:`ForkHook`): its changes
are kept for the user to review instead of reaching the parent; with no forker wired, such a
specialist is refused with a sentence. Only a hook that merges straight back makes the call
mutate the parent (``MutatesParent``), and then the dispatcher runs it alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .agent import Agent, AgentLimits, AgentResult, Approver, ChatModel, ModelError, ToolCall, ToolEvent
from .agentdefs import (
    DEFAULT_DEPTH,
    DEFAULT_TIME_LIMIT,
    MAX_DEPTH_CAP,
    MAX_TIME_LIMIT,
    MAX_TOOL_CALLS_CAP,
    MAX_TURNS_CAP,
    AgentDef,
    AgentDefListing,
    AgentMCPServer,
    capped,
)
from .approval import ASKING, Asking
from .environment import EnvironmentForker, EnvironmentMerger, Fork, diff_versions
from .session import escape_line
from .tools import PermissionMode, Tool, ToolEnv, ToolResult, ToolSpec

SUBAGENT_TOOL = "Subagent"
#: How many specialists the tool's description lists, and how long each line may be.
MAX_LISTED = 40
MAX_LINE = 200
#: Seconds a cancelled child gets to unwind before its caller stops waiting for it.
UNWIND_GRACE = 5.0

SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "agent": {"type": "string", "description": "The specialist's name, exactly as listed."},
        "task": {"type": "string", "description": "What the specialist should do: everything it needs to "
                                                  "know, since it sees none of this conversation."},
    },
    "required": ["agent", "task"],
}


@dataclass(frozen=True)
class ChildModel:
    """The model a specialist talks to, a note when its definition's choice was not used, and
    how to close it when it is the specialist's own (None: the parent's, closed by the parent)."""

    model: ChatModel
    note: str = ""
    close: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True)
class ParentLink:
    """What the session's agent lends its specialists: set by whoever builds that agent.

    ``limits`` are the session's own (a definition's numbers are capped, its zero means these);
    ``pick_model`` resolves a definition's ``model`` (None: always the parent's model)."""

    model: ChatModel
    approver: Approver
    mode: PermissionMode
    limits: AgentLimits = dataclasses.field(default_factory=AgentLimits)
    on_tool: Callable[[ToolEvent], None] | None = None
    pick_model: Callable[[AgentDef, ChatModel], ChildModel] | None = None


@dataclass(frozen=True)
class OpenedServers:
    """The tools of a specialist's own MCP servers (its inline servers, connected for it alone),
    sentences about servers that could not be had, and how to close the connections."""

    tools: tuple[Tool, ...] = ()
    notes: tuple[str, ...] = ()
    close: Callable[[], Awaitable[None]] | None = None


class SpecialistServers(Protocol):
    """Connects a specialist's inline MCP servers for the length of one task (the app's MCP
    client); references to configured servers never come here (their tools are the session's)."""

    async def open(self, spec: AgentDef, servers: Sequence[AgentMCPServer]) -> OpenedServers: ...


def mcp_prefix(server: str) -> str:
    """The name prefix of one MCP server's tools (``mcp__<server>__``), as the catalog names them."""
    return f"mcp__{server}__"


@dataclass(frozen=True)
class ForkHook:
    """How a writing specialist gets its own copy of the workspace.

    ``forker`` makes the fork (run off the event loop); ``keep(fork, specialist, task)`` registers
    a fork with changes for the user's review and returns the sentence the model gets (an id to
    show, where to review it). ``merger`` set means the fork is applied straight back instead,
    in which case the call mutates the parent and runs alone."""

    forker: EnvironmentForker
    keep: Callable[[Fork, str, str], str]
    merger: EnvironmentMerger | None = None


def time_limit(value: float | None) -> float:
    """A specialist's time limit in seconds: the default for none or nonsense, never above the cap."""
    if value is None or not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        return DEFAULT_TIME_LIMIT
    return float(min(value, MAX_TIME_LIMIT))


def child_limits(spec: AgentDef, default: AgentLimits) -> AgentLimits:
    """A definition's turn and tool-call limits, capped; zero means the session's own (also capped)."""
    return AgentLimits(capped(spec.max_turns, MAX_TURNS_CAP) or min(default.max_turns, MAX_TURNS_CAP),
                       capped(spec.max_tool_calls, MAX_TOOL_CALLS_CAP)
                       or min(default.max_tool_calls, MAX_TOOL_CALLS_CAP))


def depth_limit(spec: AgentDef, child_depth: int, inherited: int) -> int:
    """How deep the chain below a caller may go once ``spec`` runs at ``child_depth``.

    A definition's ``max_depth`` counts levels from itself (1: it cannot start specialists), an
    inner definition can only lower what its caller allowed, and nothing passes MAX_DEPTH_CAP."""
    own = child_depth - 1 + (capped(spec.max_depth, MAX_DEPTH_CAP) or DEFAULT_DEPTH)
    return min(own, inherited, MAX_DEPTH_CAP)


class SpecialistApprover:
    """The child's approver: the parent's, asked with the specialist's name and environment on
    the question (through :data:`ASKING`, so every approver the parent uses shows it)."""

    def __init__(self, parent: Approver, specialist: str, env: ToolEnv) -> None:
        self.parent = parent
        self.specialist = specialist
        self.env = env

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        token = ASKING.set(Asking(self.specialist, self.env))
        try:
            return await self.parent.approve(tool, call, args)
        finally:
            ASKING.reset(token)


class SubagentTool:
    """The ``Subagent`` tool over one session's specialists (a frozen listing).

    ``tools`` is the call site's default set (the session's own tools, without this one);
    ``read_only_inside`` (plan mode, check-ins) gives children read-only tools only and offers no
    writing specialist; ``allow_writers`` False also keeps writers out. The tool does nothing
    until :meth:`bound` to the agent that will call it (its model, approver and mode)."""

    def __init__(self, listing: AgentDefListing, tools: Sequence[Tool], *, persona: str = "",
                 skill_body: Callable[[str], str] | None = None, read_only_inside: bool = False,
                 allow_writers: bool = True, forks: ForkHook | None = None,
                 seconds: float | None = None, depth: int = 0, chain_limit: int = MAX_DEPTH_CAP,
                 link: ParentLink | None = None, servers: SpecialistServers | None = None,
                 memory: Mapping[str, str] | None = None) -> None:
        self.listing = listing
        self.memory = dict(memory or {})  # name -> its read-only memory section (read when built)
        self.tools = tuple(t for t in tools if t.spec.name != SUBAGENT_TOOL)
        self.persona = persona
        self.skill_body = skill_body
        self.read_only_inside = read_only_inside
        self.allow_writers = allow_writers and not read_only_inside
        self.forks = forks
        self.seconds = time_limit(seconds)
        self.depth = depth
        self.chain_limit = chain_limit
        self.link = link
        self.servers = servers
        self._spec = ToolSpec(SUBAGENT_TOOL, self._description(), SCHEMA)

    # -- what the model sees ------------------------------------------------------------------
    def offered(self) -> tuple[AgentDef, ...]:
        """The specialists this session may hand tasks to."""
        return tuple(d for d in self.listing.defs if self.allow_writers or not d.writes)

    def _description(self) -> str:
        lines = [("Hand one task to a specialist, who works on it alone and returns its final reply as "
                  "this tool's result. The specialist sees none of this conversation: put everything it "
                  "needs in `task`. Several calls in one turn run at the same time."),
                 "Specialists (name: what they are for):"]
        offered = self.offered()
        for d in offered[:MAX_LISTED]:
            desc = escape_line(" ".join(d.description.split()))
            desc = desc if len(desc) <= MAX_LINE else desc[: MAX_LINE - 1] + "…"
            lines.append(f"- {escape_line(d.name)}: {desc}")
        if len(offered) > MAX_LISTED:
            lines.append(f"({len(offered) - MAX_LISTED} more; call with the exact name.)")
        return "\n".join(lines)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def read_only(self) -> bool:
        return True

    def mutates_parent(self, args: Mapping[str, Any]) -> bool:
        """True when this call's specialist writes and its fork is merged straight back."""
        name = args.get("agent")
        d = self.listing.get(name) if isinstance(name, str) else None
        return bool(d is not None and d.writes and self.forks is not None and self.forks.merger is not None)

    def bound(self, link: ParentLink) -> SubagentTool:
        """This tool for the agent described by ``link`` (a new value; this one is unchanged)."""
        return self._copy(link=link)

    def _copy(self, **changes: Any) -> SubagentTool:
        kw: dict[str, Any] = {"persona": self.persona, "skill_body": self.skill_body,
                              "read_only_inside": self.read_only_inside, "allow_writers": self.allow_writers,
                              "forks": self.forks, "seconds": self.seconds, "depth": self.depth,
                              "chain_limit": self.chain_limit, "link": self.link, "servers": self.servers,
                              "memory": self.memory}
        kw.update(changes)
        return SubagentTool(self.listing, self.tools, **kw)

    # -- running a specialist -------------------------------------------------------------------
    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        name, task = args.get("agent"), args.get("task")
        if not isinstance(name, str) or not name.strip():
            return ToolResult.error("Say which specialist: `agent` must be one of the listed names.")
        if not isinstance(task, str) or not task.strip():
            return ToolResult.error("Say what to do: `task` must be the instructions for the specialist.")
        spec = self.listing.get(name)
        if spec is None or spec not in self.offered():
            return ToolResult.error(self._unknown(name, spec))
        if self.link is None:
            return ToolResult.error("Specialists are not available in this session.")
        fork: Fork | None = None
        if spec.writes:
            if self.forks is None:
                return ToolResult.error(f"The specialist {name} writes files, and writing specialists need a "
                                        "copy of the workspace to work in, which this session does not have; "
                                        "nothing was run.")
            try:
                fork = await asyncio.to_thread(self.forks.forker.fork, env.environment, task[:80]) \
                    if env.environment is not None else None
            except Exception as exc:  # noqa: BLE001 - a fork that cannot be made is the model's sentence
                return ToolResult.error(f"The specialist {name} was not run: its copy of the workspace "
                                        f"could not be made ({exc}).")
            if fork is None:
                return ToolResult.error(f"The specialist {name} writes files, but this session has no "
                                        "workspace to copy; nothing was run.")
        try:
            result = await self._run_child(spec, task, self._child_env(env, fork))
        except BaseException:
            if fork is not None:
                fork.cleanup()
            raise
        if fork is not None:
            result = await self._settle_fork(spec, task, fork, result, env)
        return result

    def _unknown(self, name: str, spec: AgentDef | None) -> str:
        if spec is not None:  # exists but not here: a writer in plan mode or a check-in
            return (f"The specialist {name} writes files, which this session does not allow "
                    "(plan mode or a check-in); choose one that only reads.")
        names = ", ".join(d.name for d in self.offered())
        shown = escape_line(name[:80])
        if not names:
            return f"There is no specialist named {shown!r}: this persona has none."
        return f"There is no specialist named {shown!r}. Specialists: {names}."

    def _child_env(self, env: ToolEnv, fork: Fork | None) -> ToolEnv:
        """The child's own environment: its own session services (tools it loads with ToolSearch
        are its own); on a fork, the fork's workspace and shell, never the parent's."""
        services = {**env.services, "hydrated_tools": set()}
        if fork is None:
            return dataclasses.replace(env, services=services)
        root = getattr(fork.child.workspace, "root", None)  # a folder fork's files tools need its path
        return dataclasses.replace(env, services=services, environment=fork.child,
                                   workspace=str(root) if root is not None else None)

    def _child_tools(self, spec: AgentDef, notes: list[str]) -> list[Tool]:
        """The caller's tools cut down by the definition. ``mcpServers`` decides the MCP part:
        without it the session's MCP tools follow ``tools`` as any other; with it only the named
        servers' tools come along (all of them: ``tools`` cannot name MCP tools), and the inline
        servers' tools are added by :meth:`_own_servers`."""
        base = list(self.tools)
        if spec.tools is not None:
            wanted = set(spec.tools)
            base = [t for t in base if t.spec.name in wanted]
        if spec.mcp_servers:
            base = [t for t in base if not t.spec.name.startswith("mcp__")]
            for server in (s for s in spec.mcp_servers if s.is_reference):
                got = [t for t in self.tools if t.spec.name.startswith(mcp_prefix(server.name))]
                if not got:
                    notes.append(f"the MCP server {escape_line(server.name)} its definition names is not "
                                 "connected in this session, so its tools were left out")
                base += got
        return self._allowed(spec, base)

    def _allowed(self, spec: AgentDef, tools: list[Tool]) -> list[Tool]:
        banned = set(spec.disallowed_tools)
        tools = [t for t in tools if t.spec.name not in banned]
        if self.read_only_inside or spec.permission_mode == "plan":  # a def may ask to only read
            tools = [t for t in tools if t.read_only]
        return tools

    async def _own_servers(self, spec: AgentDef, have: list[Tool], notes: list[str]) -> OpenedServers:
        """Connect the definition's inline servers for this task only; their tools join ``have``
        (a name the child already has is left out, with a note)."""
        inline = [s for s in spec.mcp_servers if not s.is_reference]
        if not inline:
            return OpenedServers()
        if self.servers is None:
            notes.append("its own MCP servers cannot be connected in this session, so their tools were left out")
            return OpenedServers()
        opened = await self.servers.open(spec, inline)
        notes.extend(opened.notes)
        names = {t.spec.name for t in have}
        for t in self._allowed(spec, list(opened.tools)):
            if t.spec.name in names:
                notes.append(f"the tool {escape_line(t.spec.name)} of its own server clashes with one it already "
                             "has and was left out")
                continue
            names.add(t.spec.name)
            have.append(t)
        return opened

    def _system_prompt(self, spec: AgentDef) -> str:
        parts = [spec.body.strip()]
        for skill in spec.skills:
            body = ""
            if self.skill_body is not None:
                try:
                    body = self.skill_body(skill)
                except Exception:  # noqa: BLE001 - a missing skill leaves its part out
                    body = ""
            if body.strip():
                parts.append(f"Skill {skill}:\n{body.strip()}")
        if self.memory.get(spec.name, "").strip():
            parts.append(self.memory[spec.name].strip())
        who = f"the persona {self.persona}" if self.persona else "a persona"
        parts.append(f"You are the specialist {spec.name}, working for {who} on one task. Your final "
                     "reply is returned to them as the result: make it complete and to the point.")
        return "\n\n".join(p for p in parts if p)

    async def _run_child(self, spec: AgentDef, task: str, child_env: ToolEnv) -> ToolResult:
        link = self.link
        assert link is not None
        picked = link.pick_model(spec, link.model) if link.pick_model is not None else ChildModel(link.model)
        child_depth = self.depth + 1
        limit = depth_limit(spec, child_depth, self.chain_limit)
        notes = [picked.note] if picked.note else []
        tools = self._child_tools(spec, notes)
        absent: dict[str, str] = {}
        child_link = ParentLink(picked.model, SpecialistApprover(link.approver, spec.name, child_env),
                                PermissionMode.PLAN if link.mode is PermissionMode.PLAN else link.mode,
                                link.limits, _renamed(spec.name, link.on_tool), link.pick_model)
        if child_depth < limit:
            tools.append(self._copy(depth=child_depth, chain_limit=limit, persona=spec.name, link=child_link))
        else:
            absent[SUBAGENT_TOOL] = (f"The specialist {spec.name} cannot hand tasks to other specialists: "
                                     f"the depth limit is {limit}; do the task yourself.")
        opened = OpenedServers()
        run: asyncio.Future[AgentResult] | None = None
        child: Agent | None = None
        try:
            opened = await self._own_servers(spec, tools, notes)
            child = Agent(picked.model, tools, self._system_prompt(spec), env=child_env,
                          approver=child_link.approver, mode=child_link.mode,
                          limits=child_limits(spec, link.limits), on_tool=child_link.on_tool, absent=absent)
            run = asyncio.ensure_future(child.send(task))
            done, _ = await asyncio.wait({run}, timeout=self.seconds)
            if not done:
                child.cancel()
                await asyncio.wait({run}, timeout=UNWIND_GRACE)
                return ToolResult.error(f"The specialist {spec.name} was stopped at its time limit of "
                                        f"{_seconds(self.seconds)}; it gave no answer.")
            try:
                res = run.result()
            except ModelError as exc:
                return ToolResult.error(f"The specialist {spec.name} could not finish: {exc}")
        finally:
            if run is not None and child is not None and not run.done():  # the parent was cancelled
                child.cancel()
                run.cancel()
                await asyncio.wait({run}, timeout=UNWIND_GRACE)
            if opened.close is not None:  # the specialist's own servers end with its task
                await asyncio.shield(opened.close())
            if picked.close is not None:
                await picked.close()
        return _outcome(spec, res, "; ".join(notes))

    async def _settle_fork(self, spec: AgentDef, task: str, fork: Fork, result: ToolResult,
                           env: ToolEnv) -> ToolResult:
        hook = self.forks
        assert hook is not None
        diff = await asyncio.to_thread(lambda: diff_versions(fork.base, fork.child.workspace.versions()))
        if diff.empty:
            fork.cleanup()
            return ToolResult(result.content + "\n\n(It changed no files.)", result.is_error)
        if hook.merger is not None and env.environment is not None:
            parent = env.environment
            try:
                merged = await asyncio.to_thread(hook.merger.merge, fork, parent)
            except Exception as exc:  # noqa: BLE001 - a conflict keeps the fork for review
                kept = hook.keep(fork, spec.name, task)
                return ToolResult(f"{result.content}\n\n{exc} {kept}", result.is_error)
            fork.cleanup()
            return ToolResult(f"{result.content}\n\n(Its changes were applied: "
                              f"{', '.join(merged.applied)}.)", result.is_error)
        kept = hook.keep(fork, spec.name, task)
        return ToolResult(f"{result.content}\n\n{kept}", result.is_error)


def _outcome(spec: AgentDef, res: AgentResult, note: str) -> ToolResult:
    """The tool result for a child that ran: its reply, or why it stopped (an error)."""
    tail = f"\n\n({note})" if note else ""
    if res.stopped == "done":
        return ToolResult((res.text.strip() or f"(The specialist {spec.name} gave no reply.)") + tail)
    if res.stopped == "cancelled":
        return ToolResult.error(f"The specialist {spec.name} was cancelled before it answered.")
    said = f" What it had said: {res.text.strip()}" if res.text.strip() else ""
    why = res.note.replace("the persona", f"the specialist {spec.name}")
    return ToolResult.error(f"{why}{said}{tail}")


def _renamed(specialist: str, on_tool: Callable[[ToolEvent], None] | None) -> Callable[[ToolEvent], None] | None:
    """The child's tool events as the parent's UI shows them: ``specialist/tool``."""
    if on_tool is None:
        return None

    def forward(ev: ToolEvent) -> None:
        call = ToolCall(ev.call.id, f"{specialist}/{ev.call.name}", ev.call.arguments)
        on_tool(ToolEvent(call, ev.result, ev.ran))
    return forward


def _seconds(s: float) -> str:
    return f"{s:g} seconds" if s != 1 else "1 second"
