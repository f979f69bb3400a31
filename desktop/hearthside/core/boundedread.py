"""Bounded, non-blocking reads of user files.

Every file Hearthside reads on the user's behalf (the soul, persona files, skills) may be
anything: a FIFO that would block forever, ``/dev/zero`` that never ends, a directory, a
dangling link. This module is the one place that opens them, refusing anything that is not a
regular file and never reading more than a caller's cap + 1 bytes. It only reads.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass


@dataclass(frozen=True)
class BoundedRead:
    """What a bounded read found: the bytes (at most cap + 1), or a reason it read nothing."""

    data: bytes | None
    reason: str = ""
    over_cap: bool = False

    @property
    def ok(self) -> bool:
        return self.data is not None


def read_bounded(path: str | os.PathLike[str], cap: int) -> BoundedRead:
    """Read at most ``cap + 1`` bytes of a regular file without ever blocking.

    The file is opened with ``O_NONBLOCK`` (so a FIFO cannot hang the open) and checked with
    ``fstat`` on the open descriptor (so a swap between check and read cannot fool us).
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        if os.path.islink(p):
            return BoundedRead(None, f"{p} is a symbolic link to a file that does not exist")
        return BoundedRead(None, f"{p} does not exist")
    except IsADirectoryError:
        return BoundedRead(None, f"{p} is a directory, not a file")
    except PermissionError:
        return BoundedRead(None, f"{p} cannot be read: permission denied")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return BoundedRead(None, f"{p} is a loop of symbolic links")
        return BoundedRead(None, f"{p} cannot be opened: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return BoundedRead(None, f"{p} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            return BoundedRead(None, f"{p} is {kind}, not a regular file; it was not read")
        chunks: list[bytes] = []
        want = cap + 1
        while want > 0:
            try:
                chunk = os.read(fd, min(want, 1 << 22))
            except BlockingIOError:
                break
            except OSError as exc:
                return BoundedRead(None, f"{p} cannot be read: {exc.strerror or exc}")
            if not chunk:
                break
            chunks.append(chunk)
            want -= len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return BoundedRead(data, over_cap=len(data) > cap)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
