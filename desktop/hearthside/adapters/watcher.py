"""Folder watching on watchdog: the only module that imports it.

It reports *that* something under a watched folder changed (a path), never what: the caller
re-reads the file, because event details are hints and the content is the truth.

Three things watchdog leaves to us, handled here:

- a folder that does not exist yet cannot be watched (``FileNotFoundError``), and a watched
  folder that is deleted and re-created stops reporting. So every target is watched at its
  nearest existing ancestor until it appears, and the watch set is re-armed on every folder
  event (and each time a watch is (re)placed, a change is reported for the target, so files
  written before the watch landed are not lost);
- when the system runs out of inotify watches or instances, the folders that did not get a
  watch are polled instead, and :meth:`FolderWatcher.report` says which;
- our own reads must not look like changes: only create, delete, move, modify and
  close-after-write events are asked for, never open or access.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

log = logging.getLogger(__name__)

# watchdog warns when a recursive watch re-registers a folder it already watches (a race between
# a folder's creation event and its own scan of the new tree); the watch is simply kept.
warnings.filterwarnings("ignore", message=r"Callback with id .* already exists", category=RuntimeWarning)

#: The event kinds that can mean a change; open/access (our own reads) are left out on purpose.
EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    DirCreatedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
    FileMovedEvent,
    DirMovedEvent,
    FileModifiedEvent,
    FileClosedEvent,
]

#: Callback: ``(path, is_directory)`` for every path an event names (both ends of a move).
ChangeCallback = Callable[[str, bool], None]


@dataclass(frozen=True)
class WatchReport:
    """How the watcher watches: ``mode`` is ``inotify``, ``polling``, ``mixed`` or ``stopped``."""

    mode: str
    native: tuple[str, ...] = ()
    polled: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "native": list(self.native),
            "polled": list(self.polled),
            "waiting": list(self.waiting),
            "problems": list(self.problems),
        }


@dataclass
class _Placed:
    watch: ObservedWatch
    observer: BaseObserver
    inode: tuple[int, int]
    polled: bool


class _Handler(FileSystemEventHandler):
    def __init__(self, owner: FolderWatcher) -> None:
        self.owner = owner

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.owner._on_event(event)


def _native_observer() -> BaseObserver:
    from watchdog.observers.inotify import InotifyObserver

    return InotifyObserver()


class FolderWatcher:
    """Watches target folders (each recursive or not) and reports changed paths.

    ``on_change`` is called from watchdog's threads; it must be quick and thread-safe.
    ``poll_interval`` is the period of the polling fallback only.
    """

    def __init__(
        self,
        on_change: ChangeCallback,
        *,
        poll_interval: float = 1.0,
        native: Callable[[], BaseObserver] | None = _native_observer,
    ) -> None:
        self._on_change = on_change
        self._poll_interval = poll_interval
        self._native_factory = native
        self._lock = threading.RLock()
        self._targets: dict[str, bool] = {}
        self._placed: dict[tuple[str, bool], _Placed] = {}
        self._native: BaseObserver | None = None
        self._polling: BaseObserver | None = None
        self._problems: dict[str, str] = {}
        self._running = False
        self._rearm_wanted = threading.Event()
        self._rearm_thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching the current targets; safe to call twice."""
        with self._lock:
            if self._running:
                return
            self._running = True
            if self._native_factory is not None:
                try:
                    self._native = self._native_factory()
                    self._native.start()
                except OSError as exc:
                    self._native = None
                    self._problems["*"] = (
                        f"inotify is not available ({exc.strerror or exc}); every folder is polled "
                        f"every {self._poll_interval:g} s instead"
                    )
            self._rearm_thread = threading.Thread(
                target=self._rearm_loop, name="hearthside-watch-rearm", daemon=True
            )
            self._rearm_thread.start()
            self._rearm_locked()

    def stop(self) -> None:
        """Stop every watch and thread; waits for them (bounded)."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            self._rearm_wanted.set()
            observers = [o for o in (self._native, self._polling) if o is not None]
            self._native = self._polling = None
            self._placed.clear()
        for obs in observers:
            obs.stop()
        for obs in observers:
            obs.join(timeout=5)
        if self._rearm_thread is not None:
            self._rearm_thread.join(timeout=5)
            self._rearm_thread = None

    @property
    def running(self) -> bool:
        return self._running

    def set_targets(self, targets: Iterable[tuple[str | os.PathLike[str], bool]]) -> None:
        """Replace the folders to watch: ``(folder, recursive)`` pairs; re-arms at once."""
        with self._lock:
            self._targets = {}
            for folder, recursive in targets:
                key = os.path.abspath(os.fspath(folder))
                self._targets[key] = self._targets.get(key, False) or recursive
            if self._running:
                self._rearm_locked()

    def rearm(self) -> None:
        """Re-check which targets exist and move watches accordingly (done on folder events)."""
        with self._lock:
            if self._running:
                self._rearm_locked()

    def report(self) -> WatchReport:
        """Which folders have a native watch, which are polled, which wait for a folder."""
        with self._lock:
            if not self._running:
                return WatchReport("stopped", problems=tuple(self._problems.values()))
            native = sorted(p for (p, _), pl in self._placed.items() if not pl.polled)
            polled = sorted(p for (p, _), pl in self._placed.items() if pl.polled)
            waiting = sorted(t for t in self._targets if not os.path.isdir(t))
            if polled and native:
                mode = "mixed"
            elif polled:
                mode = "polling"
            else:
                mode = "inotify"
            return WatchReport(mode, tuple(native), tuple(polled), tuple(waiting),
                               tuple(self._problems.values()))

    # -- internals -------------------------------------------------------------------------

    def _desired(self) -> dict[tuple[str, bool], str]:
        """Watch key -> the target it serves (an ancestor stands in for a missing target)."""
        want: dict[tuple[str, bool], str] = {}
        for target, recursive in self._targets.items():
            if os.path.isdir(target):
                want[(target, recursive)] = target
                continue
            parent = os.path.dirname(target)
            while parent and not os.path.isdir(parent):
                nxt = os.path.dirname(parent)
                if nxt == parent:
                    break
                parent = nxt
            if parent and os.path.isdir(parent):
                want.setdefault((parent, False), target)
        # A non-recursive watch is redundant under a recursive watch of the same folder.
        for path, rec in list(want):
            if not rec and (path, True) in want:
                del want[(path, False)]
        return want

    def _rearm_locked(self) -> None:
        want = self._desired()
        for key in list(self._placed):
            placed = self._placed[key]
            if key not in want or not self._still_valid(key[0], placed):
                self._unplace(key)
        for key, target in want.items():
            if key in self._placed:
                continue
            if self._place(key):
                # Report a change for what the new watch covers: files may have been written
                # in the gap before it existed.
                self._on_change(key[0], True)
                if target != key[0]:
                    self._on_change(target, True)

    def _still_valid(self, path: str, placed: _Placed) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != placed.inode:
            return False
        return any(e.watch == placed.watch and e.is_alive() for e in placed.observer.emitters)

    def _place(self, key: tuple[str, bool]) -> bool:
        path, recursive = key
        try:
            st = os.stat(path)
        except OSError:
            return False
        handler = _Handler(self)
        if self._native is not None:
            try:
                watch = self._native.schedule(handler, path, recursive=recursive, event_filter=EVENT_FILTER)
                self._placed[key] = _Placed(watch, self._native, (st.st_dev, st.st_ino), False)
                self._problems.pop(path, None)
                return True
            except FileNotFoundError:
                return False
            except OSError as exc:
                self._problems[path] = (
                    f"no inotify watch for {path} ({exc.strerror or exc}); it is polled every "
                    f"{self._poll_interval:g} s instead. Raise fs.inotify.max_user_watches or "
                    "max_user_instances to fix this."
                )
                log.warning(self._problems[path])
        try:
            if self._polling is None:
                self._polling = PollingObserver(timeout=self._poll_interval)
                self._polling.start()
            watch = self._polling.schedule(handler, path, recursive=recursive, event_filter=EVENT_FILTER)
        except OSError as exc:
            self._problems[path] = f"{path} cannot be watched at all: {exc.strerror or exc}"
            log.warning(self._problems[path])
            return False
        self._placed[key] = _Placed(watch, self._polling, (st.st_dev, st.st_ino), True)
        return True

    def _unplace(self, key: tuple[str, bool]) -> None:
        placed = self._placed.pop(key)
        try:
            placed.observer.unschedule(placed.watch)
        except (KeyError, ValueError, RuntimeError):
            pass

    def _on_event(self, event: FileSystemEvent) -> None:
        paths = [os.fsdecode(event.src_path)]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(os.fsdecode(dest))
        for p in paths:
            if p:
                self._on_change(p, event.is_directory)
        if event.is_directory:
            # A folder came or went: re-arm off this thread,
            # since watchdog dispatches while holding its own lock.
            self._rearm_wanted.set()

    def _rearm_loop(self) -> None:
        while True:
            self._rearm_wanted.wait()
            self._rearm_wanted.clear()
            if not self._running:
                return
            try:
                self.rearm()
            except Exception:  # a watcher thread must not die of one bad folder
                log.exception("re-arming the folder watches failed")

