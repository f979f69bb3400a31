"""The "Calendars" form on the pack's page in the Plugins window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hearthside.plugin import FormField, PackConfigError, PackSecretError, SettingsForm

from . import store
from .service import shared
from .sources import SourceError


def _submit(values: Mapping[str, str]) -> str:
    try:
        entry = store.add(values.get("name", ""), values.get("source", ""), values.get("user", ""),
                          values.get("password", ""))
    except (SourceError, PackSecretError, PackConfigError, ValueError) as exc:
        return _sentence(str(exc))
    shared().forget(entry.id)
    if entry.kind != "file":
        done = shared().refresh(entry, force=True)
        if done is not None:
            done.wait(20)
    view = shared().view(entry)
    if view.parsed is None and view.notes:
        return _sentence(f"{view.notes[0]} (the calendar was added; it will be tried again)")
    return ""


def _items() -> Sequence[tuple[str, str]]:
    try:
        return [(e.id, e.describe()) for e in store.entries()]
    except PackConfigError as exc:
        return [("", str(exc))]


def _remove(key: str) -> str:
    try:
        gone = store.remove(key)
    except (PackConfigError, PackSecretError) as exc:
        return _sentence(str(exc))
    if gone is None:
        return "That calendar is already gone."
    shared().forget(gone.id)
    return ""


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "." if text else text


def calendars_form() -> SettingsForm:
    return SettingsForm(
        title="Calendars",
        help="Calendars your personas may read (never change): an .ics file, a subscription address "
             "(https:// or webcal://), or a CalDAV account with its user name and password. "
             "Passwords and subscription addresses are kept in the keyring.",
        fields=(
            FormField("name", "Name", required=True, placeholder="Work"),
            FormField("source", "File or address", kind="text", required=True,
                      placeholder="~/calendar.ics, https://…/basic.ics, caldav://server/…",
                      help="A file path, an ICS address, or a CalDAV address (with a user name)."),
            FormField("user", "CalDAV user name", help="Only for a CalDAV account."),
            FormField("password", "CalDAV password", kind="password", help="Only for a CalDAV account."),
        ),
        submit=_submit,
        submit_label="Add calendar",
        items=_items,
        remove=_remove,
    )
