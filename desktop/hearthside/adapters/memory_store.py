"""The learned-memory store on disk: ``memory.json`` + ``memory.lock`` per persona.

Writes take an exclusive ``filelock`` on ``memory.lock`` (5 s timeout), load, mutate, write a
temp file, fsync and rename, so a writer killed mid-save leaves the previous complete file.
Reads take a *shared* ``flock`` on the same lock file: filelock has no shared mode, and both
use ``flock(2)`` on one file, so readers wait for a writer and never for each other. A file that
does not parse is never overwritten: it is reported and every write is refused until the user
moves it aside (``hearthside memory repair``).
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..core.boundedread import read_bounded
from ..core.memory.bm25 import Bm25Index
from ..core.memory.model import (
    MAX_DOCUMENT_BYTES,
    CorruptMemoryError,
    LimitError,
    LockTimeoutError,
    MemoryDocument,
    MemoryEntry,
    MemoryRecord,
    MemoryStoreError,
)
from ..core.safeparse import loads_json
from .atomicfile import keep_backup, write_atomic
from .locks import LockBusy, LockUnusable, lock_for, open_lock_fd

try:  # flock exists on Linux and macOS; elsewhere reads rely on the atomic rename alone.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

T = TypeVar("T")

LOCK_TIMEOUT = 5.0


class JsonMemoryStore:
    """A :class:`hearthside.core.memory.MemoryStore` over one folder (the persona's memory dir)."""

    def __init__(self, directory: str | os.PathLike[str], lock_timeout: float = LOCK_TIMEOUT,
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.path = self.directory / "memory.json"
        self.lock_path = self.directory / "memory.lock"
        self.lock_timeout = lock_timeout
        self._clock = clock
        self._mutex = threading.Lock()
        self._cache: tuple[bytes, MemoryDocument] | None = None
        self._bm25: tuple[bytes, Bm25Index] | None = None

    # -- locking -----------------------------------------------------------------------
    def _ensure_dir(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        self._ensure_dir()
        lock = lock_for(self.lock_path)
        try:
            lock.acquire(self.lock_timeout)
        except LockBusy as exc:
            raise LockTimeoutError(
                f"another Hearthside process has held the memory lock {self.lock_path} for more "
                f"than {self.lock_timeout:g} s; try again, or close the other process."
            ) from exc
        except LockUnusable as exc:
            raise MemoryStoreError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def _shared(self) -> Iterator[None]:
        if fcntl is None or not self.directory.exists():
            yield
            return
        try:
            fd = open_lock_fd(self.lock_path)
        except LockUnusable as exc:
            raise MemoryStoreError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None
        try:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() > deadline:
                        raise LockTimeoutError(
                            f"the memory lock {self.lock_path} stayed taken for more than "
                            f"{self.lock_timeout:g} s; try again, or close the other process."
                        ) from exc
                    time.sleep(0.005)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- load/save ---------------------------------------------------------------------
    def _load(self) -> tuple[bytes, MemoryDocument]:
        """Read and parse the file. The parse is cached against the exact bytes: reading is
        cheap, parsing is not, and bytes (unlike inode and mtime) cannot collide by accident."""
        # Bounded and non-blocking: memory.json as a FIFO must not hang `memory list` or a chat.
        if not os.path.lexists(self.path):
            return b"", MemoryDocument()
        got = read_bounded(self.path, MAX_DOCUMENT_BYTES)
        raw = got.data or b""
        if got.data is not None and self._cache and self._cache[0] == raw:
            return raw, self._cache[1]
        try:
            if got.data is None:
                raise CorruptMemoryError("it " + got.reason.removeprefix(f"{self.path} "))
            if got.over_cap:
                raise CorruptMemoryError("it is larger than the 8 MiB limit")
            doc = MemoryDocument.from_json_obj(loads_json(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError, CorruptMemoryError) as exc:  # NestingError too
            raise CorruptMemoryError(
                f"the learned memory file {self.path} is damaged ({_short(exc)}). It was kept as "
                "is and Hearthside will not write memory for this persona until you act: run "
                f"'hearthside memory repair --persona {shlex.quote(self.directory.name)}' "
                "to move it aside and start afresh."
            ) from exc
        self._cache = (raw, doc)
        return raw, doc

    def _save(self, doc: MemoryDocument) -> bytes:
        data = doc.encode()
        if len(data) > MAX_DOCUMENT_BYTES:
            raise LimitError(
                f"this write would make the memory file {len(data)} bytes; the limit is 8 MiB. "
                "Forget some memories first."
            )
        write_atomic(self.path, data)
        return data

    def _read(self, fn: Callable[[MemoryDocument], T]) -> T:
        with self._mutex, self._shared():
            return fn(self._load()[1])

    def _sweep_orphans(self) -> None:
        """Remove temp files of writers that were killed mid-save. Safe under the exclusive
        lock: temp files are only ever written by the lock holder."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        for name in names:
            if name.startswith(".memory.json.") and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.directory / name)

    def _write(self, fn: Callable[[MemoryDocument], T]) -> T:
        with self._mutex, self._exclusive():
            self._sweep_orphans()
            _, doc = self._load()
            try:
                out = fn(doc)
                data = self._save(doc)
            except BaseException:
                self._cache = None  # a refused write must not leave a mutated cache behind
                raise
            self._cache = (data, doc)
            return out

    # -- MemoryStore -------------------------------------------------------------------
    def remember(self, key: str, value: str, description: str = "", *, expected: str | None = None,
                 writer: str = "user", origin: str = "explicit", session_id: str = "") -> MemoryRecord:
        now = self._clock()
        return self._write(lambda d: d.remember(key, value, description, expected=expected, writer=writer,
                                                origin=origin, session_id=session_id, now=now))

    def forget(self, key: str, expected: str | None = None, *, writer: str = "user",
               session_id: str = "") -> MemoryRecord | None:
        now = self._clock()
        return self._write(lambda d: d.forget(key, expected, writer=writer, session_id=session_id, now=now))

    def undo(self, key: str, expected: str, *, writer: str = "user", session_id: str = "") -> MemoryRecord:
        now = self._clock()
        return self._write(lambda d: d.undo(key, expected, writer=writer, session_id=session_id, now=now))

    def recall(self, key: str) -> MemoryEntry | None:
        return self._read(lambda d: d.recall(key))

    def list(self, prefix: str = "") -> builtins.list[MemoryEntry]:
        return self._read(lambda d: d.list(prefix))

    def index(self) -> builtins.list[MemoryEntry]:
        return self._read(lambda d: d.index())

    def inspect(self, key: str) -> MemoryRecord | None:
        return self._read(lambda d: d.inspect(key))

    def search(self, query: str, k: int = 0) -> builtins.list[MemoryEntry]:
        with self._mutex, self._shared():
            ident, doc = self._load()
            if self._bm25 is None or self._bm25[0] != ident:
                self._bm25 = (ident, Bm25Index.build(
                    (r.key, f"{r.description}\n{r.value}") for r in doc.active()))
            hits = self._bm25[1].search(query, k)
            out = []
            for key, _score in hits:
                e = doc.recall(key)
                if e is not None:
                    out.append(MemoryEntry(e.key, "", e.description, e.updated_at, e.version, e.finding))
            return out

    # -- extras for the CLI and the doctor ----------------------------------------------
    def seq(self) -> int:
        """How many writes this store has ever accepted."""
        return self._read(lambda d: d.seq)

    def check(self) -> str:
        """"" when the file is readable, else the sentence saying what is wrong."""
        try:
            self._read(lambda d: None)
        except CorruptMemoryError as exc:
            return str(exc)
        return ""

    def repair(self) -> Path | None:
        """Move a damaged file aside (kept, never deleted) so writes can start afresh."""
        with self._mutex, self._exclusive():
            try:
                self._load()
                return None
            except CorruptMemoryError:
                self._cache = None
                return keep_backup(self.path)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]
