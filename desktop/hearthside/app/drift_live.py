"""Keeping drift live: watcher events, debounced, re-read once, announced as :class:`DriftEvent`.

The on-demand half (:class:`~hearthside.app.drift.DriftService`: scan, approve, diff) has no
threads; this half owns them and the timing rules, and sees the service only through the
narrow :class:`DriftSource` protocol (it never imports the service). The watcher's callback
maps a changed path to the watched units it may affect (a bootstrap file, a skill, a link's
target, the settings that name added folders, an approval written by another process); a
:class:`Debouncer` turns a burst into one settle; each settle reads every file of the unit
once (:meth:`DriftSource.observe`) and the event is built from that same reading. Every
settled change of state or content (a new fingerprint) is announced (contract section 3):
throttling what reaches the user is the notifier's job, not the watcher's.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.compose import BOOTSTRAP_ORDER, HERMES_MEMORIES
from ..core.drift import APPROVED, MISSING, Debouncer, Verdict, is_editor_dropping, summarize
from .drift_types import (
    AGENT_MEMORY,
    AGENT_SUFFIX,
    AGENTS,
    MEMORIES,
    SKILL_FILE,
    SKILLS,
    DriftEvent,
    FileStatus,
    Observation,
    Unit,
    WatchRoots,
)

if TYPE_CHECKING:  # watchdog is imported only when watching starts: `soul status` stays quick
    from ..adapters.watcher import FolderWatcher, WatchReport

log = logging.getLogger(__name__)


class DriftSource(Protocol):
    """What the live watcher needs from the drift service, and nothing more."""

    @property
    def watch_roots(self) -> WatchRoots: ...

    @property
    def store_error(self) -> str: ...

    def units(self) -> list[Unit]: ...

    def observe(self, unit: Unit) -> list[Observation]: ...

    def reload_settings(self) -> None: ...


def event_of(obs: Observation) -> DriftEvent:
    """The announcement of one observation (no file is read here)."""
    st = obs.status
    summary = summarize(st.file, Verdict(st.state, st.reason), obs.approved, obs.current, st.link_target)
    return DriftEvent(st.persona, st.file, st.path, st.state, summary, st.current, st.baseline,
                      bool(st.link_target), st.link_target, st.findings, st.reason)


class LiveDrift:
    """Watches what a :class:`DriftSource` covers and announces each settled change."""

    def __init__(self, source: DriftSource, quiet: float, max_wait: float, poll_interval: float) -> None:
        self.source = source
        self._lock = threading.RLock()
        self._subscribers: list[Callable[[DriftEvent], None]] = []
        self._last: dict[tuple[str, str], tuple[str, str, str, str]] = {}
        self._units: dict[str, Unit] = {}
        self._links: dict[str, frozenset[str]] = {}  # unit key -> link targets outside it
        self._cond = threading.Condition()
        self._debouncer: Debouncer[str] = Debouncer(quiet, max_wait)
        self._refresh_wanted = False
        self._thread: threading.Thread | None = None
        self._running = False
        self._poll_interval = poll_interval
        self._watcher: FolderWatcher | None = None

    def subscribe(self, callback: Callable[[DriftEvent], None]) -> Callable[[], None]:
        """Call ``callback(DriftEvent)`` on every settled change (from the watcher thread).

        Returns a function that unsubscribes.
        """
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def start(self) -> None:
        """Start the live watcher (idempotent); the first scan happens here, silently."""
        with self._lock:
            if self._running:
                return
            self._running = True
            from ..adapters.watcher import FolderWatcher

            self._watcher = FolderWatcher(self._on_path, poll_interval=self._poll_interval)
            self._refresh_units()
            for unit in list(self._units.values()):
                observed = self.source.observe(unit)
                for o in observed:
                    self._last[(o.status.path, o.status.file)] = _seen(o.status)
                self._update_links(unit, observed)
            self._watcher.start()
            self._thread = threading.Thread(target=self._loop, name="hearthside-drift", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching; waits (bounded) for the threads."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            watcher, self._watcher = self._watcher, None
        with self._cond:
            self._cond.notify_all()
        if watcher is not None:
            watcher.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._running

    def report(self) -> WatchReport | None:
        """How the live watcher watches (None when it is not running)."""
        w = self._watcher
        return w.report() if w is not None else None

    def doctor_report(self) -> tuple[str, str, dict[str, object]]:
        """``(status, detail, data)`` for ``hearthside doctor``: inotify or polling, and why.

        Uses the live watcher when it runs; otherwise places the same watches briefly.
        """
        report = self.report()
        if report is None:
            from ..adapters.watcher import FolderWatcher

            probe = FolderWatcher(lambda _p, _d: None, poll_interval=self._poll_interval)
            self._units = {u.key: u for u in self.source.units()}
            probe.set_targets(self._targets())
            probe.start()
            try:
                report = probe.report()
            finally:
                probe.stop()
        data: dict[str, object] = report.as_dict()
        for name in ("max_user_watches", "max_user_instances"):
            try:
                data[name] = int(Path(f"/proc/sys/fs/inotify/{name}").read_text().strip())
            except (OSError, ValueError):
                pass
        if self.source.store_error:
            data["baselines"] = self.source.store_error
        n_native, n_polled = len(report.native), len(report.polled)
        if report.mode == "inotify":
            status, detail = "ok", f"watching {n_native} folder(s) with inotify (no polling)"
        elif report.mode == "mixed":
            status = "warn"
            detail = (f"{n_polled} folder(s) are polled because the system ran out of inotify "
                      f"watches; {n_native} use inotify. Raise fs.inotify.max_user_watches.")
        else:
            status = "warn"
            detail = (f"polling {n_polled} folder(s): inotify is not available here, so hand "
                      "edits are noticed within about a second instead of at once")
        if self.source.store_error:
            status, detail = "warn", detail + "; " + self.source.store_error
        return status, detail, data

    def _targets(self) -> list[tuple[Path, bool]]:
        roots = self.source.watch_roots
        targets: list[tuple[Path, bool]] = [(roots.personas_dir, False), (roots.baselines_dir, True),
                                            (roots.settings_file.parent, False)]
        for u in self._units.values():
            targets.append((u.root, False))
            if not u.is_soul:
                targets.append((u.root / SKILLS, True))
                targets.append((u.root / AGENTS, True))  # specialists: agents/*.md, agents/*/MEMORY.md
                targets.append((u.root / MEMORIES, False))  # a Hermes home's USER.md, MEMORY.md
        for links in self._links.values():
            targets += [(Path(t).parent, False) for t in links]
        return targets

    def _update_links(self, unit: Unit, observed: list[Observation]) -> None:
        """Re-target the watcher when the unit's outside link targets changed.

        Editing such a target (a soul kept in a dotfiles repository, say) changes what the
        persona reads, so the target's folder is watched too.
        """
        targets = frozenset(o.status.link_target for o in observed if o.status.link_target)
        if self._links.get(unit.key, frozenset()) != targets:
            self._links = {**self._links, unit.key: targets}  # replaced whole: read without a lock
            self._refresh_units()

    def _refresh_units(self) -> None:
        with self._lock:
            # Units seen earlier stay: a persona folder deleted by hand may come back, and its
            # files must show as missing meanwhile.
            self._units = {**self._units, **{u.key: u for u in self.source.units()}}
            if self._watcher is not None:
                self._watcher.set_targets(self._targets())

    def _on_path(self, path: str, is_dir: bool) -> None:
        """Watcher callback: map a changed path to the units it may affect, and debounce."""
        keys: set[str] = set()
        refresh = False
        base = os.path.basename(path)
        if is_editor_dropping(base) and not is_dir:
            return
        roots = self.source.watch_roots
        bl = str(roots.baselines_dir)
        if path == str(roots.settings_file):
            refresh = True  # an added persona folder or another soul file may be named there
        elif path.startswith(bl + os.sep):
            key = Path(path).relative_to(bl).parts[0]
            if key in self._units:
                keys.add(key)
        elif is_dir:
            pd = str(roots.personas_dir)
            # A persona folder came or went, or the personas folder itself (or a parent) did.
            refresh = os.path.dirname(path) == pd or path == pd or pd.startswith(path + os.sep)
        for key, links in list(self._links.items()):
            if path in links or (is_dir and any(t.startswith(path + os.sep) for t in links)):
                keys.add(key)
        for u in list(self._units.values()):
            root = str(u.root)
            if u.soul_file is not None:
                if path == str(u.soul_file) or (is_dir and str(u.soul_file).startswith(path + os.sep)):
                    keys.add(u.key)
                continue
            in_root = os.path.dirname(path) == root
            in_skills = path.startswith(root + os.sep + SKILLS + os.sep)
            in_memories = os.path.dirname(path) == os.path.join(root, MEMORIES)
            in_agents = os.path.dirname(path) == os.path.join(root, AGENTS)
            in_memory = os.path.dirname(os.path.dirname(path)) == os.path.join(root, AGENTS)
            if (
                path == root
                or (is_dir and root.startswith(path + os.sep))
                or (in_root and (base in BOOTSTRAP_ORDER or base in (SKILLS, MEMORIES, AGENTS)))
                or (in_agents and (base.endswith(AGENT_SUFFIX) or is_dir))
                or (in_memory and base == AGENT_MEMORY)
                or (in_memories and f"{MEMORIES}/{base}" in HERMES_MEMORIES.values())
                or (in_skills and (base == SKILL_FILE or is_dir))
            ):
                keys.add(u.key)
        if not keys and not refresh:
            return
        with self._cond:
            now = time.monotonic()
            for k in keys:
                self._debouncer.note(k, now)
            self._refresh_wanted = self._refresh_wanted or refresh
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._running:
                    deadline = self._debouncer.next_deadline()
                    if self._refresh_wanted:
                        break
                    if deadline is not None and deadline <= time.monotonic():
                        break
                    self._cond.wait(None if deadline is None else deadline - time.monotonic())
                if not self._running:
                    return
                due = self._debouncer.due(time.monotonic())
                refresh, self._refresh_wanted = self._refresh_wanted, False
            try:
                if refresh:
                    before = set(self._units)
                    self.source.reload_settings()
                    self._refresh_units()
                    with self._cond:  # a new folder is scanned once it has gone quiet
                        for k in self._units:
                            if k not in before:
                                self._debouncer.note(k, time.monotonic())
                for key in due:
                    unit = self._units.get(key)
                    if unit is not None:
                        self.settle(unit)
            except Exception:  # the drift thread must survive one bad folder
                log.exception("drift re-scan failed")

    def settle(self, unit: Unit) -> None:
        """One settle of a unit: read each file once, announce what changed."""
        observed = self.source.observe(unit)
        for o in observed:
            self.announce(o)
        self._note_gone(unit, observed)
        self._update_links(unit, observed)

    def _note_gone(self, unit: Unit, observed: list[Observation]) -> None:
        """Files seen before that no observation covers now (new files removed before
        approval): announced as missing."""
        listed = {(o.status.path, o.status.file) for o in observed}
        for (path, name), seen in list(self._last.items()):
            same_unit = str(unit.path_of(name)) == path
            if same_unit and (path, name) not in listed and seen[0] != MISSING:
                self.announce(Observation(
                    FileStatus(unit.persona, name, path, MISSING, "", "", (), "the file was removed"), None, None))

    def announce(self, obs: Observation) -> None:
        """Emit an event when a file's state, content, approval or link target changed since
        last seen; a file first seen as approved is not news."""
        st = obs.status
        key = (st.path, st.file)
        now = _seen(st)
        with self._lock:
            prev = self._last.get(key)
            self._last[key] = now
            subscribers = list(self._subscribers)
        if prev == now or (prev is None and st.state == APPROVED):
            return
        event = event_of(obs)
        for cb in subscribers:
            try:
                cb(event)
            except Exception:  # one bad subscriber must not silence the others
                log.exception("a drift subscriber failed")


def _seen(st: FileStatus) -> tuple[str, str, str, str]:
    """What makes a file's situation different from before: state, content, approval, link."""
    return (st.state, st.current, st.baseline, st.link_target)
