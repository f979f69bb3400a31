"""The heartbeat scheduler: per-persona check-ins on the runtime thread (contract section 5).

A tick asks :func:`hearthside.core.heartbeat.skip_reason` first (interval, pause, active hours,
empty checklist), then runs an unattended session with the heartbeat prompt and applies the
acknowledgement rule: silent, or a notification (de-duplicated over 24 h) plus a history entry.
Never two runs of one persona at once: within the process a tick that arrives during a run only
marks the persona as pending, so any number of piled-up ticks become one follow-up run; across
processes (tray + ``hearthside heartbeat run``) a non-blocking file lock per persona decides.

The schedule is the wall clock's, not a sleep's: one loop wakes at least every 30 seconds (or at
the next due slot), asks :mod:`hearthside.core.schedule` what is due for each persona from the
saved state (``schedule.json``), saves the new state *before* a run starts and writes every
slot's outcome to the ledger (``checkins.jsonl``). A suspend, a clock change or a time-zone
change is therefore seen at the next wake; a restart neither forgets a due check-in nor repeats
one. ``HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS`` still shortens the *interval* minutes (and the wake)
for tests and demos; set times, catch-up and clock jumps are always real wall-clock time.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..adapters.locks import LockBusy, LockUnusable, lock_for
from ..core.agent import Agent, ChatModel, ModelError
from ..core.compose import read_persona_file
from ..core.heartbeat import (
    HeartbeatSettings,
    check_hours,
    check_interval,
    check_timezone,
    classify_reply,
    is_duplicate,
    parse_hhmm,
    schedule_key_problems,
    settings_problem,
    skip_reason,
    usable_interval,
    usable_timeout,
    utcnow,
)
from ..core.redact import redact
from ..core.schedule import Schedule, ScheduleState, Slot, decide, next_due, time_line
from .checkins import CheckinLedger, ScheduleStore, SlotRecord, SlotStatus
from .clock import persona_zone
from .notify import NotificationHistory, Notifier, default_notifier, notifications_allowed
from .snooze import SnoozeStore, snoozed_reason

if TYPE_CHECKING:
    from .paths import AppPaths
    from .personas import PersonaService
    from .sessions import SessionService
    from .settings import SettingsStore

log = logging.getLogger(__name__)


HeartbeatStatus = Literal["silent", "notified", "skipped", "failed"]
#: The scheduler looks at the wall clock at least this often (seconds): a suspend, a clock or a
#: time-zone change is noticed within it, and an overdue check-in starts within a minute.
WAKE_SECONDS = 30.0


@dataclass(frozen=True)
class HeartbeatOutcome:
    """What one run did. ``warn``: the reason is a settings mistake the user must be told of."""

    persona: str
    status: HeartbeatStatus
    reason: str = ""
    text: str = ""
    warn: bool = False

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "reason": self.reason, "text": self.text}


def _is_minutes(value: object) -> bool:
    """A usable interval: 0 (check-ins off) or a number (or numeric text) of at least 1 minute."""
    return usable_interval(value) is not None


def _seconds_per_minute() -> float:
    """How long a settings 'minute' lasts: 60 s, unless ``HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS``
    shortens it for tests and demos (the one-minute floor applies to the setting, not to this)."""
    try:
        value = float(os.environ.get("HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS", "") or 60)
    except ValueError:
        return 60.0
    return value if math.isfinite(value) and value > 0 else 60.0


class ScheduleError(ValueError):
    """Check-in settings that cannot be saved; ``errors`` maps each field to its reason."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(" ".join(errors.values()))
        self.errors = errors


