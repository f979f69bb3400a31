"""``hearthside feeds ...``: add, list, remove and import-opml (plugin API 1.1 commands)."""

from __future__ import annotations

import json

import click
from hearthside.plugin import PackConfigError, shown_url

from . import opml, store


def _fail(message: str) -> click.ClickException:
    return click.ClickException(message.rstrip(".") + ".")


@click.group("feeds", help="RSS and Atom feeds your personas follow (the feeds pack).")
def feeds() -> None:
    pass


@feeds.command("add", help="Follow the feed at URL (https://, or http:// on this computer).")
@click.argument("url")
@click.option("--persona", "-p", default="", help="Only this persona sees it (default: every persona).")
def add(url: str, persona: str) -> None:
    try:
        added = store.add(url, persona)
    except (store.FeedListError, PackConfigError) as exc:
        raise _fail(str(exc)) from None
    who = f"the persona {persona.strip()}" if persona.strip() else "every persona"
    click.echo(f"Added {shown_url(added)} for {who}.")


@feeds.command("list", help="The feeds followed, and by whom.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def list_(as_json: bool) -> None:
    try:
        items = store.feeds()
    except PackConfigError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        click.echo(json.dumps([{"url": f["url"], "persona": f["persona"]} for f in items], indent=2))
        return
    if not items:
        click.echo("No feeds yet; add one with 'hearthside feeds add URL'.")
    for f in items:
        click.echo(f"{f['url']}  ({f['persona'] or 'every persona'})")


@feeds.command("remove", help="Stop following the feed at URL.")
@click.argument("url")
def remove(url: str) -> None:
    try:
        gone = store.remove(url)
    except PackConfigError as exc:
        raise _fail(str(exc)) from None
    if not gone:
        raise _fail(f"no feed {shown_url(url)} is followed; 'hearthside feeds list' shows them")
    click.echo(f"Removed {shown_url(url)}.")


@feeds.command("import-opml", help="Follow every feed in an OPML file another reader exported.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--persona", "-p", default="", help="Only this persona sees them (default: every persona).")
def import_opml(file: str, persona: str) -> None:
    message, ok = import_file(file, persona)
    if not ok:
        raise _fail(message)
    click.echo(message)


def import_file(file: str, persona: str = "") -> tuple[str, bool]:
    """Import ``file``: (one or two sentences, whether anything usable was in it)."""
    try:
        urls = opml.feed_urls(file)
        added, refused = store.add_many((u, persona) for u in urls)
    except (opml.OpmlError, store.FeedListError, PackConfigError) as exc:
        return str(exc), False
    if not urls:
        return f"{file} lists no feeds (no outline has an xmlUrl)", False
    text = f"Imported {len(added)} of {len(urls)} feeds from {file}."
    if len(urls) - len(added) - len(refused) > 0:
        text += f" {len(urls) - len(added) - len(refused)} were already followed."
    if refused:
        text += f" {len(refused)} skipped: " + "; ".join(refused[:5]) + ("; …" if len(refused) > 5 else ".")
    return text, True
