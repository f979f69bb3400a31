"""Keeping drift live: watcher events, debounced, re-read, announced as :class:`DriftEvent`.

The on-demand half (:class:`~hearthside.app.drift.DriftService`: scan, approve, diff) has no
threads; this half owns them and the timing rules. The watcher's callback maps a changed path
to the watched units it may affect (a bootstrap file, a skill, a link's target, the settings
that name added folders, an approval written by another process); a :class:`Debouncer` turns
a burst into one re-scan; and only a change of state, or a further change after a quiet spell
(:data:`REPEAT_COOLDOWN`), is announced, so an autosaving editor cannot flood the tray.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.compose import BOOTSTRAP_ORDER, read_persona_file
from ..core.drift import (
    APPROVED,
    MISSING,
    REJECTED,
    Debouncer,
    Verdict,
    is_editor_dropping,
    summarize,
)
from .drift import SKILL_FILE, SKILLS, DriftEvent, FileStatus, Unit

if TYPE_CHECKING:  # watchdog is imported only when watching starts: `soul status` stays quick
    from ..adapters.watcher import FolderWatcher, WatchReport
    from .drift import DriftService

log = logging.getLogger(__name__)

#: A file that keeps changing while it stays drifted (or new) is announced at most this often;
#: a change of state is always announced at once.
REPEAT_COOLDOWN = 5.0


class LiveDrift:
    """Watches what a :class:`DriftService` covers and announces each change of state."""

    def __init__(self, service: DriftService, quiet: float, max_wait: float, poll_interval: float) -> None:
        self.service = service
        self._lock = threading.RLock()
        self._subscribers: list[Callable[[DriftEvent], None]] = []
        self._last: dict[tuple[str, str], tuple[str, str, str]] = {}
        self._last_emit: dict[tuple[str, str], float] = {}
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
        """Call ``callback(DriftEvent)`` on every state change (from the watcher thread).

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
            for st in self.service.scan():
                self._last[(st.path, st.file)] = (st.state, st.current, st.baseline)
            self._update_links(list(self._units.values()))
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
            self._units = {u.key: u for u in self.service.units()}
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
        if self.service.store_error:
            data["baselines"] = self.service.store_error
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
        if self.service.store_error:
            status, detail = "warn", detail + "; " + self.service.store_error
        return status, detail, data

    def _targets(self) -> list[tuple[Path, bool]]:
        targets: list[tuple[Path, bool]] = [(self.service.paths.personas_dir, False),
                                            (self.service.paths.baselines_dir, True),
                                            (self.service.paths.settings_file.parent, False)]
        for u in self._units.values():
            targets.append((u.root, False))
            if not u.is_soul:
                targets.append((u.root / SKILLS, True))
        for links in self._links.values():
            targets += [(Path(t).parent, False) for t in links]
        return targets

    def _outside_links(self, unit: Unit) -> frozenset[str]:
        """Real paths of the files a unit reaches through links that point outside it.

        Editing such a target (a soul kept in a dotfiles repository, say) changes what the
        persona reads, so the target's folder is watched too.
        """
        targets = (self.service.outside_target(unit, name) for name in self.service.file_names(unit))
        return frozenset(t for t in targets if t)

    def _update_links(self, units: list[Unit]) -> None:
        """Re-target the watcher when the set of outside link targets changed."""
        links = {**self._links, **{u.key: self._outside_links(u) for u in units}}
        if links != self._links:
            self._links = links  # replaced whole: the watcher thread reads it without a lock
            self._refresh_units()

    def _refresh_units(self) -> None:
        with self._lock:
            # Units seen earlier stay: a persona folder deleted by hand may come back, and its
            # files must show as missing meanwhile.
            self._units = {**self._units, **{u.key: u for u in self.service.units()}}
            if self._watcher is not None:
                self._watcher.set_targets(self._targets())

    def _on_path(self, path: str, is_dir: bool) -> None:
        """Watcher callback: map a changed path to the units it may affect, and debounce."""
        keys: set[str] = set()
        refresh = False
        base = os.path.basename(path)
        if is_editor_dropping(base) and not is_dir:
            return
        bl = str(self.service.paths.baselines_dir)
        if path == str(self.service.paths.settings_file):
            refresh = True  # an added persona folder or another soul file may be named there
        elif path.startswith(bl + os.sep):
            key = Path(path).relative_to(bl).parts[0]
            if key in self._units:
                keys.add(key)
        elif is_dir:
            pd = str(self.service.paths.personas_dir)
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
            if (
                path == root
                or (is_dir and root.startswith(path + os.sep))
                or (in_root and (base in BOOTSTRAP_ORDER or base == SKILLS))
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
                    self.service.settings.reload()
                    self._refresh_units()
                    with self._cond:  # a new folder is scanned once it has gone quiet
                        for k in self._units:
                            if k not in before:
                                self._debouncer.note(k, time.monotonic())
                for key in due:
                    unit = self._units.get(key)
                    if unit is not None:
                        for st in self.service.scan_unit(unit):
                            self.note_state(st)
                        self._note_gone(unit)
                        self._update_links([unit])
            except Exception:  # the drift thread must survive one bad folder
                log.exception("drift re-scan failed")

    def _note_gone(self, unit: Unit) -> None:
        """Files that vanished from the listing (new files removed before approval)."""
        listed = {(str(unit.soul_file or unit.root / n), n) for n in self.service.file_names(unit)}
        for (path, name), (state, _cur, _bl) in list(self._last.items()):
            same_unit = (unit.soul_file is not None and path == str(unit.soul_file)) or (
                unit.soul_file is None and path == str(unit.root / name)
            )
            if same_unit and (path, name) not in listed and state != MISSING:
                self.note_state(FileStatus(unit.persona, name, path, MISSING, "", "", (), "the file was removed"))

    def note_state(self, st: FileStatus) -> None:
        """Emit an event when a file's state changed, or its content changed again after a
        quiet spell (:data:`REPEAT_COOLDOWN`), since last seen."""
        key = (st.path, st.file)
        now = (st.state, st.current, st.baseline)
        with self._lock:
            prev = self._last.get(key)
            self._last[key] = now
            subscribers = list(self._subscribers)
            if prev == now or (prev is None and st.state == APPROVED):
                return
            same_state = prev is not None and prev[0] == st.state
            if same_state and st.state in (MISSING, REJECTED, APPROVED):
                return
            t = time.monotonic()
            if same_state and t - self._last_emit.get(key, -REPEAT_COOLDOWN) < REPEAT_COOLDOWN:
                return  # still changing: the first announcement stands
            self._last_emit[key] = t
        approved = None
        if st.baseline:
            unit_key = next((u.key for u in self._units.values()
                             if str(u.soul_file or "") == st.path or str(u.root / st.file) == st.path), "")
            b, _ = self.service.store.load(unit_key, st.file) if unit_key else (None, "")
            approved = b.content if b else None
        current = None
        if st.current:
            r = read_persona_file(st.path, st.file)
            current = r.body
        summary = summarize(st.file, Verdict(st.state, st.reason), approved, current)
        event = DriftEvent(st.persona, st.file, st.path, st.state, summary)
        for cb in subscribers:
            try:
                cb(event)
            except Exception:  # one bad subscriber must not silence the others
                log.exception("a drift subscriber failed")
