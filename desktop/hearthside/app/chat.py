"""A chat with one persona for a window: the same session, agent and rules as ``hearthside chat``.

The window owns no rule: this module prepares the session through ``SessionService`` (so the
composition, strict mode, tool catalog, limits and approval rules are the CLI's), streams text
and tool events to callbacks, asks an approval callback before each mutating tool call (the
agent's own rule: default mode asks, accept-edits runs, plan hides them) and cancels for real
(``Agent.cancel`` on the runtime loop). Everything here runs on the app runtime's loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..core.agent import Agent, AgentResult, ModelError, ToolCall, ToolEvent
from ..core.approval import ASKING, describe_call, shown
from ..core.tools import PermissionMode, Tool, always_asks

if TYPE_CHECKING:
    from .conversations import ConversationService, Recorder
    from .sessions import PreparedSession, SessionService

#: Argument names that name the thing a tool acts on, shown first in an approval prompt.
_TARGET_KEYS = ("path", "file", "file_path", "target", "destination", "dest", "url")


@dataclass(frozen=True)
class ApprovalRequest:
    """What the person is asked to allow: fields in the order to show them, target first.

    When the tool (or the write guard) describes the call itself — an ``approval_request`` or
    ``describe_approval`` method returning a mapping — its fields are shown as given.
    """

    tool: str
    fields: tuple[tuple[str, str], ...]
    refusal: str = ""  # the write guard will refuse this call anyway (nothing to ask)
    specialist: str = ""  # the specialist asking ("" for the persona); also the first field


    @property
    def path(self) -> str:
        return next((v for k, v in self.fields if k == "path"), "")


def approval_request(tool: Tool, call: ToolCall, args: Mapping[str, Any], env: Any = None) -> ApprovalRequest:
    """The fields of one approval prompt: the core's description of the call (the resolved
    target path in full, the action, the other arguments) where the core has one, else the
    tool's own description, else the target argument first, then the action and the rest. A
    specialist's call (core/subagent.py) leads with a ``specialist`` field naming it."""
    asking = ASKING.get()
    who = asking.specialist if asking is not None else ""
    req = _request(tool, call, args, env)
    if not who:
        return req
    return ApprovalRequest(req.tool, (("specialist", who), *req.fields), req.refusal, who)


def _request(tool: Tool, call: ToolCall, args: Mapping[str, Any], env: Any) -> ApprovalRequest:
    if env is not None:  # the one description the CLI uses too (core/approval.py)
        req = describe_call(tool, args, env)
        head = [("path", req.path)] if req.path else []
        return ApprovalRequest(call.name, (*head, ("action", req.action), *req.rest), req.refusal)
    for attr in ("approval_request", "describe_approval"):
        describe = getattr(tool, attr, None)
        if callable(describe):
            try:
                given = describe(args)
            except Exception:  # noqa: BLE001 - fall back to the raw arguments
                given = None
            if isinstance(given, Mapping) and given:
                items = [(str(k), shown(v)) for k, v in given.items()]  # in full: nothing hidden
                items.sort(key=lambda kv: 0 if kv[0] == "path" else 1)
                return ApprovalRequest(call.name, tuple(items))
    fields: list[tuple[str, str]] = []
    target = next((k for k in _TARGET_KEYS if k in args), None)
    if target is not None:
        fields.append(("path" if target in ("path", "file", "file_path") else target, shown(args[target])))
    fields.append(("action", call.name))
    fields += [(str(k), shown(v)) for k, v in args.items() if k != target]
    return ApprovalRequest(call.name, tuple(fields))


def short_arguments(raw: str, limit: int = 80) -> str:
    """A tool call's arguments in one short line, for the compact tool row."""
    try:
        args = json.loads(raw) if raw and raw.strip() else {}
    except ValueError:
        return _short(raw, limit)
    if not isinstance(args, dict):
        return _short(raw, limit)
    return _short(", ".join(f"{k}={_short(v, 40)}" for k, v in args.items()), limit)


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


