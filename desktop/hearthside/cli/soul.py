"""``hearthside soul show`` (drift commands join this group)."""

from __future__ import annotations

import os

import click

from ..core.soul import SoulStore
from .common import emit_json, get_app, json_option


@click.group()
def soul() -> None:
    """Look at your user soul (soul.md) and its approval state."""


@soul.command("show")
@click.option("--soul-file", type=click.Path(dir_okay=True), help="Read this file instead.")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, soul_file: str | None, as_json: bool) -> None:
    """Show the soul as it reaches the prompt, or why it is not used."""
    path = get_app(ctx).soul_path(soul_file)
    res = SoulStore(path).load_with_meta()
    if as_json:
        emit_json({
            "path": res.path,
            "body": res.body,
            "sha256": res.sha256,
            "size": res.size,
            "rejected": bool(res.reason) and os.path.lexists(res.path),
            "reason": res.reason,
        })
        return
    click.echo(f"path: {res.path}")
    if res.reason:
        click.echo(f"not used: {res.reason}")
        return
    click.echo(f"sha256: {res.sha256}\nsize: {res.size} bytes\n")
    click.echo(res.body)
