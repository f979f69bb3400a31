"""A :class:`~hearthside.core.environment.Workspace` over a real folder.

Logical names map to files under the root; a name that is not a valid logical name, or that
resolves outside the root through a symlink, is refused, so nothing the model names can reach
past the folder. Versions are stat tokens (size and nanosecond modification time): a copy made
with ``shutil.copy2`` keeps them, so an untouched file in a fork has the version it had in the
parent, and a write changes it; computing them for 10,000 files costs no file reads.
Symlinks and special files (FIFOs, sockets, devices) are not part of a workspace's versions:
a fork never follows them and a merge never writes through them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..core.environment import FileVersion, valid_name


def walk_files(root: Path, skipped: list[str] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every regular file under ``root`` as (name relative to it, lstat); no symlink is followed.

    The one walk both a workspace's versions and a fork's size check make, so the two always
    agree on what a workspace holds. Links and special files (FIFOs, sockets, devices) are not
    yielded; where ``skipped`` is given, their names are appended to it. Folders that cannot be
    read, and entries gone before their lstat, are passed over."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(entry.path))
            elif stat.S_ISREG(st.st_mode):
                yield Path(entry.path).relative_to(root).as_posix(), st
            elif skipped is not None:
                skipped.append(Path(entry.path).relative_to(root).as_posix())


class DirectoryWorkspace:
    """The files under ``root`` (a folder that exists)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root).resolve()

    @property
    def root(self) -> Path:
        """The folder (for adapters that must hand a path to a process; never put into core values)."""
        return self._root

    def _path(self, name: str) -> Path:
        if not valid_name(name):
            raise ValueError(f"not a file name inside the workspace: {name!r}")
        path = self._root / name
        parent = path.parent.resolve()
        if parent != self._root and self._root not in parent.parents:
            raise ValueError(f"{name!r} leads outside the workspace")
        if path.is_symlink():
            raise ValueError(f"{name!r} is a symbolic link; a workspace never writes through one")
        return path

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every regular file as (logical name, lstat), symlinked folders not followed."""
        return walk_files(self._root)

    def versions(self) -> dict[str, FileVersion]:
        return {name: FileVersion(f"{st.st_size}:{st.st_mtime_ns}") for name, st in self.walk()}

    def read(self, name: str) -> bytes:
        path = self._path(name)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{name!r} is not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read()
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> None:
        """Atomic replace (a temporary file beside it, then rename), folders made as needed."""
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.hearthside-tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)
