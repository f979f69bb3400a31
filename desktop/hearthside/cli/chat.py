"""``hearthside chat PERSONA [MESSAGE]``: one message, or a conversation on the terminal."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from ..core.agent import AgentResult, ModelError, ToolCall, ToolEvent
from ..core.approval import describe_call
from ..core.errors import ServiceError
from ..core.redact import redact
from ..core.termsafe import StreamCleaner
from ..core.tools import PermissionMode, Tool, ToolEnv, always_asks
from .common import HandledError, echo, get_app, require_persona, safe_text
from .running import connect_mcp, model_or_offer

if TYPE_CHECKING:
    from ..app.context import AppContext
    from ..app.conversations import Recorder


class TerminalApprover:
    """Asks on the terminal before each mutating tool call; without a terminal it denies.

    The question leads with the action and the resolved target path in full
    (:func:`hearthside.core.approval.describe_call`), then the other arguments. A call the
    write guard will refuse anyway is not asked about: it runs into the guard, whose reason
    reaches the model."""

    def __init__(self, can_ask: bool, env: ToolEnv | None = None, recorder: Recorder | None = None) -> None:
        self.can_ask = can_ask
        self.env = env or ToolEnv()
        self.recorder = recorder

    async def approve(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> bool:
        req = describe_call(tool, args, self.env)
        if req.refusal:
            echo(f"[{req.headline()}: {req.refusal}]", err=True)
            return True
        if not self.can_ask:
            how = ("it is asked about every time, so it runs only where you can answer" if always_asks(tool)
                   else "use --accept-edits to allow")
            echo(f"[denied {req.headline()}: no terminal to ask you; {how}]", err=True)
            allowed = False
        else:
            echo("\n".join(req.lines()), err=True)
            question = safe_text(req.question())
            allowed = await asyncio.to_thread(click.confirm, question, default=False, err=True)
        if self.recorder is not None:
            self.recorder.approval(req.tool, allowed, req.headline())
        return allowed


def _tool_line(ev: ToolEvent) -> None:
    mark = "error" if ev.result.is_error else "ok"
    echo(f"[{ev.call.name}: {mark}]", err=True)


class _Streamer:
    """Writes an answer as it streams, through the same filter as every other line
    (:func:`~.common.safe_text`): a piece is held back until its word is complete, so a secret
    or an escape sequence split across pieces is caught whole."""

    def __init__(self) -> None:
        self._cleaner = StreamCleaner(redact)

    def __call__(self, piece: str) -> None:
        self._write(self._cleaner.feed(piece))

    def finish(self) -> None:
        self._write(self._cleaner.flush())

    @staticmethod
    def _write(text: str) -> None:
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()


def _recorder(app: AppContext, persona: str, last: bool, conversation: str | None) -> Recorder:
    """The kept conversation this chat records: a new one, the persona's last (``--continue``)
    or the one asked for (``--conversation``). Refused with one sentence: no conversation to
    continue, an unknown id, another persona's, or one written by a newer Hearthside."""
    service = app.conversations
    try:
        if last:
            meta = service.last(persona)
            if meta is None:
                raise HandledError(f"{persona} has no conversation to continue; start one with "
                                   f"'hearthside chat {persona}'.")
            conversation = meta.id.value
        return service.recorder(persona, conversation)
    except ServiceError as exc:
        raise HandledError(str(exc)) from exc


@click.command()
@click.argument("persona")
@click.argument("message", required=False)
@click.option("--plan", is_flag=True, help="Plan mode: tools that change things are hidden.")
@click.option("--accept-edits", is_flag=True,
              help="Run tools that change things without asking (the shell pack's Bash still asks every time).")
@click.option("--continue", "continue_last", is_flag=True, help="Continue the persona's last conversation.")
@click.option("--conversation", "conversation", metavar="ID", help="Continue the conversation ID "
              "(see 'hearthside chats list PERSONA').")
@click.pass_context
def chat(ctx: click.Context, persona: str, message: str | None, plan: bool, accept_edits: bool,
         continue_last: bool, conversation: str | None) -> None:
    """Talk to a persona. With MESSAGE, answer once and exit; without, chat until EOF or /exit.

    Every conversation is kept (see 'hearthside chats'); --continue or --conversation ID picks
    up an earlier one: the model gets as much of it as fits its context budget."""
    if message is not None and not message.strip():
        raise click.UsageError("the message is empty: write one, or leave it out to start a conversation.")
    if plan and accept_edits:
        raise click.UsageError("choose --plan (tools that change things are hidden) or --accept-edits "
                               "(they run without asking), not both.")
    if continue_last and conversation:
        raise click.UsageError("choose --continue (the last conversation) or --conversation ID, not both.")
    app = get_app(ctx)
    mode = PermissionMode.PLAN if plan else PermissionMode.ACCEPT_EDITS if accept_edits else PermissionMode.DEFAULT
    interactive = message is None
    require_persona(app, persona)
    recorder = _recorder(app, persona, continue_last, conversation)
    model = model_or_offer(app, interactive)
    connect_mcp(app)
    prepared = app.sessions.prepare(persona, mode)
    for note in prepared.notes:
        echo(f"note: {note}", err=True)
    approver = TerminalApprover(sys.stdin.isatty(), prepared.env, recorder)

    def on_tool(ev: ToolEvent) -> None:
        _tool_line(ev)
        recorder.tool(ev)

    agent = app.sessions.agent(prepared, model, approver, on_tool=on_tool)
    if recorder.continued:
        try:
            cont = app.conversations.continuation(recorder.id)
        except ServiceError as exc:
            raise HandledError(str(exc)) from exc
        agent.messages.extend(cont.messages)
        echo(f"Continuing conversation {recorder.id}" + (f" {cont.note}" if cont.note else "") + ".", err=True)
    told = ""

    def ask(text: str) -> AgentResult:
        nonlocal told
        recorder.user(text)  # kept before the answer starts: a crash loses at most the reply
        stream = _Streamer()
        future = app.runtime.submit(agent.send(text, stream))
        try:
            res = future.result()
            stream.finish()
        except ModelError as exc:
            stream.finish()  # what was shown before the failure, its last word included
            recorder.note(f"No reply: {exc}")
            if not interactive:
                raise HandledError(str(exc)) from exc
            echo(f"\nhearthside: {exc}", err=True)
            return AgentResult("", "failed", 0, 0)
        except KeyboardInterrupt:
            app.runtime.loop.call_soon_threadsafe(agent.cancel)  # the agent lives on the runtime loop
            echo("\n[cancelled]", err=True)
            concurrent.futures.wait([future], timeout=10)  # its outcome no longer matters
            recorder.note("The answer was cancelled.")
            return AgentResult("", "cancelled", 0, 0)
        if res.stopped == "cancelled":
            recorder.note("The answer was cancelled.")
        elif res.text:
            recorder.reply(res.text)
        if res.text and not res.text.endswith("\n"):
            sys.stdout.write("\n")
        if res.note:
            echo(res.note, err=True)
        if recorder.problem and recorder.problem != told:
            told = recorder.problem
            echo(f"hearthside: {recorder.problem}", err=True)
        return res

    try:
        if not interactive:
            if ask(message or "").stopped == "cancelled":
                raise HandledError("cancelled: you interrupted the answer.")
            return
        echo(f"Chatting with {persona}. Type /exit or press Ctrl-D to stop.", err=True)
        while True:
            try:
                line = input("you> " if sys.stdin.isatty() else "")
            except EOFError:
                break
            if line.strip() in ("/exit", "/quit"):
                break
            if line.strip():
                ask(line)
    finally:
        app.runtime.run(model.aclose(), timeout=10)
