"""The agent loop: model turn, tool calls, model turn, ... until a reply without tool calls.

Read-only calls of one turn run concurrently (in runs of consecutive read-only calls, so a
read never overtakes a write the model asked for first); mutating calls run one at a time and
each is approved first in default mode. A tool that raises, an unknown tool and arguments that
are not a JSON object become error results the *model* sees, so it can correct itself; the user
only hears about limits and model failures. What a tool returns (a first-party, pack or MCP
tool, its error text included) and what a tool spec says pass through the known-secret
redactor before they enter the conversation, and so do the model's own messages as the history
keeps them: the model is another origin, and an MCP server that echoes the header it was sent
must not hand that secret to it. The model itself is a protocol: the adapter speaks
HTTP, tests and benchmarks speak it over a loopback socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from .environment import MutatesParent
from .redact import redact_known, redact_known_obj
from .safeparse import loads_json
from .tools import HOST_APPROVAL_EXEMPT, Catalog, PermissionMode, Tool, ToolEnv, ToolResult, always_asks

DEFAULT_MAX_TURNS = 20
DEFAULT_MAX_TOOL_CALLS = 50


class ModelError(Exception):
    """The model could not be reached or answered nonsense; the message is for the user."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """One assistant message: text and/or tool calls."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = ""

    def as_message(self) -> dict[str, Any]:
        # null content is the protocol's "tool calls only"; a plain reply keeps its (maybe empty) text
        msg: dict[str, Any] = {"role": "assistant",
                               "content": self.content if (self.content or not self.tool_calls) else None}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


class ChatModel(Protocol):
    """An OpenAI-compatible chat model. ``on_text`` receives streamed text as it arrives."""

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply: ...


class Approver(Protocol):
    """Decides whether a mutating tool call may run (the UI asks; unattended runs deny)."""

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool: ...


class DenyAll:
    """The unattended approver: no mutating call runs."""

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        return False


class AllowAll:
    """Approves everything (accept-edits mode, or a persona granted unattended writes)."""

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        return True


def needs_approval(tool: Tool) -> bool:
    """Host policy: every mutating tool needs approval, whatever it says about itself. The one
    exception is the host's own memory tools (exact classes in ``HOST_APPROVAL_EXEMPT``): they
    write only the learned-memory store, which the user can review and undo. A pack tool that
    declares ``approval_exempt`` is asked about like any other. A tool that declares
    ``always_ask`` (the shell) needs approval whatever else it says."""
    if always_asks(tool):
        return True
    return not tool.read_only and type(tool) not in HOST_APPROVAL_EXEMPT


def asks_now(tool: Tool, mode: PermissionMode) -> bool:
    """Whether a call of ``tool`` in ``mode`` is put to the approver: every tool that needs
    approval, except that accept-edits mode lets the ordinary ones through. An ``always_ask``
    tool is asked about in every mode."""
    if not needs_approval(tool):
        return False
    return mode is not PermissionMode.ACCEPT_EDITS or always_asks(tool)


@dataclass(frozen=True)
class AgentLimits:
    max_turns: int = DEFAULT_MAX_TURNS
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS


@dataclass(frozen=True)
class ToolEvent:
    """What happened to one tool call, for transcripts and the UI."""

    call: ToolCall
    result: ToolResult
    ran: bool


@dataclass(frozen=True)
class AgentResult:
    """The outcome of one user message. ``stopped`` is done, max_turns, max_tool_calls or
    cancelled; ``note`` is a sentence for the user when it is not done."""

    text: str
    stopped: str
    turns: int
    tool_calls: int
    events: tuple[ToolEvent, ...] = ()
    note: str = ""


@dataclass
class Conversation:
    """The messages of one session; turn 0 (system) is fixed when the session starts."""

    messages: list[dict[str, Any]] = field(default_factory=list)


