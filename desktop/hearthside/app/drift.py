"""The drift service: which watched files changed since the user approved them.

It wires the pieces: :mod:`hearthside.core.drift` decides, :class:`BaselineStore` remembers
approvals in the state dir, and :class:`~hearthside.app.drift_live.LiveDrift` (its own module,
since it owns the threads) keeps the view live. Files are read only through
``SoulStore`` (the user soul) and ``read_persona_file`` (persona files and skills), so drift
fingerprints cover exactly the text that reaches the prompt. Nothing here writes, renames,
chmods or deletes a watched file: the only writes go to the state dir.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.compose import (
    PERSONA_FILE_NAMES,
    bootstrap_files,
    outside_target,
    read_persona_file,
    secret_finding,
)
from ..core.drift import (
    APPROVED,
    MISSING,
    REJECTED,
    Baseline,
    Reading,
    excluded_names,
    judge,
    unified_diff,
)
from ..core.soul import SoulStore
from .baselines import BaselineStore, BaselineWriteError
from .drift_live import LiveDrift
from .drift_types import (
    AGENT_MEMORY,
    AGENT_SUFFIX,
    AGENTS,
    SKILL_FILE,
    SKILLS,
    DriftEvent,
    FileStatus,
    HeldBack,
    Observation,
    Unit,
    WatchRoots,
    is_agent_file_name,
    is_agent_name,
)
from .paths import AppPaths
from .personas import PersonaService
from .settings import SettingsStore

if TYPE_CHECKING:
    from ..adapters.watcher import WatchReport

__all__ = [
    "CHANGED_SINCE_SHOWN", "DEBOUNCE_MAX_WAIT", "DEBOUNCE_QUIET", "MAX_SKILLS", "SKILLS", "SKILL_FILE", "DriftError",
    "DriftEvent", "DriftService", "FileStatus", "HeldBack", "Observation", "Unit",
]

#: Quiet time after the last change notice before a file is re-read (README, design notes).
DEBOUNCE_QUIET = 0.1
#: A burst that never goes quiet is still reported this long after it began.
DEBOUNCE_MAX_WAIT = 2.0
#: At most this many skills per persona are tracked, so a huge skills/ cannot stall a scan.
MAX_SKILLS = 256
#: At most this many agent files per persona are tracked (the listing reads no more either).
MAX_AGENT_FILES = 256


def agent_file_names(root: Path) -> list[str]:
    """The agent files of a persona folder as watched names (``agents/x.md``), sorted, capped.

    Links count (judged, like a linked bootstrap file, by where they lead); folders and hidden
    files do not. The specialists' listing reads exactly these names, so drift watches what a
    session can use."""
    try:
        entries = sorted(e.name for e in os.scandir(root / AGENTS)
                         if e.name.endswith(AGENT_SUFFIX) and not e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    names = [f"{AGENTS}/{n}" for n in entries]
    return [n for n in names if is_agent_file_name(n)][:MAX_AGENT_FILES] + agent_memory_names(root)


def agent_memory_names(root: Path) -> list[str]:
    """The specialists' memory files of a persona folder (``agents/<name>/MEMORY.md``) that
    exist, as watched names, sorted, capped: a session reads them (``memory: persona``), so
    drift watches them like the agent files."""
    try:
        dirs = sorted(e.name for e in os.scandir(root / AGENTS) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []
    names = [f"{AGENTS}/{d}/{AGENT_MEMORY}" for d in dirs[:MAX_AGENT_FILES]]
    return [n for n in names if os.path.lexists(root / n)]


#: The reason on a status :meth:`DriftService.approve_shown` left waiting: it changed since shown.
CHANGED_SINCE_SHOWN = "changed since it was shown"


def shown_fingerprint(reading: Reading) -> str:
    """The fingerprint of a version as shown: its SHA-256, or "" when absent or unusable (the
    same value a status's ``current`` carries)."""
    return reading.sha256 if reading.body is not None else ""


class DriftError(Exception):
    """A drift action the user asked for could not be done; the message says why and what next."""


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
        self.live = LiveDrift(self, quiet, max_wait, poll_interval)

    @property
    def watch_roots(self) -> WatchRoots:
        """Folders watched besides the units (for the live watcher)."""
        return WatchRoots(self.paths.personas_dir, self.paths.baselines_dir, self.paths.settings_file)

    def reload_settings(self) -> None:
        """Re-read settings.toml (another process may have added a persona folder)."""
        self.settings.reload()

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

    def file_names(self, unit: Unit) -> list[str]:
        """The names watched in a unit: its bootstrap files and skills, plus any name that has
        an approved copy (so a file that vanished still shows, as missing)."""
        if unit.soul_file is not None:
            names = [unit.soul_file.name]
        else:
            # The files composing really reads (a Hermes home's memories/ ones included).
            names = [n for _, n in bootstrap_files(unit.root)]
            skills = unit.root / SKILLS
            try:
                # Linked skill folders count, as the skill catalog follows them too.
                entries = sorted(e.name for e in os.scandir(skills) if e.is_dir() and not e.name.startswith("."))
            except OSError:
                entries = []
            names += [f"{SKILLS}/{n}/{SKILL_FILE}" for n in entries[:MAX_SKILLS]]
            names += agent_file_names(unit.root)
        for n in self.store.files(unit.key):
            if n not in names:
                names.append(n)
        return names

    # -- reading ---------------------------------------------------------------------------

    def _read(self, unit: Unit, name: str, root_real: str = "") -> Reading:
        """One bounded read of a watched file: its clean text, or why it cannot be used, and
        where it really is when a link leads it outside its unit (judged on what was read).
        ``root_real`` is the unit folder's real path, when the caller already has it."""
        path = unit.path_of(name)
        if not os.path.lexists(path):
            return Reading(False, None, reason="the file does not exist")
        if unit.soul_file is not None:
            target = self.outside_target(unit, name)
            findings = self._link_findings(unit, name, target)
            res = SoulStore(str(path)).load_with_meta()
            if res.reason:
                return Reading(True, None, reason=res.reason, findings=findings, link_target=target)
            return Reading(True, res.body, res.sha256, res.size, "", findings, target)
        pf = read_persona_file(path, name)
        if pf.body is None:
            target = self.outside_target(unit, name)
            return Reading(True, None, reason=pf.reason, findings=self._link_findings(unit, name, target),
                           link_target=target)
        target = outside_target(root_real or os.path.realpath(unit.root), pf.real_path)
        findings = self._link_findings(unit, name, target)
        if pf.finding is not None:
            findings += (f"{name} contains an {pf.finding.describe()}",)
        if pf.secret:
            findings += (secret_finding(name, pf.secret),)
        return Reading.of_text(pf.body, findings, target)

    @staticmethod
    def _link_findings(unit: Unit, name: str, target: str) -> tuple[str, ...]:
        if not target or not os.path.lexists(target):
            return ()
        how = ("is a symbolic link to" if os.path.islink(unit.path_of(name))
               else "is reached through a symbolic link, at")
        return (f"{name} {how} {target}, outside {unit.root}",)

    def outside_target(self, unit: Unit, name: str) -> str:
        """Where a file really is, when a link inside the unit (the file itself, or a skill
        folder) leads outside it; "" otherwise. Real paths are compared, so a unit reached
        through a linked parent folder is still itself."""
        base = unit.soul_file.parent if unit.soul_file is not None else unit.root
        path, linked = base, False
        for part in (unit.soul_file.name,) if unit.soul_file is not None else name.split("/"):
            path = path / part
            linked = linked or os.path.islink(path)
        if not linked:
            return ""
        target, root = os.path.realpath(path), os.path.realpath(base)
        return "" if target == root or target.startswith(root + os.sep) else target

    def observe(self, unit: Unit) -> list[Observation]:
        """Judge every file of a unit, each read once; spends trust on first use when it is the
        first scan. Each observation carries the approved and current text, so whoever
        announces it needs no second read.

        First use is spent only once a file is present: an empty new folder (a persona being
        created right now) keeps it for the files about to arrive.
        """
        with self._lock:
            folder_exists = os.path.isdir(unit.root) if not unit.is_soul else True
            first = folder_exists and not self.store.unit_scanned(unit.key)
            out: list[Observation] = []
            any_present = False
            root_real = os.path.realpath(unit.root)
            for name in self.file_names(unit):
                reading = self._read(unit, name, root_real)
                any_present = any_present or reading.exists
                baseline, damage = self.store.load(unit.key, name)
                if not reading.exists and baseline is None and not damage and not unit.is_soul:
                    continue  # an absent bootstrap file that was never approved is not news
                verdict = judge(reading, baseline, baseline_error=damage, first_scan=first)
                if verdict.trust:
                    baseline = Baseline.of(reading, time.time())
                    self.store.save(unit.key, name, baseline, remember_on_failure=True)
                status = FileStatus(
                    unit.persona, name, str(unit.path_of(name)), verdict.state,
                    baseline.sha256 if baseline else "", reading.sha256 if reading.body is not None else "",
                    reading.findings, verdict.reason, reading.link_target,
                )
                out.append(Observation(status, baseline.content if baseline else None, reading.body,
                                       baseline.link_target if baseline else ""))
            if first and any_present:
                self.store.mark_scanned(unit.key, {"root": str(unit.root), "persona": unit.persona},
                                        durable=False)
            return out

    def scan_unit(self, unit: Unit) -> list[FileStatus]:
        """Every file's status in a unit (see :meth:`observe`)."""
        return [o.status for o in self.observe(unit)]

    def scan(self) -> list[FileStatus]:
        """Every watched file's state; the first scan of a unit trusts what it finds."""
        out: list[FileStatus] = []
        for unit in self.units():
            out += self.scan_unit(unit)
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

    def approved_links(self, persona_dir: str | os.PathLike[str]) -> dict[str, str]:
        """Bootstrap names (and agent files, ``agents/x.md``) whose link out of the folder the
        user approved, with the target approved. Read from the approvals only (no scan, nothing
        written): composing checks that the file still leads to that very target."""
        unit = self._unit_for_dir(persona_dir)
        out: dict[str, str] = {}
        for name in self.store.files(unit.key):
            if name in PERSONA_FILE_NAMES or is_agent_name(name):
                baseline, _ = self.store.load(unit.key, name)
                if baseline is not None and baseline.link_target:
                    out[name] = baseline.link_target
        return out

    def approved_fingerprints(self, persona_dir: str | os.PathLike[str]) -> dict[str, str]:
        """The approved fingerprint of each agent file (``agents/x.md``) of a persona folder.

        Strict mode admits an agent file only when the text a session reads has exactly this
        fingerprint, so what is used is what was approved even if the file changes between
        drift's look and the session's read. Read from the approvals only."""
        unit = self._unit_for_dir(persona_dir)
        out: dict[str, str] = {}
        for name in self.store.files(unit.key):
            if is_agent_name(name):
                baseline, _ = self.store.load(unit.key, name)
                if baseline is not None:
                    out[name] = baseline.sha256
        return out

    def held_back(self, persona_dir: str | os.PathLike[str]) -> HeldBack:
        """What a new session of this persona must leave out, and which links it may follow.

        Always: persona skills that lead outside the folder through a link the user has not
        approved (for that target). In strict mode also every drifted or new bootstrap file,
        persona skill, agent file (``agents/x.md``) and the user soul. Read fresh when the session
        starts; a session already running keeps its snapshot.
        """
        unit = self._unit_for_dir(persona_dir)
        links = self.approved_links(persona_dir)
        strict = self.strict_mode
        if strict:
            observed = self.observe(unit)
        else:  # only the skills need a look: bootstrap links are checked while composing
            observed = []
            for name in self.file_names(unit):
                if name.startswith(f"{SKILLS}/"):
                    reading = self._read(unit, name)
                    baseline, _ = self.store.load(unit.key, name)
                    status = FileStatus(unit.persona, name, str(unit.path_of(name)), "", "", "",
                                        link_target=reading.link_target)
                    observed.append(Observation(status, None, None, baseline.link_target if baseline else ""))
        link_skills: dict[str, str] = {}
        for o in observed:
            st = o.status
            if st.file.startswith(f"{SKILLS}/") and st.link_target and o.approved_link != st.link_target:
                link_skills[st.file.split("/")[1]] = (
                    f"it leads to {st.link_target}, outside the persona folder; approve the link with "
                    f"'hearthside soul approve {st.path}' to use it")
        if not strict:
            return HeldBack(links=links, link_skills=link_skills)
        soul_unit = self.units()[0]
        statuses = [o.status for o in observed] + self.scan_unit(soul_unit)
        held = excluded_names(((s.path, s.state) for s in statuses), True)
        files: set[str] = set()
        skills: set[str] = set()
        agents: set[str] = set()
        for s in statuses:
            if s.path not in held:
                continue
            if s.persona == "" and s.path == str(soul_unit.soul_file):
                continue
            if s.file in PERSONA_FILE_NAMES:
                files.add(s.file)
            elif s.file.startswith(f"{SKILLS}/"):
                skills.add(s.file.split("/")[1])
            elif is_agent_name(s.file):
                agents.add(s.file)
        return HeldBack(frozenset(files), frozenset(skills), str(soul_unit.soul_file) in held,
                        links, link_skills, frozenset(agents))

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
            if rel in PERSONA_FILE_NAMES or rel.startswith(f"{SKILLS}/") or is_agent_name(rel):
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

        Each file is read once and that very reading (its text and fingerprint) is what gets
        recorded, so what is approved is always one whole version of the file.

        Returns the statuses acted on: each approval (state ``approved``, or ``missing`` for an
        approved removal), then each file that could not be approved because it cannot be used
        (state ``rejected``, with the reason), so the caller can say so. When every file named
        was of that kind, :class:`DriftError` is raised instead.
        """
        done, _ = self._approve(paths, None)
        return done

    def approve_shown(self, shown: Mapping[str, str]) -> tuple[list[FileStatus], list[FileStatus]]:
        """Approve each file (path → the fingerprint of the version the person was shown, ""
        for "absent" or "unusable") only if its content still has that fingerprint.

        Why: a window shows a file, the person reads it and presses Approve; the file may be
        rewritten in between. The check and the record use the same single read, so content
        nobody was shown can never be approved. Returns ``(done, changed)``: what
        :meth:`approve` returns, and the current status of each file left waiting because it
        changed since it was shown.
        """
        if not shown:
            return [], []
        return self._approve(list(shown), {os.path.abspath(p): fp for p, fp in shown.items()})

    def _approve(self, paths: list[str] | None,
                 expected: Mapping[str, str] | None) -> tuple[list[FileStatus], list[FileStatus]]:
        changed: list[FileStatus] = []
        with self._lock:
            targets: list[tuple[Unit, str | None]] = []
            if not paths:
                targets = [(u, None) for u in self.units()]
            else:
                for spec in paths:
                    targets += self._resolve(spec)
            done: list[Observation] = []
            refused: list[FileStatus] = []
            try:
                for unit, only in targets:
                    self.scan_unit(unit)  # spend first-use trust before approving
                    names = [only] if only else self.file_names(unit)
                    for name in names:
                        expect = None if expected is None else expected.get(str(unit.path_of(name)))
                        obs = self._approve_file(unit, name, expect)
                        if obs is not None and obs.status.reason == CHANGED_SINCE_SHOWN:
                            changed.append(obs.status)
                        elif obs is not None:
                            if obs.status.state == REJECTED:
                                refused.append(obs.status)
                            else:
                                done.append(obs)
                    self.store.mark_scanned(unit.key, {"root": str(unit.root), "persona": unit.persona})
            except BaselineWriteError as exc:
                raise DriftError(str(exc)) from exc
            if refused and paths and not done and not changed:
                raise DriftError(
                    "Nothing was approved: " + "; ".join(f"{r.path}: {r.reason}" for r in refused)
                    + ". Fix the file and approve again."
                )
        for obs in done:  # announced outside the lock: a subscriber may call back into us
            self.live.announce(obs)
        return [o.status for o in done] + refused, changed

    def _approve_file(self, unit: Unit, name: str, expect: str | None = None) -> Observation | None:
        """Make one file's current content (and, for a link leading outside, its target) its
        baseline, or approve its removal; ``None`` when there is nothing to do. A file that
        cannot be used (a special file under /proc, say) comes back ``rejected``, unsaved.

        With ``expect`` (the fingerprint the person was shown), a reading with any other
        fingerprint is not recorded: it comes back with the reason :data:`CHANGED_SINCE_SHOWN`
        and its current state."""
        reading = self._read(unit, name)
        path = str(unit.path_of(name))
        if expect is not None and shown_fingerprint(reading) != expect:
            baseline, damage = self.store.load(unit.key, name)
            verdict = judge(reading, baseline, baseline_error=damage, first_scan=False)
            return Observation(FileStatus(unit.persona, name, path, verdict.state,
                                          baseline.sha256 if baseline else "", shown_fingerprint(reading),
                                          reading.findings, CHANGED_SINCE_SHOWN, reading.link_target),
                               None, reading.body)
        if not reading.exists:
            if name in self.store.files(unit.key) or self.store.load(unit.key, name)[1]:
                self.store.remove(unit.key, name)
                return Observation(FileStatus(unit.persona, name, path, MISSING, "", "", (), "removal approved"),
                                   None, None)
            return None
        if reading.body is None:
            return Observation(FileStatus(unit.persona, name, path, REJECTED, "", "", reading.findings,
                                          reading.reason, reading.link_target), None, None)
        current, damage = self.store.load(unit.key, name)
        if (current is not None and not damage and current.sha256 == reading.sha256
                and current.link_target == reading.link_target
                and not self.store.in_memory_only(unit.key, name)):
            return None  # already approved as it is
        self.store.save(unit.key, name, Baseline.of(reading, time.time()), remember_on_failure=False)
        reason = f"approved (the link to {reading.link_target})" if reading.link_target else "approved"
        status = FileStatus(unit.persona, name, path, APPROVED, reading.sha256, reading.sha256,
                            reading.findings, reason, reading.link_target)
        return Observation(status, reading.body, reading.body, reading.link_target)

    def diff(self, path: str) -> str:
        """A unified diff from the approved copy to the current content of one file."""
        return self.diff_shown(path)[0]

    def diff_shown(self, path: str) -> tuple[str, str, str | None]:
        """``(diff, fingerprint, body)`` from one read of the file: the diff of :meth:`diff`,
        the fingerprint of the version it shows (what :meth:`approve_shown` takes) and that
        version's usable text (None when absent or unusable), so a window shows, scans and
        approves the very same version."""
        targets = self._resolve(path)
        unit, name = targets[0]
        if name is None:
            if unit.soul_file is None:
                raise DriftError(f"{path} is a persona folder; name one file in it to see a diff.")
            name = unit.soul_file.name
        baseline, damage = self.store.load(unit.key, name)
        reading = self._read(unit, name)
        header = ""
        if reading.link_target:
            approved_link = baseline.link_target if baseline else ""
            header += f"# {name} is a link to {reading.link_target}, outside its folder"
            header += ("; you approved this link\n" if approved_link == reading.link_target else
                       f"; you approved a link to {approved_link}\n" if approved_link else
                       "; it is used only once you approve the link\n")
        if damage:
            header += f"# the approved copy cannot be used: {damage}\n"
        elif baseline is None:
            header += "# no approved copy yet: everything shows as added\n"
        current = reading.body
        fp = shown_fingerprint(reading)
        if current is None and reading.exists:
            header += f"# the current file is not used: {reading.reason}\n"
            shown = read_persona_file(unit.soul_file or unit.root / name, name)
            current = shown.body or ""
        elif current is None:
            header += "# the file does not exist now\n"
            current = ""
        return header + unified_diff(baseline.content if baseline else "", current, name), fp, reading.body

    # -- live watching (threads and timing live in drift_live.LiveDrift) ------------------

    def subscribe(self, callback: Callable[[DriftEvent], None]) -> Callable[[], None]:
        """Call ``callback(DriftEvent)`` on every settled change of a watched file's state or
        content (from the watcher thread); throttling is the notifier's job.

        Returns a function that unsubscribes.
        """
        return self.live.subscribe(callback)

    def start(self) -> None:
        """Start the live watcher (idempotent); the first scan happens here, silently."""
        self.live.start()

    def stop(self) -> None:
        """Stop watching; waits (bounded) for the threads."""
        self.live.stop()

    @property
    def running(self) -> bool:
        return self.live.running

    def watch_report(self) -> WatchReport | None:
        """How the live watcher watches (None when it is not running)."""
        return self.live.report()

    def doctor_report(self) -> tuple[str, str, dict[str, object]]:
        """``(status, detail, data)`` for ``hearthside doctor``: inotify or polling, and why."""
        return self.live.doctor_report()