def schedule_errors(raw: dict[str, Any], overnight: bool | None = None) -> dict[str, str]:
    """Each field of a persona's check-in settings that is wrong, with the reason (pure).
    ``overnight`` None means "as stored": start after end is then a span past midnight."""
    out: dict[str, str] = {}
    if "heartbeat_interval_minutes" in raw:
        why = check_interval(raw["heartbeat_interval_minutes"])
        if why:
            out["heartbeat_interval_minutes"] = why
    start, end = str(raw.get("active_start", "") or ""), str(raw.get("active_end", "") or "")
    if overnight is None:
        try:
            overnight = bool(start and end and parse_hhmm(end) < parse_hhmm(start))
        except ValueError:
            overnight = False
    why = check_hours(start, end, overnight)
    if why:
        out["active_hours"] = why
    why = check_timezone(str(raw.get("timezone", "") or ""))
    if why:
        out["timezone"] = why
    out.update(schedule_key_problems(raw))
    return out


class HeartbeatDeps(Protocol):
    """The collaborators the heartbeat service uses (the app context provides them)."""

    @property
    def paths(self) -> AppPaths: ...

    @property
    def settings(self) -> SettingsStore: ...

    @property
    def personas(self) -> PersonaService: ...

    @property
    def sessions(self) -> SessionService: ...


