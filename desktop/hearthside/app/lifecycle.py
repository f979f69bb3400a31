"""One lifecycle for every front end: start the services, keep them running, stop them all.

The tray and ``hearthside --headless`` both run on :class:`Lifecycle`: it loads plugin packs,
starts drift watching, connects MCP servers and schedules check-ins, and routes what the
user should hear about (drift changes, check-in alerts) through one :class:`AlertBatcher`.
It takes typed collaborators (:class:`LifecycleDeps`, which ``AppContext`` satisfies) and
reports upwards through one typed :class:`~hearthside.app.events.AppEvents` (the tray's shell,
the headless front end), so it never reaches into another object's attributes.
A failing step is reported as a sentence and the others still start: no watcher is better
than no app, and a dead MCP server must not stop check-ins.

``stop()`` is bounded (5 s in all): running check-ins are cancelled on the runtime loop, MCP
sessions closed, watchers stopped, a running pack install terminated, and the runtime thread
joined. Nothing is half-written: history and settings writes are atomic and only happen
between awaits, which cancellation cannot split.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .alerts import Alert, AlertBatcher, DriftAlerts, Notice, QueuedNotifier, persona_label
from .events import AppEvents

if TYPE_CHECKING:
    from ..core.mcpconfig import ServerStatus
    from .agents import AgentService
    from .conversations import ConversationService
    from .drift import DriftService
    from .drift_types import DriftEvent
    from .forks import ForkRecord, ForkService
    from .heartbeat import HeartbeatOutcome, HeartbeatService
    from .mcp import McpService
    from .notify import NotificationHistory
    from .personas import PersonaService
    from .plugins import PluginService
    from .runtime import Runtime
    from .settings import SettingsStore

log = logging.getLogger(__name__)

#: Quit finishes within this many seconds, whatever is running.
STOP_BUDGET = 5.0
#: MCP servers get this long to connect at start before the app stops waiting (they keep trying).
CONNECT_WAIT = 30.0
#: How often forks older than 7 days are looked for while the app runs (seconds).
FORK_CLEANUP_EVERY = 24 * 3600.0
#: How often the tray looks for forks made by another process that are ready for review.
FORK_LOOK_EVERY = 60.0

@dataclass(frozen=True)
class PersonaRow:
    """What the tray shows for one persona (read on a worker thread, shown on the Qt thread)."""

    name: str
    path: str
    exists: bool
    paused: bool
    interval_minutes: float
    next_run: datetime | None
    waiting: int
    last_status: str = ""
    last_reason: str = ""
    #: "" when HEARTBEAT.md has something to check; "empty" when it is effectively empty;
    #: "missing" when there is no such file (every check-in would be skipped either way).
    checklist: str = ""
    snoozed_until: datetime | None = None  # *Snooze 1 hour* on an alert: until when
    #: The persona's specialists as a new session would get them: (name, description, color);
    #: the colour is a UX hint only ("" for none).
    specialists: tuple[tuple[str, str, str], ...] = ()

    @property
    def no_checklist(self) -> bool:
        return self.exists and self.checklist in ("empty", "missing")


def checklist_state(path: Path) -> str:
    """What :attr:`PersonaRow.checklist` says of this ``HEARTBEAT.md`` (a bounded read, off the
    Qt thread). A file that exists but cannot be read is left to the check-in's own reason."""
    from ..core.compose import read_persona_file
    from ..core.heartbeat import checklist_effectively_empty

    if not os.path.lexists(path):
        return "missing"
    body = read_persona_file(path, "HEARTBEAT.md", scan=False).body
    return "empty" if body is not None and checklist_effectively_empty(body) else ""


