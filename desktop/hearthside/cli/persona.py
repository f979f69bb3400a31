"""``hearthside persona list|new|add|remove|compose``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from ..app.personas import PersonaError
from ..core.compose import secret_finding
from ..core.termsafe import visible_line
from .common import HandledError, echo, emit_json, get_app, handled, json_option

if TYPE_CHECKING:
    from ..app.context import AppContext


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
        echo("No personas yet. Create one with: hearthside persona new NAME")
    for i in infos:
        state = "" if i.exists else "  (folder missing)"
        count = f"{len(i.files)} file{'' if len(i.files) == 1 else 's'}"
        # one persona = one line: a newline, tab or bidi override in a folder name is an escape
        echo(f"{visible_line(i.name)}\t{visible_line(str(i.path))}\t{count}{state}")


@persona.command("new")
@click.argument("name")
@click.option("--call-me", "call_me", default=None, metavar="TEXT",
              help="What the persona calls you (goes into USER.md).")
@click.option("--character", default=None, metavar="TEXT",
              help="Its character in a sentence, e.g. 'cheerful and chatty' (replaces the starter's in SOUL.md).")
@click.pass_context
def new_cmd(ctx: click.Context, name: str, call_me: str | None, character: str | None) -> None:
    """Create a new persona folder from the starter templates (never overwrites).

    The options are the welcome window's questions; both go through the same service."""
    for option, value in (("--call-me", call_me), ("--character", character)):
        if value is not None and not value.strip():
            raise HandledError(f"{option} was given an empty answer; give some words, or leave "
                               f"{option} out to keep the starter text.")
    with handled(PersonaError):
        path = get_app(ctx).personas.create(name, user_name=call_me or "", character=character or "")
    echo(f"Created {path}. Open the files in a text editor and make them yours.")


@persona.command("add")
@click.argument("folder", type=click.Path(file_okay=True, dir_okay=True))
@click.option("--name", default="", help="The persona's name (default: the folder's name).")
@click.pass_context
def add_cmd(ctx: click.Context, folder: str, name: str) -> None:
    """Use an existing folder (an OpenClaw workspace, a Hermes home) as a persona, as it is."""
    with handled(PersonaError):
        info = get_app(ctx).personas.add_folder(folder, name)
    found = ", ".join(info.files) if info.files else "no persona files yet"
    echo(f"Added {info.path} as persona {info.name!r} ({found}). Its files stay as they are.")


@persona.command("remove")
@click.argument("name")
@click.pass_context
def remove_cmd(ctx: click.Context, name: str) -> None:
    """Stop using a folder you added (its files are not touched)."""
    with handled(PersonaError):
        path = get_app(ctx).personas.remove_folder(name)
    echo(f"Hearthside no longer uses {path}. Nothing in that folder was changed.")


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
    with handled(PersonaError):
        comp = app.personas.compose(directory, approved_links=_approved_links(app, directory))
    for name, reason in comp.skipped.items():
        echo(f"note: {name} was skipped: {reason}", err=True)
    for name, finding in comp.findings.items():
        echo(f"warning: {name} contains an {finding}", err=True)
    for name, what in comp.secrets.items():  # said, not masked: the model gets it as shown
        echo(f"warning: {secret_finding(name, what)}", err=True, shapes=False)
    for note in comp.extras.values():
        echo(f"note: {note}", err=True)
    # What is shown is exactly what the model gets: only the keyring's own secrets are masked
    # (they never appear anywhere in clear); a password the user wrote into a persona file is
    # shown, with the warning above, instead of a mask that hides what really goes out.
    if as_json:
        emit_json({
            "soul": comp.soul,
            "found": list(comp.found),
            "skipped": comp.skipped,
            "findings": comp.findings,
            "secrets": comp.secrets,
            "truncated": list(comp.truncated),
            "extras": comp.extras,
        }, shapes=False)
    else:
        echo(comp.soul, shapes=False)


def _approved_links(app: AppContext, directory: str) -> dict[str, str]:
    """Links out of the folder the user approved (``soul approve``); none when the approvals
    cannot be read, so an unreadable state dir never lets a link through."""
    try:
        links: dict[str, str] = app.drift.approved_links(os.path.expanduser(directory))
    except Exception:  # noqa: BLE001 - no approvals known: every outside link stays out
        return {}
    return links
