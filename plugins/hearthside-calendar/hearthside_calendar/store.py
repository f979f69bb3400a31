"""Which calendars the user has: the list in ``pack_config("calendar")``, secrets in the keyring.

A calendar entry in the config holds its name, kind, a display form of its source and, for a
CalDAV account, the address and user name. What is a credential stays in the keyring, under
``pack_secrets("calendar")``: a CalDAV password, and the full address of an ICS subscription
(a "secret address" such as Google's carries the token that lets anyone read the calendar).
So the config file and the cache never hold anything a reader could log in with.
"""

from __future__ import annotations

import datetime as dt
import secrets as _random
from dataclasses import dataclass
from typing import Any

from hearthside.plugin import PackSecretError, pack_config, pack_secrets

from .sources import Source, SourceError, display_location, parse_source

PACK = "calendar"
MAX_CALENDARS = 50
MAX_NAME = 60


@dataclass(frozen=True)
class CalendarEntry:
    """One configured calendar (nothing secret in it)."""

    id: str
    name: str
    kind: str
    display: str
    location: str = ""  # a path, or a CalDAV address; "" for an ICS subscription (in the keyring)
    user: str = ""

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> CalendarEntry | None:
        try:
            return cls(str(raw["id"]), str(raw["name"]), str(raw["kind"]), str(raw.get("display", "")),
                       str(raw.get("location", "")), str(raw.get("user", "")))
        except (KeyError, TypeError):
            return None

    def describe(self) -> str:
        """One line for lists and the settings window."""
        kind = {"file": "file", "ics": "subscription", "caldav": "CalDAV"}.get(self.kind, self.kind)
        user = f" as {self.user}" if self.user else ""
        return f"{self.name}: {kind} {self.display}{user}"


def entries() -> list[CalendarEntry]:
    doc = pack_config(PACK).load()
    raw = doc.get("calendars", []) if isinstance(doc, dict) else []
    out = [CalendarEntry.from_json(r) for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
    return [e for e in out if e is not None]


def check_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise SourceError("give the calendar a name")
    if len(name) > MAX_NAME or any(ord(c) < 32 for c in name):
        raise SourceError(f"a calendar name is at most {MAX_NAME} printable characters")
    return name


def add(name: str, source_text: str, user: str = "", password: str = "") -> CalendarEntry:
    """Add (or replace, by name) a calendar; raises SourceError/PackSecretError with a sentence."""
    name = check_name(name)
    src: Source = parse_source(source_text, user.strip())
    if src.kind == "caldav" and not password:
        raise SourceError("a CalDAV calendar needs a password (asked for, or --password-stdin)")
    entry_id = _random.token_hex(6)
    entry = CalendarEntry(entry_id, name, src.kind, display_location(src) if src.kind != "ics" else _short(src),
                          "" if src.kind == "ics" else src.location, user.strip())
    box = pack_secrets(PACK)
    if src.kind == "ics":
        box.set(f"{entry_id}/url", src.location)
    if src.kind == "caldav":
        box.set(f"{entry_id}/password", password)
    replaced: list[CalendarEntry] = []

    def mutate(doc: dict[str, Any]) -> None:
        cals = [c for c in doc.get("calendars", []) if isinstance(c, dict)]
        keep = [c for c in cals if str(c.get("name", "")).casefold() != name.casefold()]
        replaced.extend(e for e in (CalendarEntry.from_json(c) for c in cals if c not in keep) if e)
        if len(keep) >= MAX_CALENDARS:
            raise SourceError(f"at most {MAX_CALENDARS} calendars can be added")
        keep.append({"id": entry.id, "name": entry.name, "kind": entry.kind, "display": entry.display,
                     "location": entry.location, "user": entry.user,
                     "added": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        doc["calendars"] = keep

    try:
        pack_config(PACK).update(mutate)
    except Exception:
        _forget_secrets(entry)
        raise
    for old in replaced:
        _forget_secrets(old)
    return entry


def remove(name: str) -> CalendarEntry | None:
    """Remove a calendar by name (or id) with its secrets; None when there is no such calendar."""
    gone: list[CalendarEntry] = []
    key = " ".join(name.split()).casefold()

    def mutate(doc: dict[str, Any]) -> None:
        cals = [c for c in doc.get("calendars", []) if isinstance(c, dict)]
        keep = [c for c in cals if str(c.get("name", "")).casefold() != key and str(c.get("id", "")) != name]
        gone.extend(e for e in (CalendarEntry.from_json(c) for c in cals if c not in keep) if e)
        doc["calendars"] = keep

    pack_config(PACK).update(mutate)
    for e in gone:
        _forget_secrets(e)
    return gone[0] if gone else None


def _forget_secrets(entry: CalendarEntry) -> None:
    try:
        box = pack_secrets(PACK)
        for what in ("url", "password"):
            box.delete(f"{entry.id}/{what}")
    except PackSecretError:
        pass


def location_of(entry: CalendarEntry) -> str:
    """The address to fetch (from the keyring for a subscription); raises PackSecretError."""
    if entry.kind == "ics":
        url = pack_secrets(PACK).get(f"{entry.id}/url")
        if not url:
            raise SourceError(f"the address of {entry.name} is missing from the keyring; add the calendar again")
        return url
    return entry.location


def password_of(entry: CalendarEntry) -> str:
    pw = pack_secrets(PACK).get(f"{entry.id}/password")
    if not pw:
        raise SourceError(f"the password of {entry.name} is missing from the keyring; add the calendar again")
    return pw


def _short(src: Source) -> str:
    """A subscription shown without its path (which may be the secret): ``https://host/…``."""
    import urllib.parse

    parts = urllib.parse.urlsplit(src.location)
    return f"{parts.scheme}://{parts.netloc}/…"
