"""Forks: a writing specialist works on a copy; its changes wait here for the user's review.

The registry is one small JSON file per fork in ``<state>/forks/`` (id, persona, label,
created, the parent workspace, the base versions, status) beside the fork's folder
``<state>/forks/<id>/tree``. A fork is ``working`` while the specialist runs, ``ready`` when
it waits for review, then ``applied`` or ``discarded`` (its folder removed at once, its record
kept a while so "already applied" can be said). Forks older than 7 days are removed whole, at
start and once a day.

Applying goes through ``SerializingMerger(WorkspaceMerger(allow=the write guard))``: the same
guard every tool asks (the soul, every persona folder, Hearthside's own folders), so a fork
that changed a persona file cannot bring that change back; a file the parent changed since
the fork was made is a conflict that applies nothing and keeps the fork. Apply and discard
take one inter-process lock, so the tray and the CLI applying the same fork cannot both do it:
the second finds it already applied and says so.
"""

from __future__ import annotations

import builtins
import dataclasses
import difflib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..adapters.atomicfile import write_atomic
from ..adapters.forker import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILES,
    DirectoryForker,
    ForkRefused,
    remove_tree,
)
from ..adapters.locks import LockBusy, LockUnusable, locked
from ..adapters.workspace_dir import DirectoryWorkspace
from ..core.boundedread import read_text_bounded
from ..core.environment import (
    CommandRunner,
    Diff,
    Environment,
    EnvironmentRef,
    FileVersion,
    Fork,
    MergeConflict,
    SerializingMerger,
    WorkspaceMerger,
    diff_versions,
    new_environment,
)
from ..core.errors import ErrorKind, ServiceError
from ..core.safeparse import loads_json
from ..core.subagent import ForkHook
from ..core.writeguard import ForkWriteGuard, WriteGuard

log = logging.getLogger(__name__)

MAX_AGE_SECONDS = 7 * 24 * 3600
#: A text file larger than this is named in ``show`` without its lines.
MAX_DIFF_FILE_BYTES = 512 * 1024
MAX_RECORD_BYTES = 64 * 1024 * 1024  # 50,000 base versions fit easily
#: How long a notice waits for the registry lock (an apply holds it); busy: the next look tries again.
ANNOUNCE_LOCK_WAIT = 2.0
WORKING, READY, APPLIED, DISCARDED = "working", "ready", "applied", "discarded"


class ForkError(ServiceError):
    """A fork could not be made, shown, applied or discarded; ``str(exc)`` is one sentence.

    ``kind`` says why, for a window to decide on: NOT_FOUND (no such fork), ALREADY_DONE,
    CONFLICT (``names`` lists the files), REFUSED (the write guard), BUSY, INVALID (too big)."""

    def __init__(self, message: str, kind: ErrorKind = ErrorKind.NONE, names: tuple[str, ...] = ()) -> None:
        super().__init__(message, kind)
        self.names = names


@dataclass(frozen=True)
class ForkRecord:
    """One fork as the registry keeps it."""

    id: str
    persona: str
    label: str
    created: float
    workspace: str
    base: dict[str, str]
    status: str = WORKING
    summary: str = ""
    advisory: str = ""
    method: str = "copy"
    closed: float = 0.0
    #: the tray has shown its "ready for review" notice (kept here so a fork made by another
    #: process — ``hearthside chat`` in a terminal — is announced once, and never again after
    #: a restart)
    announced: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ForkRecord:
        base = doc.get("base")
        if not isinstance(base, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in base.items()):
            raise ValueError("base versions are not a name → version map")
        return cls(str(doc["id"]), str(doc.get("persona", "")), str(doc.get("label", "")), float(doc["created"]),
                   str(doc["workspace"]), dict(base), str(doc.get("status", WORKING)), str(doc.get("summary", "")),
                   str(doc.get("advisory", "")), str(doc.get("method", "copy")), float(doc.get("closed", 0.0)),
                   doc.get("announced") is True)


