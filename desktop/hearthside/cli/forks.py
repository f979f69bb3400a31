"""``hearthside forks list|show|apply|discard``: review what writing specialists changed.

A specialist that writes works on a fork (a copy) of the workspace; these commands show its
changes and bring them back (``apply``) or throw them away (``discard``). Every failure is one
sentence and exit code 1, with nothing written: an unknown id, a fork already applied or
discarded, a conflict (the file changed in the workspace since), a write the guard refuses.
"""

from __future__ import annotations

import time

import click

from ..app.forks import ForkError, ForkRecord
from .common import echo, emit_json, get_app, handled, json_option


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _row(rec: ForkRecord) -> dict[str, object]:
    return {"id": rec.id, "persona": rec.persona, "label": rec.label, "created": rec.created,
            "status": rec.status, "summary": rec.summary, "method": rec.method, "advisory": rec.advisory}


@click.group()
def forks() -> None:
    """Changes writing specialists made on a copy of the workspace, waiting for your review."""


@forks.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the forks that are being worked on or wait for review."""
    recs = get_app(ctx).forks.list()
    if as_json:
        emit_json([_row(r) for r in recs])
        return
    if not recs:
        echo("No forks are waiting for review.")
    for r in recs:
        state = "ready for review" if r.status == "ready" else "being worked on"
        echo(f"{r.id}  {r.persona or '-'}  {_when(r.created)}  {state}\n    {r.label}")


@forks.command("show")
@click.argument("fork_id", metavar="ID")
@click.pass_context
def show_cmd(ctx: click.Context, fork_id: str) -> None:
    """Show the fork's changes: files added, changed and removed, each file's diff."""
    with handled(ForkError):
        review = get_app(ctx).forks.show(fork_id)
    rec, diff = review.record, review.diff
    echo(f"Fork {rec.id} of {rec.persona or '-'}: {rec.label}")
    if rec.summary:
        echo(f"Summary: {rec.summary}")
    if rec.advisory:
        echo(rec.advisory)
    echo(f"{len(diff.added)} added, {len(diff.changed)} changed, {len(diff.removed)} removed")
    for f in review.files:
        echo(f"\n{f.change}: {f.name}" + (f" ({f.note})" if f.note else ""))
        if f.text:
            echo(f.text, nl=False)


@forks.command("apply")
@click.argument("fork_id", metavar="ID")
@click.pass_context
def apply_cmd(ctx: click.Context, fork_id: str) -> None:
    """Bring the fork's changes into the workspace (refused, with nothing written, on a conflict)."""
    with handled(ForkError):
        names = get_app(ctx).forks.apply(fork_id)
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    echo(f"Applied fork {fork_id}: {shown}." if names else f"Applied fork {fork_id}: it changed nothing.")


@forks.command("discard")
@click.argument("fork_id", metavar="ID")
@click.pass_context
def discard_cmd(ctx: click.Context, fork_id: str) -> None:
    """Throw the fork's changes away; the workspace is not touched."""
    with handled(ForkError):
        get_app(ctx).forks.discard(fork_id)
    echo(f"Discarded fork {fork_id}.")
