"""``hearthside chats list|search|export|delete``: a persona's kept conversations.

The same service as the chat window's sidebar (``app/conversations.py``). ``export`` refuses to
replace an existing file unless ``--force`` is given (a command never asks: it may run without a
terminal, and a file the user meant to keep is not worth a guess). ``delete`` removes the
conversation for good at once: the window's *Undo* is for a person who can click it.
"""

from __future__ import annotations

import time
from typing import Any

import click

from ..core.conversations import ConversationMeta, meta_as_json
from ..core.errors import ServiceError
from .common import HandledError, echo, emit_json, get_app, json_option


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _row(meta: ConversationMeta) -> str:
    flag = "  [read-only]" if meta.read_only else ""
    line = f"{meta.id}  {_day(meta.updated)}  {meta.messages:>4} messages  {meta.title}{flag}"
    return "\n".join([line, *(f"    {p}" for p in meta.problems)])


def _service(ctx: click.Context) -> Any:
    return get_app(ctx).conversations


def _known_persona(ctx: click.Context, persona: str) -> bool:
    """Whether ``persona`` exists; a removed persona with kept conversations is listed too,
    any other unknown name is refused in one sentence."""
    from ..app.personas import PersonaError

    app = get_app(ctx)
    try:
        app.personas.get(persona)
        return True
    except PersonaError as exc:
        try:
            has = any(p.name == persona for p in app.conversations.personas())
        except ServiceError:
            has = False
        if not has:
            raise HandledError(str(exc)) from exc
        return False


@click.group()
def chats() -> None:
    """List, search, export and delete a persona's kept conversations."""


@chats.command("list")
@click.argument("persona")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, persona: str, as_json: bool) -> None:
    """List PERSONA's conversations, newest first (also those of a removed persona)."""
    exists = _known_persona(ctx, persona)
    try:
        metas = _service(ctx).list(persona)
    except ServiceError as exc:
        raise HandledError(str(exc)) from exc
    if as_json:
        emit_json([meta_as_json(m) for m in metas])
        return
    if not exists:
        echo(f"note: there is no persona {persona!r} any more; its conversations are kept until you delete "
             "them.", err=True)
    if not metas:
        echo(f"{persona} has no kept conversations yet.")
    for meta in metas:
        echo(_row(meta))


@chats.command("search")
@click.argument("persona")
@click.argument("query")
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, persona: str, query: str, as_json: bool) -> None:
    """Search all of PERSONA's conversations for QUERY (best first)."""
    _known_persona(ctx, persona)
    try:
        hits = _service(ctx).search(persona, query)
    except ServiceError as exc:
        raise HandledError(str(exc)) from exc
    if as_json:
        emit_json([{**meta_as_json(h.meta), "score": round(h.score, 4), "snippet": h.snippet} for h in hits])
        return
    if not hits:
        echo(f"No conversation of {persona} matches {query!r}.")
    for h in hits:
        echo(f"{_row(h.meta)}\n    {h.snippet}")


@chats.command("export")
@click.argument("conversation_id", metavar="ID")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.pass_context
def export_cmd(ctx: click.Context, conversation_id: str, file: str, force: bool) -> None:
    """Write the conversation ID to FILE as Markdown (an existing FILE is kept unless --force)."""
    try:
        path = _service(ctx).export(conversation_id, file, overwrite=force)
    except ServiceError as exc:
        raise HandledError(str(exc)) from exc
    echo(f"Exported conversation {conversation_id.strip()} to {path}.")


@chats.command("delete")
@click.argument("conversation_id", metavar="ID")
@click.pass_context
def delete_cmd(ctx: click.Context, conversation_id: str) -> None:
    """Delete the conversation ID for good (learned memory is not touched)."""
    service = _service(ctx)
    try:
        meta = service.meta(conversation_id)
        gone = service.delete(conversation_id)
        service.forget_deleted(gone.id)
    except ServiceError as exc:
        raise HandledError(str(exc)) from exc
    echo(f"Deleted conversation {gone.id} of {gone.persona} ({meta.title}).")
