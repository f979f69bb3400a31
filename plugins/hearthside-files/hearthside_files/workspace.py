"""Path confinement and the read-before-edit version protocol over one folder.

Every path is resolved (symbolic links included) before it is checked against the workspace
root, so neither ``..`` nor a link can lead outside. A file's version is a hash of its bytes:
the Read tool records it, and Edit/Write replace a file only if it still has the version that
was read, checked again under a lock right before the rename.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from hearthside.plugin import read_bounded

MAX_FILE_BYTES = 1024 * 1024
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class WorkspaceError(Exception):
    """A file operation the model asked for was refused; the message is shown to the model."""


class VersionMismatch(WorkspaceError):
    """The file changed since it was read."""


def version_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


class Workspace:
    """One workspace folder. Paths are relative to it (absolute paths inside it are accepted)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        r = Path(os.path.expanduser(os.fspath(root)))
        if not r.is_dir():
            raise WorkspaceError(f"The workspace folder {r} does not exist; check files.workspace in settings.")
        self.root = Path(os.path.realpath(r))

    def resolve(self, path: object) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("'path' must be a non-empty string")
        if "\x00" in path:
            raise WorkspaceError("'path' may not contain a NUL character")
        p = Path(os.path.expanduser(path))
        if not p.is_absolute():
            p = self.root / p
        real = Path(os.path.realpath(p))
        if real != self.root and not real.is_relative_to(self.root):
            raise WorkspaceError(f"{path!r} is outside the workspace folder; only files inside it can be used")
        return real

    def rel(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    def read(self, real: Path) -> tuple[bytes, str]:
        got = read_bounded(real, MAX_FILE_BYTES)
        if got.data is None:
            raise WorkspaceError(got.reason.replace(str(self.root) + os.sep, ""))
        if got.over_cap:
            raise WorkspaceError(f"{self.rel(real)} is larger than {MAX_FILE_BYTES // 1024} KiB; use Grep to find parts of it")
        return got.data, version_of(got.data)

    def create(self, real: Path, data: bytes) -> str:
        """Create a new file; refuses if anything exists at the path (never clobbers)."""
        real.parent.mkdir(parents=True, exist_ok=True)
        if self.resolve(str(real.parent)) != real.parent:
            raise WorkspaceError("the folder is outside the workspace")
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except FileExistsError:
            raise WorkspaceError(f"{self.rel(real)} already exists; Read it before replacing it") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return version_of(data)

    def replace(self, real: Path, expected: str, data: bytes) -> str:
        """Replace a file only if its current version is ``expected`` (checked under a lock)."""
        with _lock_for(real):
            try:
                _, current = self.read(real)
            except WorkspaceError:
                if not real.exists():
                    raise WorkspaceError(f"{self.rel(real)} does not exist any more") from None
                raise
            if current != expected:
                raise VersionMismatch(
                    f"{self.rel(real)} changed since you read it; Read it again before changing it"
                )
            mode = real.stat().st_mode & 0o777
            fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, mode)
                os.replace(tmp, real)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            return version_of(data)