class Agent:
    """Runs one session's conversation against a model with a frozen tool list."""

    def __init__(
        self, model: ChatModel, tools: Sequence[Tool], system_prompt: str, *,
        env: ToolEnv | None = None, approver: Approver | None = None,
        mode: PermissionMode = PermissionMode.DEFAULT, limits: AgentLimits = AgentLimits(),
        on_tool: Callable[[ToolEvent], None] | None = None,
        preface: Callable[[], str] | None = None, absent: Mapping[str, str] | None = None,
    ) -> None:
        catalog = Catalog()
        for t in tools:
            catalog.register(t)
        # The tool list is projected once: the session's tool specs are frozen with turn 0.
        self._catalog = catalog
        self._tools = {t.spec.name: t for t in catalog.available(mode)}
        self.tool_specs = _scrubbed_specs(s.as_openai() for s in catalog.advertised_specs(mode))
        self.model = model
        self.env = env or ToolEnv()
        self.approver = approver or DenyAll()
        self.mode = mode
        self.limits = limits
        self.on_tool = on_tool
        #: a line put in front of each user message in what the model gets (the current time):
        #: there rather than in the system prompt, which stays the same all session (cacheable)
        self.preface = preface
        #: tools deliberately left out of this session, with the sentence a call to one gets
        #: (a specialist past the depth limit calling ``Subagent``)
        self.absent = dict(absent or {})
        self.conversation = Conversation([{"role": "system", "content": system_prompt}])
        self._task: asyncio.Task[AgentResult] | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.conversation.messages

    def cancel(self) -> None:
        """Stop the message being answered; ``send`` then returns ``stopped="cancelled"``."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def stopped(self, grace: float = 5.0) -> None:
        """Wait (at most ``grace`` seconds) until the answer being given has finished or, once
        cancelled, has unwound: a caller that gave up on :meth:`send` (a check-in past its time
        limit) waits here before it closes the model and the tools under it."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=grace)

    async def send(self, text: str, on_text: Callable[[str], None] | None = None) -> AgentResult:
        """Add a user message and run until the model answers without tool calls, a cap is
        reached, or :meth:`cancel` is called."""
        start = len(self.messages)
        line = self.preface() if self.preface is not None else ""
        self.messages.append({"role": "user", "content": f"{line}\n\n{text}" if line else text})
        self._task = asyncio.ensure_future(self._run(on_text))
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if self._task.cancelled():
                # Drop the half-answered exchange so the next message starts from a valid history.
                del self.messages[start:]
                return AgentResult("", "cancelled", 0, 0, note="The conversation was cancelled.")
            self._task.cancel()
            raise

    async def _run(self, on_text: Callable[[str], None] | None) -> AgentResult:
        events: list[ToolEvent] = []
        calls_made = 0
        turns = 0
        last_text = ""
        while True:
            if turns >= self.limits.max_turns:
                return AgentResult(last_text, "max_turns", turns, calls_made, tuple(events),
                                   f"Stopped: the persona reached the limit of {self.limits.max_turns} "
                                   "model turns for one message.")
            turns += 1
            self._refresh_specs()
            reply = await self.model.complete(self.messages, self.tool_specs, on_text)
            # Kept as the model will see it again: its own echo of a secret it should never
            # have had (a key it guessed, one a user pasted earlier) is masked too.
            self.messages.append(cast(dict[str, Any], redact_known_obj(reply.as_message())))
            last_text = reply.content or last_text
            if not reply.tool_calls:
                return AgentResult(reply.content, "done", turns, calls_made, tuple(events))
            allowed = max(0, self.limits.max_tool_calls - calls_made)
            runnable, over = list(reply.tool_calls[:allowed]), list(reply.tool_calls[allowed:])
            results = await self._dispatch(runnable)
            calls_made += len(runnable)
            results += [(ToolResult.error(
                f"Not run: the limit of {self.limits.max_tool_calls} tool calls was reached."), False)
                for _ in over]
            for call, (raw, ran) in zip(reply.tool_calls, results, strict=True):
                # The one door into the conversation for tool output: every result, error or
                # not, from any tool, is scrubbed here (and so is what the UI and logs see).
                res = ToolResult(redact_known(raw.content), raw.is_error)
                ev = ToolEvent(call, res, ran)
                events.append(ev)
                if self.on_tool:
                    self.on_tool(ev)
                content = res.content if not res.is_error else f"Error: {res.content}"
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            if over:
                return AgentResult(last_text, "max_tool_calls", turns, calls_made, tuple(events),
                                   f"Stopped: the persona reached the limit of "
                                   f"{self.limits.max_tool_calls} tool calls for one message.")

    def _refresh_specs(self) -> None:
        """Tools ``ToolSearch`` hydrated are advertised with their full spec from the next turn."""
        hydrated = self.env.services.get("hydrated_tools")
        if isinstance(hydrated, set) and hydrated:
            self.tool_specs = _scrubbed_specs(
                s.as_openai() for s in self._catalog.advertised_specs(self.mode, hydrated))

    async def _dispatch(self, calls: list[ToolCall]) -> list[tuple[ToolResult, bool]]:
        """Results in call order. Kept by position, not by call id: some local servers send
        the same id (or none) for every call of a turn. A read-only tool whose *call* changes
        the parent anyway (``MutatesParent``: a specialist's fork merged back) runs alone, like
        a mutating call, but is asked about only if :func:`needs_approval` says so."""
        out: list[tuple[ToolResult, bool]] = []
        batch: list[ToolCall] = []

        async def flush() -> None:
            if batch:
                out.extend(await asyncio.gather(*(self._run_one(c) for c in batch)))
                batch.clear()

        for call in calls:
            tool = self._tools.get(call.name)
            if tool is not None and tool.read_only and not _mutates_parent(tool, call):
                batch.append(call)
                continue
            await flush()
            out.append(await self._run_one(call))
        await flush()
        return out

    async def _run_one(self, call: ToolCall) -> tuple[ToolResult, bool]:
        tool = self._tools.get(call.name)
        if tool is None and call.name in self.absent:
            return ToolResult.error(self.absent[call.name]), False
        if tool is None:
            names = ", ".join(sorted(self._tools)) or "none"
            return ToolResult.error(f"There is no tool named {call.name!r} in this session. "
                                    f"Available tools: {names}."), False
        args = parse_arguments(call.arguments)
        if isinstance(args, str):
            return ToolResult.error(args), False
        if asks_now(tool, self.mode) and not await self.approver.approve(tool, call, args):
            return ToolResult.error(f"The user did not allow {call.name} to run."), False
        try:
            result = await tool.execute(args, self.env)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing tool is the model's problem to handle
            return ToolResult.error(f"{call.name} failed: {type(exc).__name__}: {exc}"), True
        if not isinstance(result, ToolResult):
            return ToolResult.error(f"{call.name} returned {type(result).__name__}, not a result"), True
        return result, True


def _mutates_parent(tool: Tool, call: ToolCall) -> bool:
    """Whether this call of an otherwise read-only tool changes the parent (asked of the tool;
    arguments it cannot read, or a tool that fails to say, count as "it might")."""
    if not isinstance(tool, MutatesParent):
        return False
    args = parse_arguments(call.arguments)
    if isinstance(args, str):
        return False  # it will not run at all: the model hears why
    try:
        return bool(tool.mutates_parent(args))
    except Exception:  # noqa: BLE001 - unsure means alone
        return True


def _scrubbed_specs(specs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool specs with the known secrets masked: an MCP server writes its own descriptions and
    schemas, and they go to the model with every request."""
    return [cast(dict[str, Any], redact_known_obj(spec)) for spec in specs]


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """The call's arguments as a dict, or a sentence for the model saying what is wrong."""
    if raw is None or raw.strip() == "":
        return {}
    try:
        args = loads_json(raw)  # deep nesting from the model is a ValueError, not a crash
    except ValueError as exc:
        return f"The arguments were not valid JSON ({exc.args[0] if exc.args else exc}); send a JSON object."
    if not isinstance(args, dict):
        return "The arguments must be a JSON object."
    return args
