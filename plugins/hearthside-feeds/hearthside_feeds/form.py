"""The pack's settings forms in the Plugins window: follow a feed, import an OPML file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hearthside.plugin import FormField, PackConfigError, SettingsForm, shown_url

from . import store
from .commands import import_file


def _add(values: Mapping[str, str]) -> str:
    try:
        store.add(values.get("url", ""), values.get("persona", ""))
    except (store.FeedListError, PackConfigError) as exc:
        return str(exc).rstrip(".") + "."
    return ""


def _items() -> Sequence[tuple[str, str]]:
    try:
        return [(f["url"], f"{shown_url(f['url'])} — {f['persona'] or 'every persona'}") for f in store.feeds()]
    except PackConfigError:
        return []


def _remove(url: str) -> str:
    try:
        return "" if store.remove(url) else f"{shown_url(url)} is not followed."
    except PackConfigError as exc:
        return str(exc).rstrip(".") + "."


def _import(values: Mapping[str, str]) -> str:
    message, ok = import_file(values.get("path", ""), values.get("persona", ""))
    return "" if ok else message.rstrip(".") + "."


def forms() -> list[SettingsForm]:
    return [
        SettingsForm(
            title="Feeds",
            help="RSS and Atom feeds your personas can read with feeds_new and feeds_search. "
                 "Leave the persona empty for every persona.",
            fields=(FormField("url", "Feed address", "url", required=True,
                              placeholder="https://example.org/feed.xml"),
                    FormField("persona", "Persona", "text", help="Empty: every persona")),
            submit=_add, submit_label="Add feed", items=_items, remove=_remove,
        ),
        SettingsForm(
            title="Import feeds (OPML)",
            help="Follow every feed in an OPML file exported from another feed reader.",
            fields=(FormField("path", "OPML file", "path", required=True),
                    FormField("persona", "Persona", "text", help="Empty: every persona")),
            submit=_import, submit_label="Import",
        ),
    ]