class LifecycleDeps(Protocol):
    """The services the lifecycle starts and stops (``AppContext`` provides them, built on use)."""

    @property
    def settings(self) -> SettingsStore: ...

    @property
    def personas(self) -> PersonaService: ...

    @property
    def plugins(self) -> PluginService: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def drift(self) -> DriftService: ...

    @property
    def heartbeat(self) -> HeartbeatService: ...

    @property
    def mcp(self) -> McpService: ...

    @property
    def conversations(self) -> ConversationService: ...

    @property
    def notifications(self) -> NotificationHistory: ...

    @property
    def agents(self) -> AgentService: ...

    @property
    def forks(self) -> ForkService: ...

    def built(self, name: str) -> bool:
        """Whether the service ``name`` exists yet (stopping must not build one)."""
        ...


class Lifecycle:
    """Starts and stops the app's services; the front end's ``events`` hear what happens."""

    def __init__(self, app: LifecycleDeps, events: AppEvents) -> None:
        self.app = app
        self.events = events
        self.batcher = AlertBatcher(self._deliver)
        self.drift_alerts = DriftAlerts(self.batcher)
        self.problems: list[str] = []
        self.started = threading.Event()
        self.stopping = threading.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self._mcp_future: concurrent.futures.Future[Any] | None = None
        self._tidy_future: concurrent.futures.Future[Any] | None = None
        self._stopped = False
        self.last_outcome: dict[str, HeartbeatOutcome] = {}
        #: set once the fork registry is looked after (start): refreshes then announce new forks
        self._forks_started = False

    # --- start -------------------------------------------------------------------------
    def start(self) -> list[str]:
        """Start every service (blocking; call off the Qt thread). Returns the problems met."""
        app = self.app
        self._step("plugin packs were not loaded", app.plugins.load)
        runtime = app.runtime
        runtime.loop.call_soon_threadsafe(runtime.loop.set_exception_handler, self._loop_error)
        self._step("file watching is unavailable", self._start_drift)
        self._step("old forks were not cleaned up", self._start_forks)
        hb = app.heartbeat
        hb.attach(QueuedNotifier(self.batcher), self._outcome)
        # Check-ins are scheduled before MCP connects: connecting imports the MCP SDK on the
        # runtime loop, and the schedule must not wait behind it (the first tick is minutes away).
        names = self._step("check-ins were not scheduled", lambda: runtime.run(hb.start(), timeout=30))
        log.info("check-ins scheduled for %s", ", ".join(names or []) or "no personas")
        if not self.stopping.is_set():
            self._step("MCP servers were not connected", self._start_mcp)
        if not self.stopping.is_set():  # retention: at start, then daily while the tray runs
            self._tidy_future = self._step("old conversations are not removed",
                                           lambda: runtime.submit(app.conversations.tidy_daily()))
        self.started.set()
        return self.problems

    def _step(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - one service failing must not stop the others
            msg = f"{what}: {exc or type(exc).__name__}"
            log.warning("%s", msg)
            self.problems.append(msg)
            self.events.on_error(msg)
            return None

    def _start_drift(self) -> None:
        drift = self.app.drift
        drift.start()

        def on_event(ev: DriftEvent) -> None:
            self.drift_alerts.on_event(ev)
            self.events.on_drift(ev)

        self._unsubscribe = drift.subscribe(on_event)
        self.drift_alerts.seed(drift.status())

    def _start_forks(self) -> None:
        """Forks older than 7 days go now and once a day; a fork ready for review is a notice,
        also one made by another process (``hearthside chat`` in a terminal): looked for now,
        every minute and at each refresh of the tray's rows."""
        forks = self.app.forks
        forks.on_ready = self._fork_ready
        forks.cleanup()
        self.announce_forks()
        loop = self.app.runtime.loop

        def daily() -> None:
            if not self.stopping.is_set():
                loop.run_in_executor(None, forks.cleanup)
                loop.call_later(FORK_CLEANUP_EVERY, daily)

        def look() -> None:
            if not self.stopping.is_set():
                loop.run_in_executor(None, self.announce_forks)
                loop.call_later(FORK_LOOK_EVERY, look)

        loop.call_soon_threadsafe(loop.call_later, FORK_CLEANUP_EVERY, daily)
        loop.call_soon_threadsafe(loop.call_later, FORK_LOOK_EVERY, look)
        self._forks_started = True

    def announce_forks(self) -> None:
        """One notice for each fork ready for review that none was shown for yet (the record
        keeps that it was, so a restart repeats none). Reads the registry: off the Qt thread."""
        try:
            for rec in self.app.forks.unannounced():
                self._fork_ready(rec)
        except Exception as exc:  # noqa: BLE001 - a notice failing must not stop the refresh
            log.warning("forks waiting for review not announced: %s", exc)

    def _fork_ready(self, rec: ForkRecord) -> None:
        claimed = self.app.forks.mark_announced(rec.id)
        if claimed is None:
            return  # announced already (by another thread, or before a restart), or gone
        text = f"Changes by a specialist wait for your review: {claimed.label or claimed.id}."
        self.events.show(Notice(persona_label(claimed.persona), text, (Alert("fork", claimed.persona, text),)))

    def _start_mcp(self) -> None:
        mcp = self.app.mcp
        mcp.on_status = self._mcp_status
        try:  # the explicit step: secrets typed into mcp.json reach the keyring before connecting
            mcp.migrate_secrets()  # logs what it did or could not do
        except Exception as exc:  # noqa: BLE001 - a busy lock must not keep the servers off
            log.warning("mcp.json could not be tidied: %s", exc)
        if not mcp.servers():
            return
        # Connect in the background: a slow server must not hold the tray (or check-ins) back.
        self._mcp_future = self.app.runtime.submit(mcp.connect_all())
        self._mcp_future.add_done_callback(self._mcp_done)

    def _mcp_status(self, status: ServerStatus) -> None:
        self.events.on_mcp_status(status)

    def _mcp_done(self, fut: concurrent.futures.Future[Any]) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None and not self.stopping.is_set():
            self.events.on_error(f"MCP servers were not connected: {exc}")

    def wait_for_mcp(self, timeout: float = CONNECT_WAIT) -> None:
        """Wait until the first connect of every MCP server finished (headless start, tests)."""
        if self._mcp_future is not None:
            try:
                self._mcp_future.result(timeout)
            except Exception as exc:  # noqa: BLE001 - the user is told by _mcp_done
                log.info("MCP connect finished with %s", exc)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An exception nobody awaited on the runtime loop: tell the user, keep running."""
        exc = context.get("exception")
        msg = context.get("message") or "a background task failed"
        if isinstance(exc, asyncio.CancelledError):
            return
        text = f"{msg}: {exc}" if exc is not None else str(msg)
        log.error("runtime: %s", text, exc_info=exc)
        if not self.stopping.is_set():
            self.events.on_error(text)

    def _outcome(self, out: HeartbeatOutcome) -> None:
        if out.status != "skipped":
            self.last_outcome[out.persona] = out
        self.events.on_outcome(out)

    def snapshot(self) -> list[PersonaRow]:
        """Every persona with its check-in and drift state (file reads: call off the Qt thread)."""
        app = self.app
        app.settings.reload()
        hb = app.heartbeat
        rows = []
        saved = hb.state.all()  # the last check-in's status survives a restart (schedule.json)
        for info in app.personas.list():
            cfg = hb.settings_for(info.name)
            last = self.last_outcome.get(info.name)
            last_status = last.status if last else saved[info.name].last_status if info.name in saved else ""
            rows.append(PersonaRow(
                info.name, str(info.path), info.exists, cfg.paused, cfg.interval_minutes,
                self.next_check_in(info.name), self.drift_alerts.waiting_for(info.name),
                last_status, last.reason if last else "",
                checklist_state(info.path / "HEARTBEAT.md") if info.exists else "",
                hb.snoozes.until(info.name), self._specialists(info.name) if info.exists else ()))
        if self._forks_started:
            self.announce_forks()  # a fork another process made is announced at the next refresh
        return rows

    def _specialists(self, persona: str) -> tuple[tuple[str, str, str], ...]:
        """(name, description, color) of each specialist of ``persona``; none when they cannot be
        read (the chat window's *Specialists* menu says why)."""
        try:
            return tuple((d.name, d.description, d.color) for d in self.app.agents.listing(persona).defs)
        except Exception as exc:  # noqa: BLE001 - the tray's rows must always arrive
            log.warning("specialists of %s not listed: %s", persona, exc)
            return ()

    # --- notices -------------------------------------------------------------------------
    def _deliver(self, notice: Notice) -> None:
        """Runs on the batcher thread: record drift notices in the history, then show."""
        history = self.app.notifications
        for a in notice.alerts:
            if a.kind == "drift":
                try:
                    history.append(a.persona, a.text, "notified", kind="drift")
                except Exception as exc:  # noqa: BLE001
                    log.warning("notification history not written: %s", exc)
        self.events.show(notice)

    # --- intents -------------------------------------------------------------------------
    def check_in_now(self, persona: str) -> concurrent.futures.Future[HeartbeatOutcome]:
        return self.app.runtime.submit(self.app.heartbeat.run(persona))

    def snooze(self, persona: str) -> datetime:
        """*Snooze 1 hour*: hold ``persona``'s scheduled check-in alerts back for an hour."""
        return self.app.heartbeat.snoozes.snooze(persona)

    def set_paused(self, persona: str, paused: bool) -> None:
        self.app.heartbeat.set_paused(persona, paused)

    def next_check_in(self, persona: str) -> datetime | None:
        return self.app.heartbeat.next_run(persona)

    # --- stop ----------------------------------------------------------------------------
    def stop(self, budget: float = STOP_BUDGET) -> list[str]:
        """Stop everything within ``budget`` seconds; returns what did not stop cleanly."""
        if self._stopped:
            return []
        self._stopped = True
        self.stopping.set()
        deadline = time.monotonic() + budget
        left: list[str] = []

        def remaining(share: float = 1.0) -> float:
            return max(0.1, (deadline - time.monotonic()) * share)

        self.batcher.close()
        app = self.app
        if app.built("plugins"):
            try:
                app.plugins.installer.cancel_running()
            except Exception as exc:  # noqa: BLE001
                left.append(f"pack install: {exc}")
        rt = app.runtime if app.built("runtime") else None
        if rt is not None and not rt.loop.is_running():
            rt = None  # already stopped (another front end on the same app)
        if self._mcp_future is not None:
            self._mcp_future.cancel()
        if self._tidy_future is not None:
            self._tidy_future.cancel()
        if rt is not None and app.built("heartbeat"):
            try:
                rt.run(app.heartbeat.stop(), timeout=remaining(0.4))
            except Exception as exc:  # noqa: BLE001
                left.append(f"check-ins: {exc or type(exc).__name__}")
        if self._unsubscribe is not None:
            self._unsubscribe()
        if app.built("drift"):
            try:
                app.drift.stop()
            except Exception as exc:  # noqa: BLE001
                left.append(f"watchers: {exc}")
        if rt is not None and app.built("mcp"):
            try:
                rt.run(app.mcp.close(), timeout=remaining(0.6))
            except Exception as exc:  # noqa: BLE001
                left.append(f"MCP sessions: {exc or type(exc).__name__}")
        if rt is not None:
            rt.stop(timeout=remaining())
        for item in left:
            log.warning("not stopped cleanly: %s", item)
        return left


def settings_problem(settings: SettingsStore) -> str:
    """At start: what is wrong with ``settings.toml``, for the user ("" when it is fine).

    The file is left exactly where it is: people edit it by hand, and a read that moved it
    would lose their place (their editor still has it open). Defaults are used and changes are
    refused until the user fixes it or chooses *Start over* in the Settings window.
    """
    settings.all()
    if not settings.error:
        return ""
    return ("Your settings file cannot be used as it is, so Hearthside uses default settings and "
            f"changes no setting until it is fixed. {settings.problem}. Fix the file, or choose Start over "
            "in Settings… to keep it as a backup and begin again with defaults.")
