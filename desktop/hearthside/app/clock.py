"""The system's time zone by its IANA name, and the ``Current time:`` line for a persona.

The zone is looked up again at every call (``TZ``, then the ``/etc/localtime`` link, then
``/etc/timezone``) so a time-zone change while Hearthside runs is noticed at the next wake
rather than at the next launch; ``datetime.astimezone()`` alone keeps the zone of the start.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo

from ..core.heartbeat import resolve_timezone, utcnow
from ..core.schedule import time_line


def _zone(name: str) -> ZoneInfo | None:
    name = name.strip().lstrip(":")
    if not name or name.startswith("/") or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return None


def system_zone() -> tuple[tzinfo, str]:
    """The system's zone and the name to show for it (an IANA name where one can be found)."""
    tz = os.environ.get("TZ", "")
    if tz and (zone := _zone(tz)) is not None:
        return zone, tz.strip().lstrip(":")
    try:
        link = os.readlink("/etc/localtime")
    except OSError:
        link = ""
    if "zoneinfo/" in link:
        name = link.split("zoneinfo/", 1)[1]
        if (zone := _zone(name)) is not None:
            return zone, name
    try:
        with open("/etc/timezone", encoding="utf-8") as fh:
            name = fh.readline(200).strip()
    except OSError:
        name = ""
    if name and (zone := _zone(name)) is not None:
        return zone, name
    time.tzset()  # no name anywhere: the offset libc reports now, under its abbreviation
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local, local.tzname(None) or "UTC"


def persona_zone(timezone: str) -> tuple[tzinfo, str]:
    """The persona's check-in zone when set and known, else the system's."""
    if timezone.strip():
        try:
            zone = resolve_timezone(timezone.strip())
        except ValueError:
            zone = None
        if zone is not None:
            return zone, timezone.strip()
    return system_zone()


def current_time_line(timezone: str = "", now: datetime | None = None) -> str:
    """``Current time: Tuesday 2026-12-01 14:05 (Europe/Berlin).`` for a chat message."""
    zone, name = persona_zone(timezone)
    return time_line(now or utcnow(), zone, name, with_last=False)
