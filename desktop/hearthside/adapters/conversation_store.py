"""Kept conversations on disk: one append-only JSON-lines file per conversation.

Layout, under the data dir (never a persona folder)::

    conversations/<persona>/<id>.jsonl     the conversation (0600; folders 0700)
    conversations/<persona>/<id>.lock      its lock (every append holds it)
    conversations/<persona>/.index.json    a cache of each file's title, times and count
    conversations/.trash/<persona>/<id>@<ms>.jsonl   deleted, kept for the undo window

Why each choice:

* **Append-only, one file per conversation.** A message is on disk the moment it is complete,
  nothing is ever rewritten (so a crash cannot damage what was already there), and deleting a
  conversation is one unlink.
* **A lock per conversation** (``adapters/locks.py``, shared by every Hearthside process): the
  tray's chat and ``hearthside chat --continue`` may append to the same conversation; under the
  lock each append is checked and written with one ``write(2)`` of whole lines, so no line is
  lost or interleaved.
* **fsync policy:** each append (one whole message: a user message, a final reply, a tool call)
  is one ``write`` of whole lines before the call returns, and the file is ``fdatasync``-ed at
  most :data:`FLUSH_DELAY_S` later by a background thread (and at exit). A killed or crashed
  Hearthside loses nothing that was appended (the kernel has it after ``write``); a crash of the
  whole machine (power loss) loses at most the last half second. What is being streamed is not
  on disk until the reply is complete, so a crash or kill loses at most that one message. An
  append that waited for the disk each time cost 4 ms on this machine's disk, twice the 2 ms
  the issue allows a message.
* **Damage:** a line that does not parse is skipped and said; a last line cut short by a crash
  is lost and said (the next append first ends it with a newline, so it never joins a good
  line); a line written by a newer Hearthside makes the conversation read-only, said.
* **Untrusted files:** nothing is opened that is not a regular file (a FIFO is never opened
  blocking, a link is refused, never followed out of the data dir), and nothing larger than
  :data:`MAX_CONVERSATION_BYTES` is read (refused with its size).
* **The list reads little.** ``.index.json`` keeps each file's meta data with the size, inode
  and time it was read at; a list only ``stat``-s each file and reads just the bytes appended
  since (a cache: it is rebuilt from the files whenever it is missing or wrong).
"""

from __future__ import annotations

import atexit
import builtins
import errno
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.conversations import (
    Bad,
    Conversation,
    ConversationError,
    ConversationId,
    ConversationMeta,
    Fold,
    Header,
    Newer,
    Record,
    dumps_line,
    parse_line,
    read_conversation,
    split_lines,
)
from ..core.errors import ErrorKind, ServiceError
from ..core.persona import validate_persona_name
from ..core.redact import redact
from .atomicfile import write_atomic
from .locks import LockBusy, LockUnusable, lock_for, open_lock_fd

log = logging.getLogger(__name__)

#: A conversation file larger than this is not read (a long conversation is a few MB).
MAX_CONVERSATION_BYTES = 64 * 1024 * 1024

#: How long an append waits for another process's append to the same conversation.
LOCK_TIMEOUT_S = 10.0

#: The cache file of a persona's folder (a name no conversation id can have).
INDEX_NAME = ".index.json"
_INDEX_VERSION = 1

