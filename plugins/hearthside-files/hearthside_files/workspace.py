"""Path confinement, link-safe opening and the read-before-edit version protocol over one folder.

A path is first resolved (links and ``..``) and checked against the workspace root. That check
alone is a race: another process can swap a folder for a link between the check and the open.
So every open then walks the *resolved* path from ``/`` one component at a time with
``O_NOFOLLOW`` (an ``openat``-style walk): a component that has become a link since the check
fails the open instead of being followed, and the final file is opened relative to the folder
descriptor the walk holds. Writes go through the same walk and, before anything is created, ask
the session's write guard (``hearthside.plugin``), so a workspace that overlaps a persona
folder, the soul or Hearthside's own dirs can still never write there.

Paths are handed to the OS as ``/proc/self/fd/<dir>/<name>``: the kernel binds that to the
folder the walk opened (no swap can redirect it), and audit hooks still see the real folder.

A file's version is a hash of its bytes: Read records it, and Edit/Write replace a file only if
it still has the version that was read, checked again under a lock right before the rename.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from hearthside.plugin import WriteGuard, WriteRefused

MAX_FILE_BYTES = 1024 * 1024
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PROC_FD = os.path.isdir("/proc/self/fd")


class WorkspaceError(Exception):
    """A file operation the model asked for was refused; the message is shown to the model."""


class VersionMismatch(WorkspaceError):
    """The file changed since it was read."""


class LinkSwapped(WorkspaceError):
    """A folder on the way to the file became a link after the path was checked."""


def version_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


def _at(dirfd: int, name: str) -> str:
    """A path naming ``name`` inside the folder open as ``dirfd`` (bound to that folder)."""
    return f"/proc/self/fd/{dirfd}/{name}"


class Workspace:
    """One workspace folder. Paths are relative to it (absolute paths inside it are accepted)."""

    def __init__(self, root: str | os.PathLike[str], guard: WriteGuard | None = None) -> None:
        r = Path(os.path.expanduser(os.fspath(root)))
        if not r.is_dir():
            raise WorkspaceError(f"The workspace folder {r} does not exist; check files.workspace in settings.")
        if not _PROC_FD:
            raise WorkspaceError("File tools need Linux's /proc to open files safely; they are off here.")
        self.root = Path(os.path.realpath(r))
        self.guard = guard or WriteGuard()

    # -- paths -------------------------------------------------------------------------------
    def resolve(self, path: object) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("'path' must be a non-empty string")
        if "\x00" in path:
            raise WorkspaceError("'path' may not contain a NUL character")
        p = Path(os.path.expanduser(path))
        if not p.is_absolute():
            p = self.root / p
        try:
            real = Path(os.path.realpath(p))
        except OSError as exc:  # a link changed while it was being resolved
            raise WorkspaceError(f"the path could not be resolved ({exc.strerror or exc}); try again") from None
        if real != self.root and not real.is_relative_to(self.root):
            shown = path if len(path) <= 200 else path[:200] + "…"
            raise WorkspaceError(f"{shown!r} is outside the workspace folder; only files inside it can be used")
        return real

    def rel(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    def check_write(self, real: Path) -> None:
        """Ask the write guard; its sentence becomes the model's error."""
        try:
            self.guard.check(real)
        except WriteRefused as exc:
            raise WorkspaceError(str(exc)) from None

    # -- link-safe opening -------------------------------------------------------------------
    def open_dir(self, real: Path, *, create: bool = False) -> int:
        """A descriptor of folder ``real`` reached without following any link; with ``create``
        missing folders inside the workspace are made (each asked of the write guard first)."""
        fd = os.open("/", _DIR_FLAGS)
        try:
            walked = Path("/")
            for part in real.parts[1:]:
                walked = walked / part
                try:
                    nfd = self._step(fd, part, walked)
                except FileNotFoundError:
                    if not create or not walked.is_relative_to(self.root):
                        raise WorkspaceError(f"the folder {self._show(walked)} does not exist") from None
                    self.check_write(walked)
                    try:
                        os.mkdir(_at(fd, part), 0o755)
                    except FileExistsError:
                        pass
                    try:
                        nfd = self._step(fd, part, walked)
                    except FileNotFoundError:
                        raise WorkspaceError(f"the folder {self._show(walked)} vanished; try again") from None
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _step(self, fd: int, part: str, walked: Path) -> int:
        """Open one folder below ``fd`` without following a link (FileNotFoundError passes)."""
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise LinkSwapped(
                    f"{self._show(walked)} changed into a link or a file while it was being "
                    "opened; nothing was read or written, try again") from None
            raise WorkspaceError(f"{self._show(walked)} cannot be opened: {exc.strerror or exc}") from None

    def _show(self, p: Path) -> str:
        return self.rel(p) if p == self.root or p.is_relative_to(self.root) else str(p)

    def _open_file(self, real: Path, flags: int, mode: int = 0o644) -> int:
        dfd = self.open_dir(real.parent, create=bool(flags & os.O_CREAT))
        try:
            return os.open(_at(dfd, real.name), flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LinkSwapped(f"{self.rel(real)} changed into a link while it was being opened; "
                                  "nothing was read or written, try again") from None
            raise
        finally:
            os.close(dfd)

    def _confirm(self, fd: int, real: Path) -> None:
        """The descriptor really is ``real`` (belt and braces over the walk)."""
        try:
            actual = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if actual != str(real):
            raise LinkSwapped(f"{self.rel(real)} changed while it was being opened; try again")

    # -- reading -------------------------------------------------------------------------------
    def read(self, real: Path) -> tuple[bytes, str]:
        rel = self.rel(real)
        try:
            fd = self._open_file(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except FileNotFoundError:
            raise WorkspaceError(f"{rel} does not exist") from None
        except IsADirectoryError:
            raise WorkspaceError(f"{rel} is a directory, not a file") from None
        except PermissionError:
            raise WorkspaceError(f"{rel} cannot be read: permission denied") from None
        except OSError as exc:
            raise WorkspaceError(f"{rel} cannot be opened: {exc.strerror or exc}") from None
        try:
            self._confirm(fd, real)
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{rel} is a directory, not a file")
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(f"{rel} is not a regular file (a pipe, socket or device); it is not read")
            chunks: list[bytes] = []
            left = MAX_FILE_BYTES + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 16))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{rel} is larger than {MAX_FILE_BYTES // 1024} KiB; use Grep to find parts of it")
        return data, version_of(data)

    def walk(self) -> Iterator[tuple[str, bool]]:
        """Every entry under the root as ``(relative path, is a regular file)``, folders
        before their contents, never following a link (a link to a file inside the workspace
        is listed as a file; a linked folder is not entered, so no loop is possible)."""
        stack: list[tuple[int, str]] = [(self.open_dir(self.root), "")]
        try:
            while stack:
                dfd, prefix = stack.pop()
                try:
                    with os.scandir(dfd) as it:
                        entries = sorted(it, key=lambda e: e.name)
                except OSError:
                    entries = []
                subdirs: list[tuple[int, str]] = []
                for e in entries:
                    rel = prefix + e.name
                    try:
                        if e.is_dir(follow_symlinks=False):
                            yield rel, False
                            try:
                                subdirs.append((os.open(e.name, _DIR_FLAGS, dir_fd=dfd), rel + "/"))
                            except OSError:
                                pass
                        elif e.is_symlink():
                            real = os.path.realpath(self.root / rel)
                            inside = Path(real).is_relative_to(self.root)
                            yield rel, inside and os.path.isfile(real)
                        else:
                            yield rel, e.is_file(follow_symlinks=False)
                    except OSError:
                        continue
                os.close(dfd)
                stack.extend(reversed(subdirs))
        finally:
            for dfd, _ in stack:
                os.close(dfd)

    # -- writing -------------------------------------------------------------------------------
    def create(self, real: Path, data: bytes) -> str:
        """Create a new file; refuses if anything exists at the path (never clobbers)."""
        self.check_write(real)
        try:
            fd = self._open_file(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            raise WorkspaceError(f"{self.rel(real)} already exists; Read it before replacing it") from None
        except OSError as exc:
            raise WorkspaceError(f"{self.rel(real)} cannot be created: {exc.strerror or exc}") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return version_of(data)

    def replace(self, real: Path, expected: str, data: bytes) -> str:
        """Replace a file only if its current version is ``expected`` (checked under a lock)."""
        self.check_write(real)
        with _lock_for(real):
            try:
                _, current = self.read(real)
            except LinkSwapped:
                raise
            except WorkspaceError:
                if not os.path.lexists(real):
                    raise WorkspaceError(f"{self.rel(real)} does not exist any more") from None
                raise
            if current != expected:
                raise VersionMismatch(
                    f"{self.rel(real)} changed since you read it; Read it again before changing it"
                )
            dfd = self.open_dir(real.parent)
            try:
                st = os.stat(_at(dfd, real.name), follow_symlinks=False)
                tmp = f".{real.name}.{secrets.token_hex(4)}.tmp"
                fd = os.open(_at(dfd, tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
                try:
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
                        os.fsync(fh.fileno())
                    os.replace(_at(dfd, tmp), _at(dfd, real.name))
                except BaseException:
                    try:
                        os.unlink(_at(dfd, tmp))
                    except OSError:
                        pass
                    raise
            finally:
                os.close(dfd)
            return version_of(data)
