"""The heartbeat scheduler: per-persona check-ins on the runtime thread (contract section 5).

A tick asks :func:`hearthside.core.heartbeat.skip_reason` first (interval, pause, active hours,
empty checklist), then runs an unattended session with the heartbeat prompt and applies the
acknowledgement rule: silent, or a notification (de-duplicated over 24 h) plus a history entry.
Never two runs of one persona at once: within the process a tick that arrives during a run only
marks the persona as pending, so any number of piled-up ticks become one follow-up run; across
processes (tray + ``hearthside heartbeat run``) a non-blocking file lock per persona decides.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
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
    settings_problem,
    skip_reason,
    usable_interval,
    usable_timeout,
    utcnow,
)
from ..core.redact import redact
from .notify import NotificationHistory, Notifier, default_notifier, notifications_allowed

if TYPE_CHECKING:
    from .paths import AppPaths
    from .personas import PersonaService
    from .sessions import SessionService
    from .settings import SettingsStore

log = logging.getLogger(__name__)


HeartbeatStatus = Literal["silent", "notified", "skipped", "failed"]


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
            from ..core.heartbeat import parse_hhmm

            overnight = bool(start and end and parse_hhmm(end) < parse_hhmm(start))
        except ValueError:
            overnight = False
    why = check_hours(start, end, overnight)
    if why:
        out["active_hours"] = why
    why = check_timezone(str(raw.get("timezone", "") or ""))
    if why:
        out["timezone"] = why
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
        self._running: set[str] = set()
        self._pending: set[str] = set()
        self._drivers: dict[str, asyncio.Task[Any]] = {}
        self._schedulers: dict[str, asyncio.Task[Any]] = {}
        self._supervisor: asyncio.Task[Any] | None = None
        self._next: dict[str, datetime] = {}
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
        if given is not None and not _is_minutes(given):
            # from_mapping falls back to the default; say so, or the typo goes unnoticed forever
            log.warning("personas.%s.heartbeat_interval_minutes in settings.toml is %r, not 0 (off) or "
                        "a number of minutes of at least 1; using %g", persona, given, cfg.interval_minutes)
        limit = raw.get("heartbeat_timeout_minutes") if isinstance(raw, dict) else None
        if limit is not None and usable_timeout(limit) is None:
            log.warning("personas.%s.heartbeat_timeout_minutes in settings.toml is %r, not a number of "
                        "minutes of at least 1; using %g", persona, limit, cfg.timeout_minutes)
        return cfg

    def set_paused(self, persona: str, paused: bool) -> None:
        def mutate(data: dict[str, Any]) -> None:
            data.setdefault("personas", {}).setdefault(persona, {})["paused"] = bool(paused)

        self.app.settings.update(mutate)

    def update_schedule(self, persona: str, changes: dict[str, Any], overnight: bool | None = None) -> None:
        """Change some of a persona's check-in settings (``heartbeat_interval_minutes``,
        ``active_start``, ``active_end``, ``timezone``, ``paused``) and keep the rest.

        Only the keys in ``changes`` are written, inside one settings transaction, so what
        another process changed meanwhile is kept. The schedule that would result is checked
        first; a bad value raises :class:`ScheduleError` naming each field and nothing is saved.
        """
        allowed = {"heartbeat_interval_minutes", "active_start", "active_end", "timezone", "paused"}
        unknown = set(changes) - allowed
        if unknown:
            raise ScheduleError({k: "not a check-in setting" for k in unknown})

        def mutate(data: dict[str, Any]) -> None:
            section = data.setdefault("personas", {}).setdefault(persona, {})
            merged = {**section, **changes}
            errors = schedule_errors(merged, overnight)
            if errors:
                raise ScheduleError(errors)
            for key, value in changes.items():
                if value in ("", None):
                    section.pop(key, None)
                else:
                    section[key] = value

        self.app.settings.update(mutate)

    # -- one run ---------------------------------------------------------------------------
    async def run(self, persona: str, *, scheduled: bool = False) -> HeartbeatOutcome:
        """Run one heartbeat now. Manual runs ignore interval, pause and active hours (the user
        asked), but never overlap another run and never call the model for an empty checklist."""
        if persona in self._running:
            return self._done(HeartbeatOutcome(persona, "skipped", f"a heartbeat for {persona} is already running"))
        self._running.add(persona)
        lock = lock_for(self._lock_path(persona))
        try:
            try:
                lock.acquire(0)
            except LockBusy:
                return self._done(HeartbeatOutcome(
                    persona, "skipped", f"a heartbeat for {persona} is already running in another process"))
            except LockUnusable as exc:
                return self._done(HeartbeatOutcome(persona, "failed", str(exc)))
            try:
                return self._done(await self._run_locked(persona, scheduled))
            finally:
                lock.release()
        finally:
            self._running.discard(persona)

    def _lock_path(self, persona: str) -> Path:
        folder = self.app.paths.state_dir / "heartbeat"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder / f"{persona}.lock"

    async def _run_locked(self, persona: str, scheduled: bool) -> HeartbeatOutcome:
        try:
            info = self.app.personas.get(persona)
        except Exception as exc:  # noqa: BLE001
            return HeartbeatOutcome(persona, "failed", str(exc))
        cfg = self.settings_for(persona)
        pf = read_persona_file(info.path / "HEARTBEAT.md", "HEARTBEAT.md")
        checklist = pf.body
        if scheduled:
            reason = skip_reason(cfg, self.clock(), checklist)
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
                result = await agent.send(cfg.prompt)
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

    def _done(self, out: HeartbeatOutcome) -> HeartbeatOutcome:
        # A settings mistake skips every check-in silently: say it where a user sees it (the
        # terminal shows warnings only), not just in the file log.
        level = logging.WARNING if out.warn else logging.INFO
        log.log(level, "heartbeat %s: %s (%s)", out.persona, out.status, out.reason or "ok")
        for cb in list(self.listeners):
            try:
                cb(out)
            except Exception:  # a broken listener must not break the run
                log.exception("heartbeat listener failed")
        return out

    # -- ticks and coalescing (call on the runtime loop) ----------------------------------
    def tick(self, persona: str) -> asyncio.Task[Any] | None:
        """A scheduled tick: start a run, or mark one pending if a run is going on."""
        driver = self._drivers.get(persona)
        if driver is not None and not driver.done():
            self._pending.add(persona)
            return None
        task = asyncio.get_running_loop().create_task(self._drive(persona))
        self._drivers[persona] = task
        return task

    async def _drive(self, persona: str) -> HeartbeatOutcome:
        while True:
            self._pending.discard(persona)
            out = await self.run(persona, scheduled=True)
            if persona not in self._pending:
                return out

    async def idle(self, persona: str, timeout: float = 60.0) -> None:
        """Wait until no run or pending run is left for ``persona`` (tests, shutdown)."""
        async with asyncio.timeout(timeout):
            while (d := self._drivers.get(persona)) is not None and not d.done():
                await asyncio.wait({d})

    # -- the schedule ----------------------------------------------------------------------
    async def _schedule(self, persona: str) -> None:
        while True:
            self.app.settings.reload()
            cfg = self.settings_for(persona)
            if cfg.interval_minutes <= 0:
                await asyncio.sleep(self.seconds_per_minute)
                continue
            self._next[persona] = self.clock() + timedelta(minutes=cfg.interval_minutes)
            await asyncio.sleep(cfg.interval_minutes * self.seconds_per_minute)
            self.tick(persona)

    def next_run(self, persona: str) -> datetime | None:
        """When the next scheduled tick for ``persona`` is due (None when not scheduled)."""
        return self._next.get(persona) if persona in self._schedulers else None

    def refresh(self) -> list[str]:
        """Schedule personas that appeared and drop ones that went away (call on the loop)."""
        names = [p.name for p in self.app.personas.list() if p.exists]
        loop = asyncio.get_running_loop()
        for name in names:
            if name not in self._schedulers:
                self._schedulers[name] = loop.create_task(self._schedule(name))
        for name in [n for n in self._schedulers if n not in names]:
            self._schedulers.pop(name).cancel()
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
        """Start a schedule for every persona (call on the runtime loop); new personas are
        picked up every ``rescan_seconds``. Returns the names scheduled now."""
        names = self.refresh()
        if self._supervisor is None or self._supervisor.done():
            self._supervisor = asyncio.get_running_loop().create_task(self._supervise(rescan_seconds))
        return names

    async def stop(self) -> None:
        tasks = list(self._schedulers.values()) + list(self._drivers.values())
        if self._supervisor is not None:
            tasks.append(self._supervisor)
            self._supervisor = None
        self._schedulers.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