Ask = Callable[[ApprovalRequest], Awaitable[bool]]


def approval_line(request: ApprovalRequest) -> str:
    """What was asked, in one line, as a kept conversation records it (the target in full)."""
    return ", ".join(f"{k}={v if k == 'path' else _short(v, 60)}" for k, v in request.fields)


class _CallbackApprover:
    """The agent's approver for a window: each mutating call becomes an ``ApprovalRequest``;
    the answer (given or refused) is recorded in the kept conversation when ``record`` is set."""

    def __init__(self, ask: Ask, env: Any = None,
                 record: Callable[[ApprovalRequest, bool], None] | None = None) -> None:
        self.ask = ask
        self.env = env
        self.record = record

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        request = approval_request(tool, call, args, self.env)
        if request.refusal:
            return True  # as in the CLI: the write guard refuses it and the model hears why
        try:
            allowed = bool(await self.ask(request))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - no answer is a no
            allowed = False
        if self.record is not None:
            self.record(request, allowed)
        return allowed


@dataclass(frozen=True)
class TurnOutcome:
    """How one message ended, for the window: the agent's result or the failure sentence."""

    result: AgentResult | None
    error: str = ""


class ChatDeps(Protocol):
    """What a chat uses of the app: the session service and the kept conversations
    (``AppContext`` builds them on first use, here on the runtime's worker thread, never on the
    Qt thread)."""

    @property
    def sessions(self) -> SessionService: ...

    @property
    def conversations(self) -> ConversationService: ...