@dataclass(frozen=True)
class FileDiff:
    """One changed file: ``change`` is added, changed or removed; ``text`` its unified diff,
    empty with ``binary`` (or ``note``) when it has no lines to show."""

    name: str
    change: str
    text: str = ""
    binary: bool = False
    note: str = ""


@dataclass(frozen=True)
class ForkReview:
    """What ``show`` returns: the record, the diff by name and each file's diff."""

    record: ForkRecord
    diff: Diff
    files: tuple[FileDiff, ...] = field(default_factory=tuple)


def _is_text(data: bytes) -> bool:
    if b"\x00" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def file_diff(name: str, change: str, old: bytes | None, new: bytes | None) -> FileDiff:
    """The unified diff of one file (``a/name`` → ``b/name``), or why it has none."""
    sides = [d for d in (old, new) if d is not None]
    if any(len(d) > MAX_DIFF_FILE_BYTES for d in sides):
        return FileDiff(name, change, note="too large to show line by line")
    if not all(_is_text(d) for d in sides):
        return FileDiff(name, change, binary=True, note="binary file")
    a = (old or b"").decode("utf-8").splitlines(keepends=True)
    b = (new or b"").decode("utf-8").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{name}",
                                 "/dev/null" if new is None else f"b/{name}")
    return FileDiff(name, change, "".join(line if line.endswith("\n") else line + "\n" for line in lines))