SUFFIX = ".jsonl"


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def _what(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a link"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


class Unusable(ServiceError):
    """A conversation file (or folder) that is not what Hearthside wrote: never opened."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence, ErrorKind.INVALID)


def _open_regular(path: Path, flags: int) -> tuple[int, os.stat_result]:
    """Open ``path`` (never blocking, never following a link) and check it is a regular file of
    a size Hearthside reads. Raises :class:`Unusable` with a sentence naming the file."""
    st = os.lstat(path)  # FileNotFoundError: the caller says there is no such conversation
    if not stat.S_ISREG(st.st_mode):
        extra = ""
        if stat.S_ISLNK(st.st_mode):
            try:
                extra = f" to {os.readlink(path)}"
            except OSError:
                pass
        raise Unusable(f"The conversation file {path} is {_what(st.st_mode)}{extra}, not a conversation; "
                       "it was not opened (delete it to remove it from the list).")
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise Unusable(f"The conversation file {path} changed into something that is not a conversation "
                           "while it was being opened; it was not read.") from None
        raise
    fst = os.fstat(fd)
    if not stat.S_ISREG(fst.st_mode):
        os.close(fd)
        raise Unusable(f"The conversation file {path} is {_what(fst.st_mode)}, not a conversation; it was not read.")
    if fst.st_size > MAX_CONVERSATION_BYTES:
        os.close(fd)
        raise Unusable(f"The conversation file {path} is {_mb(fst.st_size)}, larger than the "
                       f"{_mb(MAX_CONVERSATION_BYTES)} a conversation may be; it was not read (delete it, or move "
                       "it out of the conversations folder).")
    return fd, fst


def _read_range(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start``..``end`` of an open file, at most the cap, however the file grows."""
    end = min(end, start + MAX_CONVERSATION_BYTES)
    chunks: list[bytes] = []
    pos = start
    while pos < end:
        piece = os.pread(fd, min(1 << 20, end - pos), pos)
        if not piece:
            break
        chunks.append(piece)
        pos += len(piece)
    return b"".join(chunks)


@dataclass
class _FileState:
    """What the list knows of one file: its fold up to ``offset`` and how the file looked."""

    ino: int
    size: int
    mtime_ns: int
    offset: int
    fold: Fold
    damaged_last: bool = False
    problem: str = ""  # the file cannot be read at all (its sentence)
    meta: ConversationMeta | None = None  # built once per state (a list of 2,000 reuses them)

    def to_json(self) -> dict[str, object]:
        f = self.fold
        head = None if f.header is None else [f.header.id.value, f.header.persona, f.header.created]
        return {"ino": self.ino, "size": self.size, "mtime_ns": self.mtime_ns, "offset": self.offset,
                "damaged_last": self.damaged_last, "problem": self.problem, "header": head, "first": f.first,
                "renamed": f.renamed, "updated": f.updated, "messages": f.messages, "lines": f.lines,
                "newer": f.newer, "skipped": f.skipped[:20]}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> _FileState:
        head = doc["header"]
        header = None
        if isinstance(head, list):
            header = Header(ConversationId(str(head[0])), str(head[1]), float(head[2]))
        fold = Fold(header, str(doc["first"]), str(doc["renamed"]), float(doc["updated"]),  # type: ignore[arg-type]
                    int(doc["messages"]), int(doc["lines"]), int(doc["newer"]),  # type: ignore[call-overload]
                    [int(n) for n in doc["skipped"]])  # type: ignore[attr-defined]
        return cls(int(doc["ino"]), int(doc["size"]), int(doc["mtime_ns"]), int(doc["offset"]),  # type: ignore[call-overload]
                   fold, bool(doc["damaged_last"]), str(doc["problem"]))


@dataclass
class _PersonaIndex:
    files: dict[str, _FileState] = field(default_factory=dict)
    dirty: bool = False
    loaded: bool = False


class ConversationStore:
    """The conversations folder. Thread-safe; shared by every Hearthside process through the
    per-conversation locks (readers take no lock: a list may, for a moment, see a line being
    written as cut short, and reads it whole the next time)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.trash_root = root / ".trash"
        self._guard = threading.RLock()
        self._indexes: dict[str, _PersonaIndex] = {}
        #: per file: (ino, size, mtime_ns) after this process's last append, so the next append
        #: need not check the file's first and last line again
        self._checked: dict[Path, tuple[int, int, int]] = {}

    # --- paths --------------------------------------------------------------------------------
    def _safe_folder(self, path: Path, create: bool) -> Path | None:
        """``path`` as a real folder (created 0700 if asked), refusing a link or anything else."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not create:
                return None
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(path, 0o700)
            return path
        if not stat.S_ISDIR(st.st_mode):
            raise Unusable(f"{path} is {_what(st.st_mode)}, not a folder of conversations; nothing there is read "
                           "or written.")
        return path

    def persona_dir(self, persona: str, create: bool = False) -> Path | None:
        """The persona's folder (None when it has none yet). A name that cannot be a persona's
        (a path, a dot name) is refused: it would name a folder outside the conversations."""
        why = validate_persona_name(persona)
        if why:
            raise ServiceError(f"{why}.", ErrorKind.INVALID)
        if self._safe_folder(self.root, create) is None:
            return None
        return self._safe_folder(self.root / persona, create)

    def file(self, persona: str, cid: ConversationId) -> Path:
        return self.root / persona / f"{cid.value}{SUFFIX}"

    def personas(self) -> list[str]:
        """Every persona that has a conversations folder with a conversation in it, whether or
        not the persona still exists (sorted)."""
        if self._safe_folder(self.root, False) is None:
            return []
        out = []
        with os.scandir(self.root) as it:
            for entry in it:
                if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                    continue
                if validate_persona_name(entry.name):
                    continue
                if any(n.endswith(SUFFIX) for n in os.listdir(entry.path)):
                    out.append(entry.name)
        return sorted(out, key=str.casefold)

    def locate(self, cid: ConversationId) -> str | None:
        """The persona whose folder holds conversation ``cid`` (None when none does)."""
        if self._safe_folder(self.root, False) is None:
            return None
        with os.scandir(self.root) as it:
            for entry in it:
                if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                    continue
                if os.path.lexists(os.path.join(entry.path, cid.value + SUFFIX)):
                    return entry.name
        return None

    # --- writing ------------------------------------------------------------------------------
    @contextmanager
    def _locked(self, folder: Path, cid: ConversationId) -> Iterator[None]:
        lock_file = folder / f"{cid.value}.lock"
        try:
            if not os.path.lexists(lock_file):
                os.close(open_lock_fd(lock_file))  # made private before the lock library opens it
            with lock_for(lock_file).held(LOCK_TIMEOUT_S):
                yield
        except LockBusy:
            raise ServiceError(f"Another Hearthside process kept the conversation {cid} busy for more than "
                               f"{LOCK_TIMEOUT_S:.0f} seconds; the message was not kept.",
                               ErrorKind.TIMED_OUT) from None
        except LockUnusable as exc:
            raise Unusable(f"The conversation could not be written: {exc}.") from None

    def append(self, persona: str, cid: ConversationId, records: Sequence[Record],
               header: Header | None = None) -> None:
        """Append ``records`` (their texts redacted like the log's) to the conversation; with
        ``header``, create the file first if it does not exist. Raises :class:`ServiceError`:
        NOT_FOUND when the conversation does not exist (and no header was given), INVALID when
        its file is not a conversation or is written by a newer Hearthside or is too big,
        TIMED_OUT when another process holds it too long."""
        folder = self.persona_dir(persona, create=True)
        assert folder is not None
        path = self.file(persona, cid)
        payload = b"".join(dumps_line(r.with_text(redact)) for r in records)
        with self._guard, self._locked(folder, cid):
            created = False
            if not os.path.lexists(path):
                if header is None:
                    raise ServiceError(f"There is no conversation {cid} of {persona} any more (it was deleted).",
                                       ErrorKind.NOT_FOUND)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
                fst = os.fstat(fd)
                payload = dumps_line(Header(cid, header.persona, header.created)) + payload
                created = True
            else:
                fd, fst = _open_regular(path, os.O_RDWR | os.O_APPEND)
            try:
                if not created:
                    payload = self._check_appendable(fd, fst, path, cid) + payload
                view = memoryview(payload)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                _FLUSHER.soon(path)
                after = os.fstat(fd)
                self._checked[path] = (after.st_ino, after.st_size, after.st_mtime_ns)
            finally:
                os.close(fd)
            if created:
                _fsync_dir(folder)

    def _check_appendable(self, fd: int, fst: os.stat_result, path: Path, cid: ConversationId) -> bytes:
        """b"" or b"\\n" (to end a line cut short); raises when the file must not be appended to."""
        if fst.st_size + (1 << 16) > MAX_CONVERSATION_BYTES:
            raise Unusable(f"The conversation {cid} is {_mb(fst.st_size)}, as long as a conversation may be; "
                           "start a new conversation.")
        if fst.st_size == 0:
            raise Unusable(f"The conversation file {path} is empty (it has no first line); nothing was added to it.")
        if self._checked.get(path) == (fst.st_ino, fst.st_size, fst.st_mtime_ns):
            return b""
        head = os.pread(fd, 4096, 0).split(b"\n", 1)[0]
        tail_start = max(0, fst.st_size - (1 << 16))
        tail = os.pread(fd, fst.st_size - tail_start, tail_start)
        lines = [ln for ln in tail.rstrip(b"\n").split(b"\n") if ln.strip()]
        for raw in (head, lines[-1] if lines else b""):
            line = parse_line(raw) if raw else None
            if isinstance(line, Newer):
                raise ServiceError(f"The conversation {cid} was written by a newer Hearthside (format "
                                   f"{line.version}); this version does not add to it. Start a new conversation.",
                                   ErrorKind.INVALID)
        return b"" if tail.endswith(b"\n") else b"\n"

    # --- reading ------------------------------------------------------------------------------
    def read(self, persona: str, cid: ConversationId) -> Conversation:
        """The whole conversation. NOT_FOUND when it does not exist; INVALID when its file is
        not one (a FIFO, a link, too big)."""
        data, mtime = self._bytes(persona, cid)
        return read_conversation(cid, persona, data, mtime)

    def raw(self, persona: str, cid: ConversationId) -> bytes:
        """The file's bytes (bounded; the same checks and errors as :meth:`read`)."""
        return self._bytes(persona, cid)[0]

    def _bytes(self, persona: str, cid: ConversationId) -> tuple[bytes, float]:
        if self.persona_dir(persona) is None:
            raise ServiceError(f"There is no conversation {cid} of {persona}.", ErrorKind.NOT_FOUND)
        path = self.file(persona, cid)
        try:
            fd, fst = _open_regular(path, os.O_RDONLY)
        except FileNotFoundError:
            raise ServiceError(f"There is no conversation {cid} of {persona}.", ErrorKind.NOT_FOUND) from None
        try:
            return _read_range(fd, 0, fst.st_size), fst.st_mtime
        finally:
            os.close(fd)

    def tail(self, persona: str, cid: ConversationId,
             cursor: tuple[int, int, int] | None) -> tuple[list[Record], tuple[int, int, int], bool]:
        """The records appended since ``cursor`` (``(inode, offset, 0)`` from the last call; None:
        from the start), the new cursor, and whether the file was read from the start again
        (``reset``: new, replaced or shortened). An unreadable file gives no records, reset."""
        path = self.file(persona, cid)
        if cursor is not None:
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and (st.st_ino, st.st_size) == cursor[:2]:
                return [], cursor, False  # nothing appended: nothing opened
        try:
            fd, fst = _open_regular(path, os.O_RDONLY)
        except (Unusable, OSError):
            return [], (0, 0, 0), True
        try:
            ino, offset, _ = cursor or (0, 0, 0)
            reset = cursor is None or ino != fst.st_ino or fst.st_size < offset
            if reset:
                offset = 0
            elif fst.st_size == offset:
                return [], (ino, offset, 0), False
            data = _read_range(fd, offset, fst.st_size)
        finally:
            os.close(fd)
        lines, rest = split_lines(data)
        offset += sum(len(x) + 1 for x in lines)
        if rest.strip() and not isinstance(parse_line(rest), Bad):
            lines.append(rest)
            offset += len(rest)
        records = [line for raw in lines if raw.strip() and isinstance(line := parse_line(raw), Record)]
        return records, (fst.st_ino, offset, 0), reset

    def list(self, persona: str) -> list[ConversationMeta]:
        """Every conversation of ``persona``, newest (last changed) first. A file that cannot be
        read is listed too, read-only, with its problem, so that it can be deleted."""
        folder = self.persona_dir(persona)
        if folder is None:
            return []
        with self._guard:
            idx = self._index(persona, folder)
            seen: set[str] = set()
            out: list[ConversationMeta] = []
            with os.scandir(folder) as it:
                for entry in it:
                    name = entry.name
                    if not name.endswith(SUFFIX) or name.startswith("."):
                        continue
                    try:
                        cid = ConversationId(name[: -len(SUFFIX)])
                    except ConversationError:
                        continue
                    seen.add(cid.value)
                    state = self._refresh(idx, cid, Path(entry.path))
                    out.append(self._meta(state, cid, persona))
            for gone in set(idx.files) - seen:
                del idx.files[gone]
                idx.dirty = True
            if idx.dirty:
                self._save_index(folder, idx)
        out.sort(key=lambda m: (m.updated, m.id.value), reverse=True)
        return out

    def ids(self, persona: str) -> builtins.list[ConversationId]:
        """The ids of the persona's conversation files (nothing is opened)."""
        folder = self.persona_dir(persona)
        if folder is None:
            return []
        out = []
        for name in os.listdir(folder):
            if name.endswith(SUFFIX) and not name.startswith("."):
                try:
                    out.append(ConversationId(name[: -len(SUFFIX)]))
                except ConversationError:
                    continue
        return out

    def meta(self, persona: str, cid: ConversationId) -> ConversationMeta:
        """One conversation's meta data (as :meth:`list` gives it). NOT_FOUND when missing."""
        folder = self.persona_dir(persona)
        path = self.file(persona, cid)
        if folder is None or not os.path.lexists(path):
            raise ServiceError(f"There is no conversation {cid} of {persona}.", ErrorKind.NOT_FOUND)
        with self._guard:
            idx = self._index(persona, folder)
            return self._meta(self._refresh(idx, cid, path), cid, persona)

    @staticmethod
    def _meta(state: _FileState, cid: ConversationId, persona: str) -> ConversationMeta:
        if state.meta is not None and state.meta.persona == persona:
            return state.meta
        meta = state.fold.meta(cid, persona, state.mtime_ns / 1e9, state.damaged_last)
        if state.problem:
            meta = ConversationMeta(cid, persona, meta.title if state.fold.lines else cid.value, meta.created,
                                    meta.updated, meta.messages, True, (state.problem,))
        state.meta = meta
        return meta

    def _refresh(self, idx: _PersonaIndex, cid: ConversationId, path: Path) -> _FileState:
        """The file's state, reading only what was appended since it was last read."""
        old = idx.files.get(cid.value)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if (old is not None and st is not None
                and (st.st_ino, st.st_size, st.st_mtime_ns) == (old.ino, old.size, old.mtime_ns)):
            return old  # unchanged (an unreadable file too: it is not opened again)
        try:
            fd, fst = _open_regular(path, os.O_RDONLY)
        except (Unusable, OSError) as exc:
            ino, size, mtime = (st.st_ino, st.st_size, st.st_mtime_ns) if st is not None else (0, 0, 0)
            text = str(exc) if isinstance(exc, Unusable) else f"The conversation file {path} cannot be read: {exc}."
            state = _FileState(ino, size, mtime, 0, Fold(), problem=text)
            idx.files[cid.value] = state
            idx.dirty = True
            return state
        try:
            grown = (old is not None and not old.problem and old.ino == fst.st_ino
                     and fst.st_size >= old.offset and old.offset > 0)
            if grown and old is not None:
                state = _FileState(fst.st_ino, fst.st_size, fst.st_mtime_ns, old.offset, old.fold)
            else:
                state = _FileState(fst.st_ino, fst.st_size, fst.st_mtime_ns, 0, Fold())
            data = _read_range(fd, state.offset, fst.st_size)
        finally:
            os.close(fd)
        lines, rest = split_lines(data)
        for raw in lines:
            if raw.strip():
                state.fold.add(parse_line(raw))
        state.offset += sum(len(x) + 1 for x in lines)
        if rest.strip():
            last = parse_line(rest)
            if isinstance(last, Bad):
                state.damaged_last = True  # the offset stays before it: read again next time
            else:  # whole, only its newline is missing
                state.fold.add(last)
                state.offset += len(rest)
        idx.files[cid.value] = state
        idx.dirty = True
        return state

    def _index(self, persona: str, folder: Path) -> _PersonaIndex:
        idx = self._indexes.setdefault(persona, _PersonaIndex())
        if not idx.loaded:
            idx.loaded = True
            try:
                fd, fst = _open_regular(folder / INDEX_NAME, os.O_RDONLY)
                try:
                    doc = json.loads(_read_range(fd, 0, fst.st_size))
                finally:
                    os.close(fd)
                if isinstance(doc, dict) and doc.get("v") == _INDEX_VERSION and isinstance(doc.get("files"), dict):
                    idx.files = {k: _FileState.from_json(v) for k, v in doc["files"].items()}
            except FileNotFoundError:
                pass
            except Exception as exc:  # noqa: BLE001 - a cache: rebuilt from the files
                log.info("conversation index of %s not used (%s); it is rebuilt", persona, exc)
                idx.files = {}
        return idx

    def _save_index(self, folder: Path, idx: _PersonaIndex) -> None:
        doc = {"v": _INDEX_VERSION, "files": {k: s.to_json() for k, s in idx.files.items()}}
        try:
            write_atomic(folder / INDEX_NAME, json.dumps(doc, ensure_ascii=True, separators=(",", ":")),
                         durable=False)
            idx.dirty = False
        except OSError as exc:
            log.info("conversation index not saved: %s", exc)

    def forget_index(self, persona: str) -> None:
        """Drop the in-memory index (the next list reads it from disk again)."""
        with self._guard:
            self._indexes.pop(persona, None)

    # --- deleting -----------------------------------------------------------------------------
    def trash(self, persona: str, cid: ConversationId, now: float) -> Path:
        """Move the conversation into the trash (for the undo window); returns where it went.
        A link or FIFO in the folder is moved too: the link itself, never what it points to."""
        folder = self.persona_dir(persona)
        path = self.file(persona, cid)
        if folder is None or not os.path.lexists(path):
            raise ServiceError(f"There is no conversation {cid} of {persona}.", ErrorKind.NOT_FOUND)
        bin_dir = self._safe_folder(self.trash_root / persona, True)
        assert bin_dir is not None
        os.chmod(self.trash_root, 0o700)
        dest = bin_dir / f"{cid.value}@{int(now * 1000)}{SUFFIX}"
        with self._guard, self._locked(folder, cid):
            os.rename(path, dest)
            self._drop(folder, persona, cid)
        return dest

    def trashed(self, cid: ConversationId) -> builtins.list[tuple[str, Path, float]]:
        """(persona, file, deleted at) of each trashed copy of ``cid``, newest first."""
        out = []
        if self._safe_folder(self.trash_root, False) is None:
            return []
        for pdir in self.trash_root.iterdir():
            if not pdir.is_dir() or pdir.is_symlink():
                continue
            for f in pdir.glob(f"{cid.value}@*{SUFFIX}"):
                try:
                    at = int(f.name[len(cid.value) + 1: -len(SUFFIX)]) / 1000
                except ValueError:
                    continue
                out.append((pdir.name, f, at))
        return sorted(out, key=lambda t: -t[2])

    def restore(self, persona: str, cid: ConversationId, src: Path) -> None:
        folder = self.persona_dir(persona, create=True)
        assert folder is not None
        path = self.file(persona, cid)
        with self._guard, self._locked(folder, cid):
            if os.path.lexists(path):
                raise ServiceError(f"The conversation {cid} is already back.", ErrorKind.INVALID)
            os.rename(src, path)
            self.forget_index(persona)

    def purge_trash(self, older_than: float) -> int:
        """Remove trashed conversations deleted before ``older_than``; returns how many."""
        if self._safe_folder(self.trash_root, False) is None:
            return 0
        n = 0
        for pdir in self.trash_root.iterdir():
            if not pdir.is_dir() or pdir.is_symlink():
                continue
            for f in pdir.iterdir():
                stem = f.name[: -len(SUFFIX)] if f.name.endswith(SUFFIX) else ""
                _, _, ms = stem.rpartition("@")
                if ms.isdigit() and int(ms) / 1000 < older_than:
                    f.unlink(missing_ok=True)
                    n += 1
        return n

    def remove(self, persona: str, cid: ConversationId) -> None:
        """Delete the conversation for good (retention); a link is removed, never its target."""
        folder = self.persona_dir(persona)
        if folder is None:
            return
        with self._guard, self._locked(folder, cid):
            self.file(persona, cid).unlink(missing_ok=True)
            self._drop(folder, persona, cid)

    def _drop(self, folder: Path, persona: str, cid: ConversationId) -> None:
        (folder / f"{cid.value}.lock").unlink(missing_ok=True)
        self._checked.pop(self.file(persona, cid), None)
        idx = self._index(persona, folder)
        if idx.files.pop(cid.value, None) is not None:
            self._save_index(folder, idx)  # the title leaves the cache with the file

    def remove_empty_folder(self, persona: str) -> None:
        """Remove a persona's folder once nothing is left in it but the cache."""
        folder = self.persona_dir(persona)
        if folder is None:
            return
        names = set(os.listdir(folder)) - {INDEX_NAME}
        if not any(n.endswith(SUFFIX) for n in names) and not names - {n for n in names if n.endswith(".lock")}:
            for n in [*names, INDEX_NAME]:
                (folder / n).unlink(missing_ok=True)
            try:
                folder.rmdir()
            except OSError:
                pass
            self.forget_index(persona)


class _Flusher:
    """``fdatasync`` of appended conversations, a moment after the append, off the caller's
    thread: the append itself costs one ``write`` (the kernel has the line: a killed process
    loses nothing), and a crash of the whole machine loses at most the last
    :data:`FLUSH_DELAY_S` of messages. Pending files are flushed at exit too."""

    def __init__(self) -> None:
        self._pending: set[Path] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def soon(self, path: Path) -> None:
        with self._cond:
            if self._thread is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="conversation-fsync", daemon=True)
                self._thread.start()
            self._pending.add(path)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
            time.sleep(FLUSH_DELAY_S)  # gathers the appends of one moment into one fdatasync each
            self.flush()

    def flush(self) -> None:
        """fdatasync every file appended to since the last flush (now, on this thread)."""
        with self._cond:
            paths, self._pending = self._pending, set()
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # deleted or moved since: nothing to keep
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fdatasync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)


#: How long after an append its file is fdatasync-ed at the latest (see :class:`_Flusher`).
FLUSH_DELAY_S = 0.5

_FLUSHER = _Flusher()
atexit.register(_FLUSHER.flush)


def flush_pending() -> None:
    """fdatasync every conversation appended to and not yet flushed (tests, before quitting)."""
    _FLUSHER.flush()


def _fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)