class ChatSession:
    """One persona's conversation. Create it on the runtime loop with :meth:`open`.

    The conversation is kept as it happens (``app.conversations``): each user message before
    it is answered, each final reply, each tool call with its one-line result, each approval
    given or refused, and the check-in alert it was opened for. ``conversation`` (an id) makes
    :meth:`open` continue that conversation instead of starting a new one."""

    def __init__(self, app: ChatDeps, persona: str, ask: Ask, conversation: str | None = None) -> None:
        self.app = app
        self.persona = persona
        self.ask = ask
        self.mode = PermissionMode.DEFAULT
        self.notes: list[str] = []
        #: the kept conversation being recorded (set by :meth:`open`)
        self.recorder: Recorder | None = None
        self._continue = conversation
        self._model: Any = None
        self._agent: Agent | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_tool: Callable[[ToolEvent], None] | None = None
        #: tools of this session asked about every time, even in accept-edits (the shell's Bash);
        #: the window's mode menu says so. Kept from the last build outside plan mode, which
        #: offers no changing tool at all.
        self.always_asking: tuple[str, ...] = ()

    @property
    def conversation_id(self) -> str:
        """The id of the conversation being kept ("" before :meth:`open`). A new conversation's
        file exists only once its first message is kept."""
        return self.recorder.id.value if self.recorder is not None else ""

    async def open(self, mode: PermissionMode = PermissionMode.DEFAULT,
                   on_tool: Callable[[ToolEvent], None] | None = None, *, alert: str | None = None) -> list[str]:
        """Prepare the session (files are read off the loop) and return its notes. ``alert``:
        the check-in alert the chat was opened for (kept as the conversation's first record).

        Raises ``ModelNotConfigured`` / ``PersonaError`` with their sentences, and
        ``ServiceError`` when the conversation to continue does not exist or is read-only."""
        self._loop = asyncio.get_running_loop()
        self._on_tool = on_tool
        self.mode = mode
        if self._model is None:  # reads settings and the keyring: off the loop
            self._model = await asyncio.to_thread(self.app.sessions.model)
        await self._start(self._continue)
        if alert and self.recorder is not None:
            await asyncio.to_thread(self.recorder.alert, alert)
        return self.notes

    async def new_conversation(self) -> list[str]:
        """Start a new kept conversation (the model forgets the talk so far); returns the notes."""
        await self._start(None)
        return self.notes

    async def continue_conversation(self, conversation: str) -> list[str]:
        """Continue the kept conversation ``conversation`` (an id): the model gets as much of
        it as fits its context budget (``[conversations] context_chars``), newest first, with a
        one-line note of what was left out. Raises ``ServiceError`` (NOT_FOUND, INVALID)."""
        await self._start(conversation)
        return self.notes

    async def _start(self, conversation: str | None) -> None:
        service = self.app.conversations

        def load() -> tuple[Recorder, list[dict[str, str]], str]:
            recorder = service.recorder(self.persona, conversation)
            if conversation is None:
                return recorder, [], ""
            cont = service.continuation(recorder.id)
            title = service.meta(recorder.id).title
            said = f"Continuing \u201c{title}\u201d" + (f" {cont.note}" if cont.note else "")
            return recorder, list(cont.messages), said

        recorder, history, said = await asyncio.to_thread(load)
        await self._build(self.mode, carry=False)
        assert self._agent is not None
        self._agent.messages.extend(history)
        self.recorder = recorder
        self._continue = recorder.id.value if conversation is not None else None
        if said:
            self.notes.append(said)

    def _record_tool(self, ev: ToolEvent) -> None:
        if self.recorder is not None:
            self.recorder.tool(ev)
        if self._on_tool is not None:
            self._on_tool(ev)

    def _record_approval(self, request: ApprovalRequest, allowed: bool) -> None:
        if self.recorder is not None:
            self.recorder.approval(request.tool, allowed, approval_line(request))

    async def _build(self, mode: PermissionMode, carry: bool) -> None:
        def build() -> tuple[PreparedSession, Agent]:  # reads the persona files and settings: off the loop
            prepared = self.app.sessions.prepare(self.persona, mode)
            approver = _CallbackApprover(self.ask, prepared.env, self._record_approval)
            return prepared, self.app.sessions.agent(prepared, self._model, approver, on_tool=self._record_tool)

        prepared, agent = await asyncio.to_thread(build)
        if carry and self._agent is not None:  # the talk so far continues under the new mode
            agent.messages.extend(self._agent.messages[1:])
        self._agent, self.mode, self.notes = agent, mode, list(prepared.notes)
        if mode is not PermissionMode.PLAN:
            self.always_asking = tuple(sorted(t.spec.name for t in prepared.snapshot.tools if always_asks(t)))

    async def set_mode(self, mode: PermissionMode) -> None:
        """Plan / default / accept-edits from the next message on (the tool list is rebuilt)."""
        if mode is not self.mode:
            await self._build(mode, carry=True)

    async def send(self, text: str, on_text: Callable[[str], None]) -> TurnOutcome:
        """Answer one message. A model failure becomes ``error`` (the conversation goes on)."""
        if self._agent is None:
            raise RuntimeError("open() the chat session first")
        if not text.strip():
            return TurnOutcome(None, "The message is empty; write something first.")
        recorder = self.recorder
        if recorder is not None:  # on disk before the answer starts: a crash loses at most the reply
            await asyncio.to_thread(recorder.user, text)
        try:
            result = await self._agent.send(text, on_text)
        except ModelError as exc:
            if recorder is not None:
                await asyncio.to_thread(recorder.note, f"No reply: {exc}")
            # Drop the unanswered message so the next one starts from a valid history.
            msgs = self._agent.messages
            while len(msgs) > 1 and msgs[-1].get("role") != "user":
                msgs.pop()
            if len(msgs) > 1:
                msgs.pop()
            return TurnOutcome(None, str(exc))
        if recorder is not None:
            if result.stopped == "cancelled":
                await asyncio.to_thread(recorder.note, "The answer was cancelled.")
            elif result.text:
                await asyncio.to_thread(recorder.reply, result.text)
        return TurnOutcome(result)

    def cancel(self) -> None:
        """Stop the answer in progress (safe to call from any thread)."""
        if self._loop is not None and self._agent is not None:
            self._loop.call_soon_threadsafe(self._agent.cancel)

    async def close(self) -> None:
        if self._model is not None:
            await self._model.aclose()
            self._model = None