class HeartbeatService:
    """Runs heartbeats for every persona on the app's runtime loop."""

    def __init__(self, app: HeartbeatDeps, notifier: Notifier | None = None, history: NotificationHistory | None = None,
                 model_factory: Callable[[], ChatModel] | None = None,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.app = app
        self.notifier = notifier or default_notifier()
        self.history = history or NotificationHistory(app.paths.history_file)
        self.model_factory: Callable[[], ChatModel] = model_factory or (lambda: app.sessions.model())
        self.clock = clock
        self.seconds_per_minute = _seconds_per_minute()
        self.wake_seconds = min(WAKE_SECONDS, self.seconds_per_minute / 2)
        self.state = ScheduleStore(app.paths.schedule_file)
        self.ledger = CheckinLedger(app.paths.checkins_file)
        self.snoozes = SnoozeStore(app.paths.state_dir / "snooze.json")
        self._running: set[str] = set()
        self._pending: set[str] = set()
        self._pending_slot: dict[str, Slot] = {}
        self._drivers: dict[str, asyncio.Task[Any]] = {}
        self._scheduled: set[str] = set()
        self._waker: asyncio.Task[Any] | None = None
        self._poke: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started: datetime | None = None
        self._supervisor: asyncio.Task[Any] | None = None
        self._next: dict[str, datetime] = {}
        self._warned: dict[tuple[str, str], str] = {}
        self.listeners: list[Callable[[HeartbeatOutcome], None]] = []

    def attach(self, notifier: Notifier, listener: Callable[[HeartbeatOutcome], None]) -> None:
        """Route this service's alerts to ``notifier`` and tell ``listener`` each run's outcome.

        The front end's lifecycle calls it once at start (its notifier batches alerts into
        notices); the listener runs on the runtime loop and must not block."""
        self.notifier = notifier
        self.listeners.append(listener)

    # -- settings --------------------------------------------------------------------------
    def settings_for(self, persona: str) -> HeartbeatSettings:
        personas = self.app.settings.get("personas", {}) or {}
        raw = personas.get(persona, {}) if isinstance(personas, dict) else {}
        cfg = HeartbeatSettings.from_mapping(raw)
        given = raw.get("heartbeat_interval_minutes") if isinstance(raw, dict) else None
        problems: dict[str, str] = {}
        if given is not None and not _is_minutes(given):
            # from_mapping falls back to the default; say so, or the typo goes unnoticed forever
            problems["heartbeat_interval_minutes"] = (
                f"personas.{persona}.heartbeat_interval_minutes in settings.toml is {given!r}, not 0 (off) or "
                f"a number of minutes of at least 1; using {cfg.interval_minutes:g}")
        limit = raw.get("heartbeat_timeout_minutes") if isinstance(raw, dict) else None
        if limit is not None and usable_timeout(limit) is None:
            problems["heartbeat_timeout_minutes"] = (
                f"personas.{persona}.heartbeat_timeout_minutes in settings.toml is {limit!r}, not a number of "
                f"minutes of at least 1; using {cfg.timeout_minutes:g}")
        for key, why in schedule_key_problems(raw).items():
            keeps = {"heartbeat_at": "the other set times still apply",
                     "heartbeat_days": "the other days still apply",
                     "heartbeat_catch_up_minutes": f"using {cfg.catch_up_minutes:g}"}[key]
            problems[key] = f"personas.{persona}.{key} in settings.toml: {why}; {keeps}"
        for key, message in problems.items():
            self._warn_once(persona, key, message)
        return cfg

    def _warn_once(self, persona: str, key: str, message: str) -> None:
        """Say a settings mistake once, not at every 30-second wake (again if it changes)."""
        if self._warned.get((persona, key)) != message:
            self._warned[(persona, key)] = message
            log.warning("%s", message)

    def set_paused(self, persona: str, paused: bool) -> None:
        def mutate(data: dict[str, Any]) -> None:
            data.setdefault("personas", {}).setdefault(persona, {})["paused"] = bool(paused)

        self.app.settings.update(mutate)
        self.wake_soon()

    def wake_soon(self) -> None:
        """Look at the schedule now rather than at the next wake (any thread): a changed setting
        shows its real next check-in at once."""
        loop, poke = self._loop, self._poke
        if loop is not None and poke is not None and not loop.is_closed():
            loop.call_soon_threadsafe(poke.set)

    def update_schedule(self, persona: str, changes: dict[str, Any], overnight: bool | None = None) -> None:
        """Change some of a persona's check-in settings (``heartbeat_interval_minutes``,
        ``active_start``, ``active_end``, ``timezone``, ``paused``, ``heartbeat_at``,
        ``heartbeat_days``, ``heartbeat_catch_up_minutes``) and keep the rest.

        Only the keys in ``changes`` are written, inside one settings transaction, so what
        another process changed meanwhile is kept. The schedule that would result is checked
        first; a bad value raises :class:`ScheduleError` naming each field and nothing is saved.
        """
        allowed = {"heartbeat_interval_minutes", "active_start", "active_end", "timezone", "paused",
                   "heartbeat_at", "heartbeat_days", "heartbeat_catch_up_minutes"}
        unknown = set(changes) - allowed
        if unknown:
            raise ScheduleError({k: "not a check-in setting" for k in unknown})

        def mutate(data: dict[str, Any]) -> None:
            section = data.setdefault("personas", {}).setdefault(persona, {})
            # an emptied field ("", [], None) is a key left out (the default), not a value to check
            merged = {k: v for k, v in {**section, **changes}.items() if v not in ("", None, [])}
            errors = schedule_errors(merged, overnight)
            if errors:
                raise ScheduleError(errors)
            for key, value in changes.items():
                if value in ("", None, []):
                    section.pop(key, None)
                else:
                    section[key] = value

        self.app.settings.update(mutate)
        self.wake_soon()

    # -- one run ---------------------------------------------------------------------------
    async def run(self, persona: str, *, scheduled: bool = False, slot: Slot | None = None) -> HeartbeatOutcome:
        """Run one heartbeat now. Manual runs ignore interval, pause and active hours (the user
        asked), but never overlap another run and never call the model for an empty checklist.
        ``slot``: the scheduled slot this run settles (its outcome goes to the ledger with it)."""
        scheduled = scheduled or slot is not None
        started = self.clock()
        if persona in self._running:
            out = HeartbeatOutcome(persona, "skipped", f"a heartbeat for {persona} is already running")
            return self._done(out, slot, None)
        self._running.add(persona)
        lock = lock_for(self._lock_path(persona))
        try:
            try:
                lock.acquire(0)
            except LockBusy:
                return self._done(HeartbeatOutcome(
                    persona, "skipped", f"a heartbeat for {persona} is already running in another process"), slot, None)
            except LockUnusable as exc:
                return self._done(HeartbeatOutcome(persona, "failed", str(exc)), slot, None)
            try:
                out = await self._run_locked(persona, scheduled, slot)
                return self._done(out, slot, started if out.status != "skipped" else None)
            finally:
                lock.release()
        finally:
            self._running.discard(persona)

    def _lock_path(self, persona: str) -> Path:
        folder = self.app.paths.state_dir / "heartbeat"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder / f"{persona}.lock"

    async def _run_locked(self, persona: str, scheduled: bool, slot: Slot | None = None) -> HeartbeatOutcome:
        try:
            info = self.app.personas.get(persona)
        except Exception as exc:  # noqa: BLE001
            return HeartbeatOutcome(persona, "failed", str(exc))
        cfg = self.settings_for(persona)
        pf = read_persona_file(info.path / "HEARTBEAT.md", "HEARTBEAT.md")
        checklist = pf.body
        if scheduled:
            reason = skip_reason(cfg, self.clock(), checklist, set_time=slot is not None and slot.kind == "at")
        else:
            reason = skip_reason(HeartbeatSettings(interval_minutes=1.0), self.clock(), checklist)
        if reason:
            return HeartbeatOutcome(persona, "skipped", reason, warn=bool(settings_problem(cfg)))
        model: Any = None
        agent: Agent | None = None
        # One limit for the whole check-in (session, every model turn, every tool call): a run
        # that hangs must not hold the persona's lock and its tools forever.
        limit = asyncio.timeout(cfg.timeout_minutes * self.seconds_per_minute)
        try:
            async with limit:
                prepared = await asyncio.to_thread(
                    self.app.sessions.prepare, persona, unattended=True, allow_mutating=cfg.allow_mutating)
                if "HEARTBEAT.md" not in prepared.snapshot.found:
                    # Strict mode held the changed checklist back: without it the run has no task.
                    held = next((n for n in prepared.notes if n.startswith("HEARTBEAT.md")), "")
                    return HeartbeatOutcome(persona, "skipped", held or "HEARTBEAT.md is not in the session")
                model = self.model_factory()
                agent = self.app.sessions.agent(prepared, model, unattended=True,
                                                allow_mutating=cfg.allow_mutating)
                result = await agent.send(f"{self.time_line(persona, cfg)}\n\n{cfg.prompt}")
        except TimeoutError as exc:
            if not limit.expired():  # a timeout of something inside, not the check-in's limit
                log.exception("heartbeat for %s failed", persona)
                return self._failed(persona, f"{type(exc).__name__}: {exc}")
            if agent is not None:
                await agent.stopped()  # the cancelled answer unwinds before its model is closed
            minutes = f"{cfg.timeout_minutes:g} minute{'' if cfg.timeout_minutes == 1 else 's'}"
            return self._failed(persona, f"timed out after {minutes} (the limit for one check-in; "
                                         f"personas.{persona}.heartbeat_timeout_minutes in settings.toml)")
        except ModelError as exc:
            return self._failed(persona, str(exc))
        except Exception as exc:
            log.exception("heartbeat for %s failed", persona)
            return self._failed(persona, f"{type(exc).__name__}: {exc}")
        finally:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()
        if result.stopped not in ("done",):
            return self._failed(persona, result.note or f"the run stopped: {result.stopped}")
        verdict = classify_reply(result.text)
        if verdict.silent:
            return HeartbeatOutcome(persona, "silent", "acknowledged" if verdict.acknowledged else "empty reply",
                                    verdict.text)
        now = self.clock()
        # What leaves the process (history file, desktop, outcome text) is redacted like the
        # log: the model may echo a secret it saw. History holds the redacted text, so the
        # de-duplication compares redacted with redacted.
        text = redact(verdict.text)
        if is_duplicate(text, persona, self.history.notified(), now):
            self.history.append(persona, text, "duplicate", now)
            return HeartbeatOutcome(persona, "silent", "same alert already notified within 24 hours", text)
        until = self.snoozes.until(persona, now) if scheduled else None
        if until is not None:
            # *Snooze 1 hour* (a notification action): kept in the history and ledger, not shown.
            # A check-in asked for is not held back: the user asked to see it.
            self.history.append(persona, text, "snoozed", now)
            return HeartbeatOutcome(persona, "notified", snoozed_reason(until), text)
        self.history.append(persona, text, "notified", now)
        if not notifications_allowed(self.app.settings, now):
            # Notifications off or quiet hours: the alert is kept in the history, not popped up.
            return HeartbeatOutcome(persona, "notified", "kept in history (notifications are off or in quiet hours)",
                                    text)
        shown = await asyncio.to_thread(self.notifier.notify, persona, text)
        return HeartbeatOutcome(persona, "notified", "" if shown else "no notifier could show it (see history)",
                                text)

    def _failed(self, persona: str, reason: str) -> HeartbeatOutcome:
        self.history.append(persona, reason, "failed", self.clock())
        return HeartbeatOutcome(persona, "failed", reason)

    def time_line(self, persona: str, cfg: HeartbeatSettings | None = None) -> str:
        """The first line of a check-in: the time now in the persona's zone and the last run."""
        cfg = cfg or self.settings_for(persona)
        zone, name = persona_zone(cfg.timezone)
        return time_line(self.clock(), zone, name, self.state.get(persona).last_ran)

    def _done(self, out: HeartbeatOutcome, slot: Slot | None = None, ran: datetime | None = None) -> HeartbeatOutcome:
        # A settings mistake skips every check-in silently: say it where a user sees it (the
        # terminal shows warnings only), not just in the file log.
        level = logging.WARNING if out.warn else logging.INFO
        log.log(level, "heartbeat %s: %s (%s)", out.persona, out.status, out.reason or "ok")
        self._record(out, slot, ran)
        for cb in list(self.listeners):
            try:
                cb(out)
            except Exception:  # a broken listener must not break the run
                log.exception("heartbeat listener failed")
        return out

    def _record(self, out: HeartbeatOutcome, slot: Slot | None, ran: datetime | None) -> None:
        """The run's line in the ledger, and the last run in the saved schedule (for the next
        check-in's "Last check-in:" and for the menu). Trouble writing them never fails the run."""
        try:
            if ran is not None:
                changes: dict[str, Any] = {"last_ran": ran, "last_status": out.status}
                anchor = self.state.get(out.persona).anchor
                if slot is None and (anchor is None or ran > anchor):
                    # a check-in asked for counts as the last one: the interval runs from it
                    changes["anchor"] = ran
                self.state.update(out.persona, **changes)
                if "anchor" in changes and out.persona in self._scheduled:
                    self._recompute_next(out.persona)  # the menu's "Next check-in" moves with it
            self.ledger.append([SlotRecord.make(out.persona, out.status, out.reason, slot.due if slot else None,
                                                ran, out.text)])
        except Exception as exc:  # noqa: BLE001 - a full disk must not stop check-ins
            log.warning("the check-in ledger or schedule was not written: %s", exc)

    # -- ticks and coalescing (call on the runtime loop) ----------------------------------
    def tick(self, persona: str, slot: Slot | None = None) -> asyncio.Task[Any] | None:
        """A scheduled tick: start a run, or mark one pending if a run is going on. Of several
        slots that pile up during one run, the newest is the follow-up; the others are recorded
        as skipped (a check-in was already running)."""
        driver = self._drivers.get(persona)
        if driver is not None and not driver.done():
            self._pending.add(persona)
            if slot is not None:
                older = self._pending_slot.get(persona)
                self._pending_slot[persona] = slot
                if older is not None:
                    self._settle(persona, [(older, "skipped", "a check-in was already running")])
            return None
        task = asyncio.get_running_loop().create_task(self._drive(persona, slot))
        self._drivers[persona] = task
        return task

    async def _drive(self, persona: str, slot: Slot | None = None) -> HeartbeatOutcome:
        while True:
            self._pending.discard(persona)
            out = await self.run(persona, scheduled=True, slot=slot)
            if persona not in self._pending:
                return out
            slot = self._pending_slot.pop(persona, None)

    def _settle(self, persona: str, slots: list[tuple[Slot, SlotStatus, str]]) -> None:
        try:
            self.ledger.append([SlotRecord.make(persona, status, reason, slot.due) for slot, status, reason in slots])
        except Exception as exc:  # noqa: BLE001
            log.warning("the check-in ledger was not written: %s", exc)

    async def idle(self, persona: str, timeout: float = 60.0) -> None:
        """Wait until no run or pending run is left for ``persona`` (tests, shutdown)."""
        async with asyncio.timeout(timeout):
            while (d := self._drivers.get(persona)) is not None and not d.done():
                await asyncio.wait({d})

    # -- the schedule ----------------------------------------------------------------------
    def schedule_of(self, cfg: HeartbeatSettings) -> Schedule:
        """The persona's settings as the values core.schedule reasons about."""
        zone, _ = persona_zone(cfg.timezone)
        interval = None
        if cfg.interval_minutes > 0:
            interval = timedelta(seconds=cfg.interval_minutes * self.seconds_per_minute)
        active: tuple[int, int] | None = None
        if cfg.active_start or cfg.active_end:
            try:
                active = (parse_hhmm(cfg.active_start or "00:00"), parse_hhmm(cfg.active_end or "24:00"))
            except ValueError:
                active = None  # the run itself says the hours are misconfigured (skip_reason)
        return Schedule(zone, interval, cfg.at, cfg.days, active, timedelta(minutes=cfg.catch_up_minutes))

    def check(self, persona: str, now: datetime | None = None) -> datetime | None:
        """Settle what is due for ``persona`` now (call on the loop): save the new state, record
        missed slots, start at most one run. Returns when the next slot is due."""
        now = now or self.clock()
        cfg = self.settings_for(persona)
        sched = self.schedule_of(cfg)
        if sched.empty:
            self._next.pop(persona, None)
            return None
        saved = self.state.get(persona)
        current = ScheduleState(saved.anchor, saved.settled)
        on_time = timedelta(seconds=3 * self.wake_seconds)  # found at the first or second wake after it
        d = decide(sched, current, now, started=self._started, on_time=on_time)
        if d.state != current:
            self.state.update(persona, anchor=d.state.anchor, settled=d.state.settled)  # before the run
        if d.missed:
            missed: list[tuple[Slot, SlotStatus, str]] = [(slot, "missed", why) for slot, why in d.missed]
            if d.dropped:
                first, status, why = missed[0]
                missed[0] = (first, status, f"{why} ({d.dropped} earlier slots not listed)")
            self._settle(persona, missed)
            log.info("heartbeat %s: %d check-in slot(s) missed (%s)", persona, len(d.missed) + d.dropped,
                     d.missed[-1][1])
        if d.run is not None:
            self.tick(persona, d.run)
        nxt = next_due(sched, d.state, now)
        if nxt is None:
            self._next.pop(persona, None)
        else:
            self._next[persona] = nxt
        return nxt

    def _recompute_next(self, persona: str) -> None:
        saved = self.state.get(persona)
        sched = self.schedule_of(self.settings_for(persona))
        nxt = None if sched.empty else next_due(sched, ScheduleState(saved.anchor, saved.settled), self.clock())
        if nxt is None:
            self._next.pop(persona, None)
        else:
            self._next[persona] = nxt

    def check_all(self, now: datetime | None = None) -> float:
        """One wake: settle every scheduled persona; returns the seconds until the next wake."""
        now = now or self.clock()
        self.app.settings.reload()
        wait = self.wake_seconds
        for name in sorted(self._scheduled):
            try:
                nxt = self.check(name, now)
            except Exception:  # one persona's trouble never stops the others' schedule
                log.exception("checking the schedule of %s failed", name)
                continue
            if nxt is not None:
                wait = min(wait, max((nxt - now).total_seconds(), 0.0) + 0.05)
        log.debug("check-in schedule checked at %s for %d persona(s); next look in %.1f s",
                  now.isoformat(), len(self._scheduled), wait)
        return wait

    async def _wake_loop(self, first_wait: float = 0.0) -> None:
        """Wake at least every :data:`WAKE_SECONDS` and compare the wall clock with what the
        monotonic clock expected: a jump (suspend, clock or zone change) is logged, and since
        every decision is made from the wall clock, what it made due is settled at this wake."""
        last = (self.clock(), time.monotonic())
        wait = first_wait
        while True:
            await self._nap(wait)
            now, mono = self.clock(), time.monotonic()
            moved = (now - last[0]).total_seconds() - (mono - last[1])
            if abs(moved) >= 60:
                log.info("the wall clock moved %+.0f minutes while waiting (sleep, or a clock change); "
                         "checking the schedule", moved / 60)
            last = (now, mono)
            try:
                wait = self.check_all(now)
            except Exception:  # keep the schedule alive
                log.exception("checking the heartbeat schedule failed")
                wait = self.wake_seconds

    async def _nap(self, seconds: float) -> None:
        """Sleep ``seconds`` on the monotonic clock, or less when :meth:`wake_soon` is called."""
        poke = self._poke
        if poke is None:
            await asyncio.sleep(seconds)
            return
        try:
            async with asyncio.timeout(seconds):
                await poke.wait()
        except TimeoutError:
            pass
        poke.clear()

    def next_run(self, persona: str) -> datetime | None:
        """When the next scheduled check-in for ``persona`` is due (None when not scheduled)."""
        return self._next.get(persona) if persona in self._scheduled else None

    def refresh(self) -> list[str]:
        """Schedule personas that appeared and drop ones that went away (call on the loop)."""
        names = [p.name for p in self.app.personas.list() if p.exists]
        if set(names) != self._scheduled:
            self._scheduled = set(names)
            for gone in [n for n in self._next if n not in self._scheduled]:
                self._next.pop(gone, None)
            if self._poke is not None:
                self._poke.set()  # a new persona's overdue check-in starts now, not at the next wake
        return names

    async def _supervise(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await asyncio.to_thread(self.app.settings.reload)
                self.refresh()
            except Exception:  # keep the schedule alive
                log.exception("refreshing the heartbeat schedule failed")

    async def start(self, rescan_seconds: float = 60.0) -> list[str]:
        """Start the schedule for every persona (call on the runtime loop); new personas are
        picked up every ``rescan_seconds``. Returns the names scheduled now."""
        if self._started is None:
            self._started = self.clock()
        self._poke = self._poke or asyncio.Event()
        self._loop = asyncio.get_running_loop()
        names = self.refresh()
        wait = 0.0
        try:  # the first look now: the menu's "Next check-in" is right from the first refresh
            wait = self.check_all()
            self._poke.clear()  # this look covers what refresh() asked for
        except Exception:  # the wake loop below tries again at once
            log.exception("checking the heartbeat schedule failed")
        if self._waker is None or self._waker.done():
            self._waker = asyncio.get_running_loop().create_task(self._wake_loop(wait))
        if self._supervisor is None or self._supervisor.done():
            self._supervisor = asyncio.get_running_loop().create_task(self._supervise(rescan_seconds))
        return names

    async def stop(self) -> None:
        tasks = list(self._drivers.values())
        for t in (self._waker, self._supervisor):
            if t is not None:
                tasks.append(t)
        self._waker = self._supervisor = None
        self._scheduled.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
