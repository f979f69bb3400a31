"""``hearthside calendar add|list|remove``: the calendars from the command line.

A CalDAV password is asked for without echo, or read from standard input with
``--password-stdin`` (for scripts); it goes to the keyring, never to a file or the screen.
"""

from __future__ import annotations

import json
import sys

import click
from hearthside.plugin import PackConfigError, PackSecretError

from . import store
from .service import shared
from .sources import SourceError


@click.group(name="calendar", help="Calendars a persona can read (ICS files, subscriptions, CalDAV).")
def calendar_group() -> None:
    pass


@calendar_group.command(name="add")
@click.argument("name")
@click.argument("source")
@click.option("--user", default="", help="User name of a CalDAV account.")
@click.option("--password-stdin", is_flag=True, help="Read the CalDAV password from standard input.")
def add_cmd(name: str, source: str, user: str, password_stdin: bool) -> None:
    """Add NAME from SOURCE: a file path, an ICS address (https://, webcal://) or a CalDAV
    address (caldav://... or https://... with --user)."""
    password = ""
    if user:
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        else:
            password = click.prompt(f"Password for {user}", hide_input=True, default="", show_default=False)
    try:
        entry = store.add(name, source, user, password)
    except (SourceError, PackSecretError, PackConfigError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    shared().forget(entry.id)
    click.echo(f"Added {entry.describe()}.")
    if entry.kind != "file":
        done = shared().refresh(entry, force=True)
        if done is not None:
            done.wait(25)
        view = shared().view(entry)
        for note in view.notes:
            click.echo(note)
        if view.parsed is not None and not view.notes:
            click.echo(f"Fetched: {view.parsed.events} events.")


@calendar_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(as_json: bool) -> None:
    """The calendars that are set up (no secret is shown)."""
    try:
        entries = store.entries()
    except PackConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps([{"name": e.name, "kind": e.kind, "source": e.display, "user": e.user}
                               for e in entries], indent=2))
        return
    if not entries:
        click.echo("No calendars. Add one with: hearthside calendar add NAME SOURCE")
    for e in entries:
        click.echo(e.describe())


@calendar_group.command(name="remove")
@click.argument("name")
def remove_cmd(name: str) -> None:
    """Remove calendar NAME, its password or address in the keyring, and its cached copy."""
    try:
        gone = store.remove(name)
    except (PackConfigError, PackSecretError) as exc:
        raise click.ClickException(str(exc)) from None
    if gone is None:
        raise click.ClickException(f"there is no calendar named {name!r}; see `hearthside calendar list`")
    shared().forget(gone.id)
    click.echo(f"Removed {gone.name}.")