class ForkService:
    """The fork registry and its actions (see the module docstring)."""

    def __init__(self, state_dir: Path, settings: Any, guard: Callable[[], WriteGuard],
                 runner_for: Callable[[Path], CommandRunner | None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.dir = Path(state_dir) / "forks"
        self.settings = settings
        self.guard = guard
        self.runner_for = runner_for
        self.clock = clock
        #: Called with the record when a fork is ready for review (the tray shows a notice).
        self.on_ready: Callable[[ForkRecord], None] | None = None
        self._merger = SerializingMerger(WorkspaceMerger(allow=self._allow))
        #: Records already parsed, by file identity (inode, mtime, size): the tray looks at the
        #: registry on every refresh and each minute, and a record holds every base version
        #: (one per workspace file), so an unchanged one is not read and parsed again. A record
        #: is only ever replaced whole (atomic rename), which changes its identity.
        self._parsed: dict[str, tuple[tuple[int, int, int], ForkRecord]] = {}
        self._guard_now: WriteGuard | None = None

    # --- where -------------------------------------------------------------------------
    def _record_file(self, fid: str) -> Path:
        if not fid or not all(c in "0123456789abcdef" for c in fid) or len(fid) > 32:
            raise ForkError(f"There is no fork {fid!r}; `hearthside forks list` shows them.", ErrorKind.NOT_FOUND)
        return self.dir / f"{fid}.json"

    def _tree(self, fid: str) -> Path:
        return self.dir / fid / "tree"

    @property
    def _lock_file(self) -> Path:
        return self.dir / "forks.lock"

    def _cap(self, key: str, default: int) -> int:
        value = self.settings.get(key) if self.settings is not None else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if value is not None:
            log.warning("%s in settings.toml is %r, not a whole number above 0; using %d", key, value, default)
        return default

    # --- the registry -------------------------------------------------------------------
    def _write(self, rec: ForkRecord) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(self._record_file(rec.id), json.dumps(rec.as_dict(), indent=1).encode())

    def _read(self, fid: str) -> ForkRecord:
        path = self._record_file(fid)
        try:
            st = os.lstat(path)
            ident = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            ident = None
        known = self._parsed.get(fid)
        if ident is not None and known is not None and known[0] == ident:
            return known[1]
        rec = self._parse(fid, path)
        if ident is not None:
            self._parsed[fid] = (ident, rec)
        return rec

    def _parse(self, fid: str, path: Path) -> ForkRecord:
        text, why = read_text_bounded(path, MAX_RECORD_BYTES)
        if text is None and not why:
            raise ForkError(f"There is no fork {fid!r}; `hearthside forks list` shows them.", ErrorKind.NOT_FOUND)
        if text is None:
            raise ForkError(f"The record of fork {fid} cannot be read: {why}.")
        try:
            doc = loads_json(text)
            if not isinstance(doc, dict):
                raise TypeError("not an object")
            return ForkRecord.from_dict(doc)
        except (ValueError, KeyError, TypeError) as exc:
            raise ForkError(f"The record of fork {fid} is damaged ({exc}); discard it.") from exc

    def list(self, include_closed: bool = False) -> list[ForkRecord]:
        """Every fork, newest first (applied and discarded ones only when asked)."""
        out: list[ForkRecord] = []
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []
        for n in names:
            if not n.endswith(".json"):
                continue
            try:
                rec = self._read(n[:-5])
            except ForkError as exc:
                log.warning("%s", exc)
                continue
            if include_closed or rec.status in (WORKING, READY):
                out.append(rec)
        return sorted(out, key=lambda r: r.created, reverse=True)

    def pending(self) -> builtins.list[ForkRecord]:
        """Forks waiting for the user's review."""
        return [r for r in self.list() if r.status == READY]

    def unannounced(self) -> builtins.list[ForkRecord]:
        """Forks ready for review whose notice the tray has not shown yet, oldest first."""
        return sorted((r for r in self.pending() if not r.announced), key=lambda r: r.created)

    def mark_announced(self, fid: str) -> ForkRecord | None:
        """Claim the one notice of a fork ready for review: the record (now ``announced``) when
        this caller is the first, else None (already announced, closed, gone, or the registry
        busy — then the next look tries again). Done under the registry lock, so two threads or
        two processes never both announce one fork."""
        try:
            with locked(self._lock_file, timeout=ANNOUNCE_LOCK_WAIT):
                try:
                    rec = self._read(fid)
                except ForkError:
                    return None
                if rec.status != READY or rec.announced:
                    return None
                rec = ForkRecord(**{**rec.as_dict(), "announced": True})
                self._write(rec)
                return rec
        except (LockBusy, LockUnusable) as exc:
            log.info("fork %s not announced yet: %s", fid, exc)
            return None

    # --- the specialist's side ---------------------------------------------------------------
    def parent_environment(self, workspace: str) -> Environment:
        root = Path(workspace).expanduser()
        if not root.is_dir():
            raise ForkError(f"The workspace folder {root} does not exist.")
        return new_environment(EnvironmentRef("workspace", str(root.resolve())), DirectoryWorkspace(root))

    def create(self, persona: str, label: str, workspace: str | None = None) -> Fork:
        """Fork the workspace (default: ``files.workspace``) for a writing specialist; the fork
        is registered as working. Blocking (it copies): call it off the event loop."""
        if workspace is None:
            ws = self.settings.get("files.workspace") if self.settings is not None else None
            workspace = ws if isinstance(ws, str) and ws else None
        if not workspace:
            raise ForkError("There is no workspace to fork: set files.workspace in the settings first.")
        parent = self.parent_environment(workspace)
        forker = DirectoryForker(self.dir, self._cap("forks.max_bytes", DEFAULT_MAX_BYTES),
                                 self._cap("forks.max_files", DEFAULT_MAX_FILES), self.runner_for)
        fid = uuid.uuid4().hex[:12]
        try:
            fork = forker.fork(parent, label, fid)
        except ForkRefused as exc:
            raise ForkError(str(exc), ErrorKind.INVALID) from exc
        assert isinstance(parent.workspace, DirectoryWorkspace)
        rec = ForkRecord(fid, persona, label.strip()[:200], self.clock(), str(parent.workspace.root),
                         {n: v.token for n, v in fork.base.items()}, WORKING, advisory=fork.advisory,
                         method=fork.child.ref.kind.removeprefix("fork-"))
        try:
            self._write(rec)
        except OSError as exc:
            fork.cleanup()
            raise ForkError(f"The fork could not be registered: {exc.strerror or exc}.") from exc
        return fork

    @staticmethod
    def fork_id(fork: Fork) -> str:
        return fork.child.ref.id

    @staticmethod
    def root_of(fork: Fork) -> str:
        ws = fork.child.workspace
        if not isinstance(ws, DirectoryWorkspace):
            raise TypeError("not a folder fork")
        return str(ws.root)

    def guard_for(self, fork: Fork, parent_guard: WriteGuard) -> WriteGuard:
        """The guard for tools running in the fork: a path inside it is judged as the same
        name in the parent workspace; any other path as ``parent_guard`` judges it. (The app's
        session guards already do this for every fork; this is for a guard built elsewhere.)"""
        self._read(self.fork_id(fork))  # a fork this registry knows
        return ForkWriteGuard(parent_guard.roots, str(self.dir), self._parent_of)

    def is_live_tree(self, path: str) -> bool:
        """Whether ``path`` is exactly the folder of a fork being worked on or waiting for review
        (the one place in the state folder a fork's shell may write)."""
        real = Path(path).resolve()
        fid = real.parent.name
        if real.name != "tree" or real.parent.parent != self.dir.resolve():
            return False
        try:
            return self._parent_of(fid) is not None and real == self._tree(fid).resolve()
        except ForkError:
            return False

    def _parent_of(self, fid: str) -> str | None:
        try:
            rec = self._read(fid)
        except ForkError:
            return None
        return rec.workspace if rec.status in (WORKING, READY) else None

    def finished(self, fork_id: str, summary: str) -> ForkRecord:
        """The specialist is done: ready for review, or discarded at once if nothing changed."""
        rec = self._read(fork_id)
        if rec.status != WORKING:
            return rec
        diff = self._diff(rec)
        if diff.empty:
            self._close(rec, DISCARDED, summary)
            return self._read(fork_id)
        rec = ForkRecord(**{**rec.as_dict(), "status": READY, "summary": summary.strip()[:4000]})
        self._write(rec)
        if self.on_ready is not None:
            try:
                self.on_ready(rec)
            except Exception as exc:  # noqa: BLE001 - a notice failing must not lose the fork
                log.warning("fork-ready notice failed: %s", exc)
        return rec

    # --- the Subagent tool's seam ---------------------------------------------------------
    def forker(self, persona: str) -> RegisteringForker:
        """An :class:`EnvironmentForker` for ``persona``'s writing specialists: each fork is
        made and registered here (so it shows in review, is cleaned up, and is guarded)."""
        return RegisteringForker(self, persona)

    def keep(self, fork: Fork, specialist: str, task: str) -> str:
        """The specialist finished in ``fork``: register it for review (or drop it when it
        changed nothing) and return the sentence the Subagent tool adds to its result."""
        summary = f"{specialist}: {' '.join(task.split())[:400]}" if specialist else task
        return self.summary_for_model(self.finished(self.fork_id(fork), summary))

    def hook(self, persona: str) -> ForkHook:
        """The Subagent tool's fork seam for ``persona`` (``SessionService.fork_hook`` asks for
        it). Never merges by itself: the user applies in review."""
        return ForkHook(self.forker(persona), self.keep)

    def summary_for_model(self, rec: ForkRecord) -> str:
        """What the Subagent tool returns to the persona's model about the fork."""
        if rec.status == DISCARDED:
            return "The specialist changed no files."
        diff = self._diff(rec) if rec.status in (WORKING, READY) else Diff()
        return (f"The specialist's changes wait for the user's review as fork {rec.id} "
                f"({len(diff.added)} added, {len(diff.changed)} changed, {len(diff.removed)} removed); "
                "nothing in the workspace changes until the user applies them.")

    # --- review --------------------------------------------------------------------------
    def _child(self, rec: ForkRecord) -> DirectoryWorkspace:
        tree = self._tree(rec.id)
        if not tree.is_dir():
            raise ForkError(f"Fork {rec.id}'s folder is gone; discard it.")
        return DirectoryWorkspace(tree)

    def _diff(self, rec: ForkRecord) -> Diff:
        return diff_versions(self._base(rec), self._child(rec).versions())

    @staticmethod
    def _base(rec: ForkRecord) -> dict[str, FileVersion]:
        return {n: FileVersion(v) for n, v in rec.base.items()}

    def _open(self, fid: str) -> ForkRecord:
        rec = self._read(fid)
        if rec.status in (APPLIED, DISCARDED):
            raise ForkError(f"Fork {fid} was already {rec.status}.", ErrorKind.ALREADY_DONE)
        return rec

    def show(self, fid: str) -> ForkReview:
        """The fork's diff against the files it started from, with each file's unified diff."""
        rec = self._open(fid)
        child = self._child(rec)
        diff = diff_versions(self._base(rec), child.versions())
        parent = DirectoryWorkspace(rec.workspace) if Path(rec.workspace).is_dir() else None
        out: list[FileDiff] = []

        def side(ws: DirectoryWorkspace | None, name: str) -> bytes | None:
            if ws is None:
                return None
            try:
                return ws.read(name)
            except (OSError, ValueError):
                return None

        for name in diff.names():
            change = "added" if name in diff.added else "removed" if name in diff.removed else "changed"
            old = None if change == "added" else side(parent, name)
            new = None if change == "removed" else side(child, name)
            out.append(file_diff(name, change, old, new))
        return ForkReview(rec, diff, tuple(out))

    # --- apply / discard -------------------------------------------------------------------
    def _allow(self, parent: Environment, name: str) -> str | None:
        """The write guard, then the shape of the target: every name is checked before anything
        is written, so a link or a file standing where a folder must be (which the versions do
        not show, so they are no conflict) stops the apply whole instead of half-way."""
        guard = self._guard_now or self.guard()
        ws = parent.workspace
        root = ws.root if isinstance(ws, DirectoryWorkspace) else Path(parent.ref.id)
        refusal = guard.refusal(root / name)
        if refusal:
            return refusal
        parts = name.split("/")
        for i in range(1, len(parts)):
            folder = root.joinpath(*parts[:i])
            if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
                return (f"{'/'.join(parts[:i])} in the workspace is not a folder now, so {name} cannot be "
                        "written; the fork is kept.")
        target = root / name
        if os.path.lexists(target) and (target.is_symlink() or not target.is_file()):
            return f"{name} in the workspace is now a link or a special file; the fork is kept."
        return None

    def _locked(self, fid: str) -> Any:
        return locked(self._lock_file, timeout=30)

    def apply(self, fid: str) -> tuple[str, ...]:
        """Bring the fork's changes into the workspace; returns the names written or removed."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            with self._locked(fid):
                rec = self._open(fid)
                if rec.status == WORKING:
                    raise ForkError(f"Fork {fid} is still being worked on by the specialist.", ErrorKind.BUSY)
                child = self._child(rec)
                fork = Fork(new_environment(EnvironmentRef(f"fork-{rec.method}", rec.id), child), lambda: None,
                            self._base(rec))
                parent = self.parent_environment(rec.workspace)
                self._guard_now = self.guard()  # built once per apply (it lists the persona folders)
                try:
                    result = self._merger.merge(fork, parent)
                except MergeConflict as exc:
                    raise ForkError(str(exc), ErrorKind.CONFLICT, exc.names) from exc
                except PermissionError as exc:
                    text = str(exc)
                    raise ForkError(text if text.startswith("Refused") else f"Not applied: {text}",
                                    ErrorKind.REFUSED) from exc
                except (OSError, ValueError) as exc:  # the disk, mid-way: say so, keep the fork
                    why = getattr(exc, "strerror", None) or exc
                    raise ForkError(f"Applying fork {fid} stopped: {why}; the fork is kept, but some files may "
                                    "already be written, so check them before applying again.") from exc
                finally:
                    self._guard_now = None
                self._close(rec, APPLIED)
                return result.applied
        except LockBusy as exc:
            raise ForkError(f"Fork {fid} is being applied or discarded by another Hearthside window or "
                            "command; try again in a moment.", ErrorKind.BUSY) from exc
        except LockUnusable as exc:
            raise ForkError(f"Forks cannot be changed: {exc}.", ErrorKind.BUSY) from exc

    def discard(self, fid: str) -> None:
        """Throw the fork's changes away (the workspace is not touched)."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            with self._locked(fid):
                self._close(self._open(fid), DISCARDED)
        except LockBusy as exc:
            raise ForkError(f"Fork {fid} is being applied or discarded by another Hearthside window or "
                            "command; try again in a moment.", ErrorKind.BUSY) from exc
        except LockUnusable as exc:
            raise ForkError(f"Forks cannot be changed: {exc}.", ErrorKind.BUSY) from exc

    def drop(self, fid: str) -> None:
        """Discard a fork its specialist did not finish (or that changed nothing); quietly, as a
        cleanup: a fork already closed stays as it is."""
        try:
            self.discard(fid)
        except ForkError as exc:
            if exc.kind is not ErrorKind.ALREADY_DONE:
                log.warning("fork %s was not cleaned up: %s", fid, exc)

    def _close(self, rec: ForkRecord, status: str, summary: str | None = None) -> None:
        remove_tree(self.dir / rec.id)
        done = {**rec.as_dict(), "status": status, "closed": self.clock(), "base": {}}
        if summary is not None:
            done["summary"] = summary.strip()[:4000]
        self._write(ForkRecord(**done))

    # --- cleanup -------------------------------------------------------------------------
    def cleanup(self) -> builtins.list[str]:
        """Remove forks (and closed records) older than 7 days, and folders no record names."""
        now = self.clock()
        removed: list[str] = []
        if not self.dir.is_dir():
            return removed
        try:
            with locked(self._lock_file, timeout=30):
                known: set[str] = set()
                for n in os.listdir(self.dir):
                    if not n.endswith(".json"):
                        continue
                    fid = n[:-5]
                    try:
                        rec = self._read(fid)
                    except ForkError:
                        continue
                    known.add(fid)
                    if now - rec.created > MAX_AGE_SECONDS:
                        remove_tree(self.dir / fid)
                        self._record_file(fid).unlink(missing_ok=True)
                        removed.append(fid)
                for n in os.listdir(self.dir):
                    p = self.dir / n
                    # a crash between copying and registering (an hour old: never a fork being made now)
                    if p.is_dir() and not p.is_symlink() and n not in known and now - p.stat().st_mtime > 3600:
                        remove_tree(p)
        except (LockBusy, LockUnusable) as exc:
            log.warning("old forks were not cleaned up: %s", exc)
        return removed


class RegisteringForker:
    """The forker the Subagent tool is given: ``fork(base, label)`` forks ``base``'s workspace
    folder through :meth:`ForkService.create` for one persona."""

    def __init__(self, service: ForkService, persona: str) -> None:
        self.service = service
        self.persona = persona

    def fork(self, base: Environment, label: str) -> Fork:
        ws = base.workspace
        if not isinstance(ws, DirectoryWorkspace):
            raise ForkError("Only a workspace folder can be forked.", ErrorKind.INVALID)
        fork = self.service.create(self.persona, label, workspace=str(ws.root))
        fid = self.service.fork_id(fork)
        # The Subagent tool cleans a fork up itself when its specialist changed nothing, failed or
        # was cancelled: that must close the record too, or it would say "working" for a week.
        return dataclasses.replace(fork, cleanup=lambda: self.service.drop(fid))
