"""The drift service: which watched files changed since the user approved them, live.

It wires the pieces: :mod:`hearthside.core.drift` decides, :class:`BaselineStore` remembers
approvals in the state dir, :class:`FolderWatcher` notices changes. Files are read only through
``SoulStore`` (the user soul) and ``read_persona_file`` (persona files and skills), so drift
fingerprints cover exactly the text that reaches the prompt. Nothing here writes, renames,
chmods or deletes a watched file: the only writes go to the state dir.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.compose import BOOTSTRAP_ORDER, read_persona_file
from ..core.drift import (
    APPROVED,
    MISSING,
    REJECTED,
    Baseline,
    Debouncer,
    Reading,
    Verdict,
    excluded_names,
    is_editor_dropping,
    judge,
    summarize,
    unified_diff,
)
from ..core.soul import SoulStore
from .baselines import BaselineStore, BaselineWriteError
from .paths import AppPaths
from .personas import PersonaService
from .settings import SettingsStore

if TYPE_CHECKING:  # watchdog is imported only when watching starts: `soul status` stays quick
    from ..adapters.watcher import FolderWatcher, WatchReport

log = logging.getLogger(__name__)

#: Quiet time after the last change notice before a file is re-read (see docs/drift.md).
DEBOUNCE_QUIET = 0.1
#: A burst that never goes quiet is still reported this long after it began.
DEBOUNCE_MAX_WAIT = 2.0
#: A file that keeps changing while it stays drifted (or new) is announced at most this often;
#: a change of state is always announced at once.
REPEAT_COOLDOWN = 5.0
#: At most this many skills per persona are tracked, so a huge skills/ cannot stall a scan.
MAX_SKILLS = 256
SKILLS = "skills"
SKILL_FILE = "SKILL.md"


class DriftError(Exception):
    """A drift action the user asked for could not be done; the message says why and what next."""


@dataclass(frozen=True)
class FileStatus:
    """One watched file's state against its approved copy."""

    persona: str  # "" for the user soul
    file: str  # "soul.md", "SOUL.md", "skills/NAME/SKILL.md"
    path: str
    state: str
    baseline: str  # approved fingerprint, "" when none (or damaged)
    current: str  # current fingerprint, "" when unusable or gone
    findings: tuple[str, ...] = ()
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "state": self.state,
            "baseline": self.baseline,
            "current": self.current,
            "findings": list(self.findings),
            "persona": self.persona,
            "file": self.file,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class DriftEvent:
    """A change in a watched file's state, for the tray badge and notifications."""

    persona: str
    file: str
    path: str
    state: str
    summary: str

    def as_dict(self) -> dict[str, str]:
        return {"persona": self.persona, "file": self.file, "path": self.path,
                "state": self.state, "summary": self.summary}


@dataclass(frozen=True)
class HeldBack:
    """What strict mode keeps out of a new session until the user approves it."""

    files: frozenset[str] = frozenset()  # bootstrap names, e.g. "SOUL.md"
    skills: frozenset[str] = frozenset()  # persona skill names (folders under skills/)
    soul: bool = False  # the user soul (soul.md)

    def notes(self) -> list[str]:
        """One line per held-back item, for the session's notes."""
        names = sorted(self.files) + [f"skill {n}" for n in sorted(self.skills)]
        names += ["your soul (soul.md)"] if self.soul else []
        return [f"{n} left out: it changed since you approved it (strict mode)" for n in names]


@dataclass(frozen=True)
class Unit:
    """A watched unit: the user soul (one file) or a persona folder."""

    key: str
    persona: str  # "" for the soul
    root: Path  # the folder (for the soul: the folder holding soul.md)
    soul_file: Path | None = None

    @property
    def is_soul(self) -> bool:
        return self.soul_file is not None


def _unit_key(kind: str, path: Path) -> str:
    digest = hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:16]
    return f"{kind}-{digest}"


