"""``hearthside memory list|search|inspect|remember|forget|undo|repair --persona NAME``."""

from __future__ import annotations

import time
from typing import Any

import click

from ..core.memory import MemoryStoreError
from ..core.memory.model import VersionConflictError
from .common import HandledError, echo, emit_json, get_app, handled, json_option, require_persona

persona_option = click.option("--persona", "persona", required=True, help="The persona whose memory to use.")


def _store(ctx: click.Context, persona: str) -> Any:
    app = get_app(ctx)
    require_persona(app, persona)
    with handled(ValueError):
        return app.memory.store(persona)


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


@click.group()
def memory() -> None:
    """Review and correct what a persona has learned (kept apart from its folder)."""


@memory.command("list")
@persona_option
@click.option("--prefix", default="", help="Only keys starting with this.")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, persona: str, prefix: str, as_json: bool) -> None:
    """List memories with their values."""
    with handled(MemoryStoreError):
        entries = _store(ctx, persona).list(prefix)
    if as_json:
        emit_json([e.as_dict() for e in entries])
        return
    if not entries:
        echo(f"{persona} has no memory under {prefix!r}." if prefix
                   else f"{persona} has not learned anything yet.")
    for e in entries:
        flag = f"  [flagged: {e.finding}]" if e.finding else ""
        echo(f"{e.key}  ({e.version}, {_day(e.updated_at)}){flag}\n    {e.value}")


@memory.command("search")
@persona_option
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 50))
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, persona: str, query: str, limit: int, as_json: bool) -> None:
    """Search memories by words (best first)."""
    with handled(MemoryStoreError):
        hits = _store(ctx, persona).search(query, limit)
    if as_json:
        emit_json([e.as_dict(with_value=False) for e in hits])
        return
    if not hits:
        echo("No memory matches.")
    for e in hits:
        echo(f"{e.key}\t{e.description}")


@memory.command("inspect")
@persona_option
@click.argument("key")
@json_option
@click.pass_context
def inspect_cmd(ctx: click.Context, persona: str, key: str, as_json: bool) -> None:
    """Show a memory's current version and its history."""
    with handled(MemoryStoreError):
        rec = _store(ctx, persona).inspect(key)
    if rec is None:
        raise HandledError(f"{persona} has no memory {key!r}. See 'hearthside memory list --persona {persona}'.")
    if as_json:
        emit_json(rec.as_dict())
        return
    echo(f"{key}: current version {rec.current.version} ({rec.current.status})"
               + ("; older history was dropped" if rec.truncated else ""))
    for r in rec.revisions:
        flag = f" [flagged: {r.finding}]" if r.finding else ""
        echo(f"  {r.version}  {r.status:<10} {r.writer}/{r.origin}  {_day(r.updated_at)}{flag}\n      {r.value}")


@memory.command("remember")
@persona_option
@click.argument("key")
@click.argument("value")
@click.option("--description", default="", help="One line shown in the prompt's memory index.")
@json_option
@click.pass_context
def remember_cmd(ctx: click.Context, persona: str, key: str, value: str, description: str, as_json: bool) -> None:
    """Add or change a memory yourself."""
    if not value.strip():
        raise HandledError(f"the value for {key!r} is empty; to remove a memory, use "
                           f"'hearthside memory forget {key} --persona {persona} --version ...'.")
    with handled(MemoryStoreError):
        rec = _store(ctx, persona).remember(key, value, description, writer="user")
    if as_json:
        emit_json(rec.current.as_dict())
    else:
        echo(f"Saved {key} (version {rec.current.version}).")


@memory.command("forget")
@persona_option
@click.argument("key")
@click.option("--version", "version", required=True, help="The current version (see 'memory inspect').")
@json_option
@click.pass_context
def forget_cmd(ctx: click.Context, persona: str, key: str, version: str, as_json: bool) -> None:
    """Forget a memory (it stays in history and can be undone)."""
    try:
        rec = _store(ctx, persona).forget(key, version)
    except VersionConflictError as exc:
        # No current value (never saved, or already forgotten): "current is 'none'" explains nothing.
        if exc.actual:
            raise HandledError(str(exc)) from exc
        rec = None
    except MemoryStoreError as exc:
        raise HandledError(str(exc)) from exc
    if rec is None:
        raise HandledError(f"{persona} has no current memory {key!r} to forget "
                           f"(see 'hearthside memory inspect {key} --persona {persona}').")
    if as_json:
        emit_json(rec.as_dict())
    else:
        echo(f"Forgot {key}. Undo with: hearthside memory undo --persona {persona} {key} "
                   f"--version {rec.current.version}")


@memory.command("undo")
@persona_option
@click.argument("key")
@click.option("--version", "version", required=True, help="The current version (see 'memory inspect').")
@json_option
@click.pass_context
def undo_cmd(ctx: click.Context, persona: str, key: str, version: str, as_json: bool) -> None:
    """Undo the latest change to a memory."""
    with handled(MemoryStoreError):
        rec = _store(ctx, persona).undo(key, version)
    if as_json:
        emit_json(rec.as_dict())
    else:
        state = "restored" if rec.exists else "removed"
        echo(f"Undid the latest change to {key}: value {state} (version {rec.current.version}).")


@memory.command("repair")
@persona_option
@click.pass_context
def repair_cmd(ctx: click.Context, persona: str) -> None:
    """Move a damaged memory file aside (kept) so the persona can learn again."""
    with handled(MemoryStoreError):
        moved = _store(ctx, persona).repair()
    if moved is None:
        echo(f"{persona}'s memory file is fine; nothing to repair.")
    else:
        echo(f"Moved the damaged file to {moved}; {persona} starts with an empty memory.")
