"""``hearthside persona list|new|compose``."""

from __future__ import annotations

import os

import click

from ..app.personas import PersonaError
from .common import HandledError, emit_json, get_app, json_option


@click.group()
def persona() -> None:
    """List, create and compose personas."""


@persona.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the personas Hearthside knows."""
    infos = get_app(ctx).personas.list()
    if as_json:
        emit_json([i.as_dict() for i in infos])
        return
    if not infos:
        click.echo("No personas yet. Create one with: hearthside persona new NAME")
    for i in infos:
        state = "" if i.exists else "  (folder missing)"
        click.echo(f"{i.name}\t{i.path}\t{len(i.files)} files{state}")


@persona.command("new")
@click.argument("name")
@click.pass_context
def new_cmd(ctx: click.Context, name: str) -> None:
    """Create a new persona folder from the starter templates (never overwrites)."""
    try:
        path = get_app(ctx).personas.create(name)
    except PersonaError as exc:
        raise HandledError(str(exc)) from exc
    click.echo(f"Created {path}. Open the files in a text editor and make them yours.")


@persona.command("compose")
@click.argument("directory", type=click.Path(file_okay=True, dir_okay=True))
@json_option
@click.pass_context
def compose_cmd(ctx: click.Context, directory: str, as_json: bool) -> None:
    """Show the prompt composed from a persona folder (DIRECTORY may also be a persona's name)."""
    app = get_app(ctx)
    if not os.path.lexists(os.path.expanduser(directory)):
        # `persona compose Kip` is what users type after `persona new Kip`: use that folder.
        try:
            directory = str(app.personas.get(directory).path)
        except PersonaError:
            pass
    try:
        comp = app.personas.compose(directory)
    except PersonaError as exc:
        raise HandledError(str(exc)) from exc
    for name, reason in comp.skipped.items():
        click.echo(f"note: {name} was skipped: {reason}", err=True)
    for name, finding in comp.findings.items():
        click.echo(f"warning: {name} contains an {finding}", err=True)
    if as_json:
        emit_json({
            "soul": comp.soul,
            "found": list(comp.found),
            "skipped": comp.skipped,
            "findings": comp.findings,
            "truncated": list(comp.truncated),
        })
    else:
        click.echo(comp.soul)
