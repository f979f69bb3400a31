"""Inter-process file locks: the one place Hearthside uses the ``filelock`` library.

Why one place: ``flock(2)`` locks belong to an open file, so two lock objects on the same path in
one process exclude *each other* (a service that locks ``mcp.json.lock`` twice through two
objects deadlocks itself until its timeout). Here there is exactly one lock per path per
process; it is re-entrant in the thread that holds it, and other threads of the same process
wait on an in-process lock before touching the file lock, so threads exclude each other too.

Callers say what a timeout means to the user (``LockBusy`` carries the lock file; the caller
turns it into its own one-sentence error).

A lock file that exists but is not a regular file (a FIFO, socket, device, folder or link put
there by hand or by accident) is refused before it is opened, with :class:`LockUnusable`, whose
message is a whole sentence naming the file: ``filelock`` would otherwise fail deep inside
(``ftruncate`` on a FIFO) with a traceback, or wait on something that is never a lock.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock


class LockBusy(Exception):
    """Another process (or thread) held the lock for longer than the caller would wait."""

    def __init__(self, lock_file: Path) -> None:
        super().__init__(f"the lock {lock_file} is held by another Hearthside process")
        self.lock_file = lock_file


class LockUnusable(Exception):
    """The lock file exists but is not a regular file; the message says which and what to do."""

    def __init__(self, lock_file: Path, kind: str) -> None:
        super().__init__(f"the lock file {lock_file} is {kind}, not a regular file: remove it and try again")
        self.lock_file = lock_file


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    for test, name in ((stat.S_ISREG, None), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISLNK, "a link"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a file"


def check_lock_file(lock_file: Path) -> None:
    """Raise :class:`LockUnusable` when ``lock_file`` exists and is not a regular file (a link
    counts as not regular: Hearthside never makes one, and it could point anywhere)."""
    try:
        st = os.lstat(lock_file)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LockUnusable(lock_file, f"unreadable ({exc.strerror or exc})") from None
    kind = _kind(st.st_mode)
    if kind is not None:
        raise LockUnusable(lock_file, kind)


def open_lock_fd(lock_file: Path) -> int:
    """A descriptor of ``lock_file`` for ``flock`` (created if missing, private), refusing
    anything but a regular file, without blocking on a FIFO or following a link."""
    check_lock_file(lock_file)
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            check_lock_file(lock_file)  # swapped since the check: say what it is now
        raise
    kind = _kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise LockUnusable(lock_file, kind)
    return fd


class PathLock:
    """The process-wide lock for one lock file (get it with :func:`lock_for`)."""

    def __init__(self, lock_file: Path) -> None:
        self.lock_file = lock_file
        self._threads = threading.RLock()
        # thread_local=False: the counter is shared; ``_threads`` already admits one thread.
        self._file = filelock.FileLock(str(lock_file), thread_local=False)

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting up to ``timeout`` seconds (0: try once); raises LockBusy, or
        LockUnusable when the lock file is not a regular file."""
        deadline = time.monotonic() + max(timeout, 0.0)
        got = self._threads.acquire(timeout=timeout) if timeout > 0 else self._threads.acquire(False)
        if not got:
            raise LockBusy(self.lock_file)
        try:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            check_lock_file(self.lock_file)
            try:
                self._file.acquire(timeout=max(deadline - time.monotonic(), 0.0))
            except OSError:
                check_lock_file(self.lock_file)  # it became something else since the check
                raise
        except filelock.Timeout:
            self._threads.release()
            raise LockBusy(self.lock_file) from None
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        self._file.release()
        self._threads.release()

    @contextmanager
    def held(self, timeout: float = 5.0) -> Iterator[None]:
        """``with lock.held(5):`` — the lock for the block; LockBusy if it cannot be had."""
        self.acquire(timeout)
        try:
            yield
        finally:
            self.release()


_registry: dict[str, PathLock] = {}
_registry_guard = threading.Lock()


def lock_for(lock_file: str | os.PathLike[str]) -> PathLock:
    """The one :class:`PathLock` of this process for ``lock_file`` (created on first use)."""
    key = os.path.abspath(os.fspath(lock_file))
    with _registry_guard:
        lock = _registry.get(key)
        if lock is None:
            lock = _registry[key] = PathLock(Path(key))
        return lock


@contextmanager
def locked(lock_file: str | os.PathLike[str], timeout: float = 5.0) -> Iterator[None]:
    """Shorthand for ``lock_for(lock_file).held(timeout)``."""
    with lock_for(lock_file).held(timeout):
        yield


def _reset_after_fork() -> None:
    # A forked child owns none of its parent's locks; start with a clean registry.
    global _registry_guard
    _registry.clear()
    _registry_guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