class DriftService:
    """Scans, approves, diffs and live-watches the soul and every persona folder."""

    def __init__(
        self,
        paths: AppPaths,
        settings: SettingsStore,
        personas: PersonaService,
        soul_path: Callable[[], str],
        *,
        quiet: float = DEBOUNCE_QUIET,
        max_wait: float = DEBOUNCE_MAX_WAIT,
        poll_interval: float = 1.0,
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.personas = personas
        self._soul_path = soul_path
        self.store = BaselineStore(paths.baselines_dir)
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

    # -- what is watched -------------------------------------------------------------------

    def units(self) -> list[Unit]:
        """The soul plus every persona folder (existing or not), soul first."""
        soul = Path(os.path.abspath(self._soul_path()))
        out = [Unit(_unit_key("soul", soul), "", soul.parent, soul)]
        for info in self.personas.list():
            root = Path(os.path.abspath(info.path))
            out.append(Unit(_unit_key("persona", root), info.name, root))
        return out

    def _unit_for_dir(self, folder: str | os.PathLike[str]) -> Unit:
        root = Path(os.path.abspath(os.fspath(folder)))
        for u in self.units():
            if not u.is_soul and u.root == root:
                return u
        return Unit(_unit_key("persona", root), root.name, root)

    def _names(self, unit: Unit) -> list[str]:
        if unit.soul_file is not None:
            names = [unit.soul_file.name]
        else:
            names = list(BOOTSTRAP_ORDER)
            skills = unit.root / SKILLS
            try:
                entries = sorted(e.name for e in os.scandir(skills) if e.is_dir(follow_symlinks=False))
            except OSError:
                entries = []
            names += [f"{SKILLS}/{n}/{SKILL_FILE}" for n in entries[:MAX_SKILLS]]
        for n in self.store.files(unit.key):
            if n not in names:
                names.append(n)
        return names

    # -- reading ---------------------------------------------------------------------------

    def _read(self, unit: Unit, name: str) -> Reading:
        path = unit.root / name if unit.soul_file is None else unit.soul_file
        exists = os.path.lexists(path)
        if not exists:
            return Reading(False, None, reason="the file does not exist")
        findings: list[str] = []
        if os.path.islink(path):
            # Compare real paths: a folder reached through a linked parent is still itself.
            target, root = os.path.realpath(path), os.path.realpath(unit.root)
            inside = target == root or target.startswith(root + os.sep)
            if os.path.exists(target) and not inside:
                findings.append(f"{name} is a symbolic link to {target}, outside {unit.root}")
        if unit.soul_file is not None:
            res = SoulStore(str(path)).load_with_meta()
            if res.reason:
                return Reading(True, None, reason=res.reason, findings=tuple(findings))
            return Reading(True, res.body, res.sha256, res.size, "", tuple(findings))
        pf = read_persona_file(path, name)
        if pf.body is None:
            return Reading(True, None, reason=pf.reason, findings=tuple(findings))
        if pf.finding is not None:
            findings.append(f"{name} contains an {pf.finding.describe()}")
        return Reading.of_text(pf.body, findings)

    def _scan_unit(self, unit: Unit) -> list[FileStatus]:
        """Judge every file of a unit; spends trust on first use when it is the first scan.

        First use is spent only once a file is present: an empty new folder (a persona being
        created right now) keeps it for the files about to arrive.
        """
        with self._lock:
            folder_exists = os.path.isdir(unit.root) if not unit.is_soul else True
            first = folder_exists and not self.store.unit_scanned(unit.key)
            out: list[FileStatus] = []
            any_present = False
            for name in self._names(unit):
                reading = self._read(unit, name)
                any_present = any_present or reading.exists
                baseline, damage = self.store.load(unit.key, name)
                if not reading.exists and baseline is None and not damage and not unit.is_soul:
                    continue  # an absent bootstrap file that was never approved is not news
                verdict = judge(reading, baseline, baseline_error=damage, first_scan=first)
                if verdict.trust:
                    baseline = Baseline.of(reading, time.time())
                    self.store.save(unit.key, name, baseline, remember_on_failure=True)
                path = unit.soul_file if unit.soul_file is not None else unit.root / name
                out.append(FileStatus(
                    unit.persona, name, str(path), verdict.state,
                    baseline.sha256 if baseline else "", reading.sha256 if reading.body is not None else "",
                    reading.findings, verdict.reason,
                ))
            if first and any_present:
                self.store.mark_scanned(unit.key, {"root": str(unit.root), "persona": unit.persona},
                                        durable=False)
            return out

    def scan(self) -> list[FileStatus]:
        """Every watched file's state; the first scan of a unit trusts what it finds."""
        out: list[FileStatus] = []
        for unit in self.units():
            out += self._scan_unit(unit)
        return out

    def status(self) -> list[FileStatus]:
        """The same as :meth:`scan` (a status is always read fresh from disk)."""
        return self.scan()

    @property
    def store_error(self) -> str:
        """Why approvals cannot be saved right now ("" when they can)."""
        return self.store.error

    # -- strict mode -----------------------------------------------------------------------

    @property
    def strict_mode(self) -> bool:
        """Setting ``drift.strict``: leave drifted and new files out of new sessions.

        Read fresh from disk each time: the user may flip it from the CLI while the tray runs.
        """
        self.settings.reload()
        return bool(self.settings.get("drift.strict", False))

    def set_strict(self, on: bool) -> None:
        self.settings.set("drift.strict", bool(on))

    def held_back(self, persona_dir: str | os.PathLike[str]) -> HeldBack:
        """What a new session of this persona must leave out: in strict mode, every drifted or
        new bootstrap file, persona skill and the user soul; nothing when strict mode is off.

        Read fresh when the session starts; a session already running keeps its snapshot.
        """
        if not self.strict_mode:
            return HeldBack()
        soul_unit = self.units()[0]
        statuses = self._scan_unit(self._unit_for_dir(persona_dir)) + self._scan_unit(soul_unit)
        held = excluded_names(((s.path, s.state) for s in statuses), True)
        files: set[str] = set()
        skills: set[str] = set()
        for s in statuses:
            if s.path not in held:
                continue
            if s.persona == "" and s.path == str(soul_unit.soul_file):
                continue
            if s.file in BOOTSTRAP_ORDER:
                files.add(s.file)
            elif s.file.startswith(f"{SKILLS}/"):
                skills.add(s.file.split("/")[1])
        return HeldBack(frozenset(files), frozenset(skills), str(soul_unit.soul_file) in held)

    def excluded(self, persona_dir: str | os.PathLike[str]) -> frozenset[str]:
        """Bootstrap names a new session of this persona must leave out (strict mode only)."""
        return self.held_back(persona_dir).files

    # -- approve and diff ------------------------------------------------------------------

    def _resolve(self, spec: str) -> list[tuple[Unit, str | None]]:
        """Map a user's PATH (file, persona folder, or persona name) to (unit, file or None)."""
        units = self.units()
        p = Path(os.path.abspath(os.path.expanduser(spec)))
        for u in units:
            if u.soul_file is not None and p == u.soul_file:
                return [(u, None)]
        for u in units:
            if u.is_soul:
                continue
            if p == u.root:
                return [(u, None)]
            try:
                rel = p.relative_to(u.root).as_posix()
            except ValueError:
                continue
            if rel in BOOTSTRAP_ORDER or rel.startswith(f"{SKILLS}/"):
                if rel.startswith(f"{SKILLS}/") and not rel.endswith(f"/{SKILL_FILE}"):
                    rel = rel.rstrip("/") + f"/{SKILL_FILE}"
                return [(u, rel)]
        for u in units:
            if not u.is_soul and u.persona == spec:
                return [(u, None)]
        raise DriftError(
            f"{spec} is not a watched file, persona folder or persona name. Run "
            "'hearthside soul status' to see what is watched."
        )

    def approve(self, paths: list[str] | None = None) -> list[FileStatus]:
        """Approve files (a file, a persona's folder or name, or everything when ``paths`` is
        empty): their current content becomes the new baseline. Writes only the state dir.

        Returns the statuses acted on: each approval (state ``approved``, or ``missing`` for an
        approved removal), then each file that could not be approved because it cannot be used
        (state ``rejected``, with the reason), so the caller can say so. When every file named
        was of that kind, :class:`DriftError` is raised instead.
        """
        with self._lock:
            targets: list[tuple[Unit, str | None]] = []
            if not paths:
                targets = [(u, None) for u in self.units()]
            else:
                for spec in paths:
                    targets += self._resolve(spec)
            done: list[FileStatus] = []
            refused: list[FileStatus] = []
            try:
                for unit, only in targets:
                    self._scan_unit(unit)  # spend first-use trust before approving
                    names = [only] if only else self._names(unit)
                    for name in names:
                        reading = self._read(unit, name)
                        path = str(unit.soul_file or unit.root / name)
                        if not reading.exists:
                            if name in self.store.files(unit.key) or self.store.load(unit.key, name)[1]:
                                self.store.remove(unit.key, name)
                                done.append(FileStatus(unit.persona, name, path, MISSING, "", "", (), "removal approved"))
                            continue
                        if reading.body is None:
                            refused.append(FileStatus(unit.persona, name, path, REJECTED, "", "",
                                                      reading.findings, reading.reason))
                            continue
                        current, damage = self.store.load(unit.key, name)
                        if (current is not None and not damage and current.sha256 == reading.sha256
                                and not self.store.in_memory_only(unit.key, name)):
                            continue  # already approved as it is
                        self.store.save(unit.key, name, Baseline.of(reading, time.time()), remember_on_failure=False)
                        done.append(FileStatus(unit.persona, name, path, APPROVED, reading.sha256,
                                               reading.sha256, reading.findings, "approved"))
                    self.store.mark_scanned(unit.key, {"root": str(unit.root), "persona": unit.persona})
            except BaselineWriteError as exc:
                raise DriftError(str(exc)) from exc
            if refused and paths and not done:
                raise DriftError(
                    "Nothing was approved: " + "; ".join(f"{r.path}: {r.reason}" for r in refused)
                    + ". Fix the file and approve again."
                )
        for st in done:  # announced outside the lock: a subscriber may call back into us
            self._note_state(st)
        return done + refused

    def diff(self, path: str) -> str:
        """A unified diff from the approved copy to the current content of one file."""
        targets = self._resolve(path)
        unit, name = targets[0]
        if name is None:
            if unit.soul_file is None:
                raise DriftError(f"{path} is a persona folder; name one file in it to see a diff.")
            name = unit.soul_file.name
        baseline, damage = self.store.load(unit.key, name)
        reading = self._read(unit, name)
        header = ""
        if damage:
            header += f"# the approved copy cannot be used: {damage}\n"
        elif baseline is None:
            header += "# no approved copy yet: everything shows as added\n"
        current = reading.body
        if current is None and reading.exists:
            header += f"# the current file is not used: {reading.reason}\n"
            shown = read_persona_file(unit.soul_file or unit.root / name, name)
            current = shown.body or ""
        elif current is None:
            header += "# the file does not exist now\n"
            current = ""
        return header + unified_diff(baseline.content if baseline else "", current, name)

    # -- live watching ---------------------------------------------------------------------

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
            for st in self.scan():
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

    def watch_report(self) -> WatchReport | None:
        """How the live watcher watches (None when it is not running)."""
        w = self._watcher
        return w.report() if w is not None else None

    def doctor_report(self) -> tuple[str, str, dict[str, object]]:
        """``(status, detail, data)`` for ``hearthside doctor``: inotify or polling, and why.

        Uses the live watcher when it runs; otherwise places the same watches briefly.
        """
        report = self.watch_report()
        if report is None:
            from ..adapters.watcher import FolderWatcher

            probe = FolderWatcher(lambda _p, _d: None, poll_interval=self._poll_interval)
            self._units = {u.key: u for u in self.units()}
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
        if self.store_error:
            data["baselines"] = self.store_error
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
        if self.store_error:
            status, detail = "warn", detail + "; " + self.store_error
        return status, detail, data

    def _targets(self) -> list[tuple[Path, bool]]:
        targets: list[tuple[Path, bool]] = [(self.paths.personas_dir, False),
                                            (self.paths.baselines_dir, True),
                                            (self.paths.settings_file.parent, False)]
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
        root = os.path.realpath(unit.root)
        out: set[str] = set()
        for name in self._names(unit):
            path = unit.soul_file if unit.soul_file is not None else unit.root / name
            if os.path.islink(path):
                target = os.path.realpath(path)
                if target != root and not target.startswith(root + os.sep):
                    out.add(target)
        return frozenset(out)

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
            self._units = {**self._units, **{u.key: u for u in self.units()}}
            if self._watcher is not None:
                self._watcher.set_targets(self._targets())

    def _on_path(self, path: str, is_dir: bool) -> None:
        """Watcher callback: map a changed path to the units it may affect, and debounce."""
        keys: set[str] = set()
        refresh = False
        base = os.path.basename(path)
        if is_editor_dropping(base) and not is_dir:
            return
        bl = str(self.paths.baselines_dir)
        if path == str(self.paths.settings_file):
            refresh = True  # an added persona folder or another soul file may be named there
        elif path.startswith(bl + os.sep):
            key = Path(path).relative_to(bl).parts[0]
            if key in self._units:
                keys.add(key)
        elif is_dir:
            pd = str(self.paths.personas_dir)
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
                    self.settings.reload()
                    self._refresh_units()
                    with self._cond:  # a new folder is scanned once it has gone quiet
                        for k in self._units:
                            if k not in before:
                                self._debouncer.note(k, time.monotonic())
                for key in due:
                    unit = self._units.get(key)
                    if unit is not None:
                        for st in self._scan_unit(unit):
                            self._note_state(st)
                        self._note_gone(unit)
                        self._update_links([unit])
            except Exception:  # the drift thread must survive one bad folder
                log.exception("drift re-scan failed")

    def _note_gone(self, unit: Unit) -> None:
        """Files that vanished from the listing (new files removed before approval)."""
        listed = {(str(unit.soul_file or unit.root / n), n) for n in self._names(unit)}
        for (path, name), (state, _cur, _bl) in list(self._last.items()):
            same_unit = (unit.soul_file is not None and path == str(unit.soul_file)) or (
                unit.soul_file is None and os.path.dirname(path) == str(unit.root) and name in BOOTSTRAP_ORDER
            )
            if same_unit and (path, name) not in listed and state != MISSING:
                self._note_state(FileStatus(unit.persona, name, path, MISSING, "", "", (), "the file was removed"))

    def _note_state(self, st: FileStatus) -> None:
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
            b, _ = self.store.load(unit_key, st.file) if unit_key else (None, "")
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
