"""The three read-only tools: ``calendar_agenda``, ``calendar_next``, ``calendar_search``.

They only read (the user's calendars, the pack's cache), so a check-in may call them
unattended. Each runs its work on a worker thread (``asyncio.to_thread``): fetching may wait up
to a few seconds and parsing a large calendar takes a moment, and neither may hold the loop.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from hearthside.plugin import PackSecretError, PackSettings, Tool, ToolEnv, ToolResult, ToolSpec

from .agenda import MAX_DAYS, MAX_NEXT, Agenda, QueryError, zone_for
from .service import CalendarService, shared


class CalendarTool:
    """One calendar tool: a spec and a function of (agenda, zone, arguments)."""

    read_only = True

    def __init__(self, spec: ToolSpec, run: Callable[[Agenda, dt.tzinfo, Mapping[str, Any]], str],
                 settings: PackSettings | None, service: Callable[[], CalendarService]) -> None:
        self._spec = spec
        self._run = run
        self._settings = settings
        self._service = service

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        tz = zone_for(env.persona, self._settings)
        agenda = Agenda(self._service())
        try:
            return ToolResult(await asyncio.to_thread(self._run, agenda, tz, args))
        except QueryError as exc:
            return ToolResult.error(str(exc))
        except PackSecretError as exc:
            return ToolResult.error(f"the calendars cannot be read: {exc}")
        except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a traceback
            return ToolResult.error(f"the calendars could not be read ({type(exc).__name__}: {str(exc)[:200]})")


def make_tools(settings: PackSettings | None = None,
               service: Callable[[], CalendarService] = shared) -> list[Tool]:
    iso = {"type": "string", "description": "An ISO date (2026-12-01) or date and time (2026-12-01T14:00); "
                                            "without a zone it is the user's local time."}
    agenda = ToolSpec(
        "calendar_agenda",
        "What is on the user's calendars between two times (default: from now to the end of today). "
        "One line an event: day, start–end in local time, title, (place), [calendar].",
        {"type": "object", "properties": {"from": iso, "to": {**iso, "description": iso["description"]
                                                              + " A date alone means the end of that day."}}},
    )
    nxt = ToolSpec(
        "calendar_next",
        "The user's next events from now on (the next meeting, appointment...), soonest first.",
        {"type": "object", "properties": {"count": {"type": "integer", "minimum": 1, "maximum": MAX_NEXT,
                                                    "description": "How many events (default 1)."}}},
    )
    search = ToolSpec(
        "calendar_search",
        "Find events in the coming days whose title, place or description contains a text.",
        {"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string", "description": "A word or phrase, case-insensitive."},
            "days": {"type": "integer", "minimum": 1, "maximum": MAX_DAYS,
                     "description": "How many days ahead to look (default 30)."}}},
    )
    return [
        CalendarTool(agenda, lambda a, tz, args: a.agenda(tz, args.get("from"), args.get("to")), settings, service),
        CalendarTool(nxt, lambda a, tz, args: a.next(tz, args.get("count", 1)), settings, service),
        CalendarTool(search, lambda a, tz, args: a.search(tz, args.get("text"), args.get("days", 30)),
                     settings, service),
    ]
