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


def open_regular(path: str | os.PathLike[str]) -> tuple[int, int] | str:
    """Open a regular file for reading without blocking: ``(fd, size)`` or a reason string.

    The caller owns the descriptor. ``O_NONBLOCK`` keeps a FIFO from hanging the open and
    ``fstat`` on the open descriptor means a swap between check and read cannot fool us.
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        if os.path.islink(p):
            return f"{p} is a symbolic link to a file that does not exist"
        return f"{p} does not exist"
    except IsADirectoryError:
        return f"{p} is a directory, not a file"
    except PermissionError:
        return f"{p} cannot be read: permission denied"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{p} is a loop of symbolic links"
        return f"{p} cannot be opened: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return f"{p} cannot be read: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        return f"{p} is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return f"{p} is {_kind(st.st_mode)}, not a regular file; it was not read"
    return fd, st.st_size


def read_capped(fd: int, size: int, cap: int) -> bytes:
    """Read at most ``cap + 1`` bytes from ``fd``; ``size`` is what ``fstat`` said.

    ``os.read`` hands back a ``bytes`` sized to what was read, so the common case (the file
    is the size ``fstat`` reported) is one copy from the page cache and no second buffer. A
    file that grew since ``fstat`` is read on, still bounded.
    """
    want = min(size, cap) + 1
    parts: list[bytes] = []
    got = 0
    while got <= cap:
        try:
            chunk = os.read(fd, (want if got < want else cap + 1) - got)
        except BlockingIOError:
            break
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_bounded(path: str | os.PathLike[str], cap: int) -> BoundedRead:
    """Read at most ``cap + 1`` bytes of a regular file without ever blocking."""
    opened = open_regular(path)
    if isinstance(opened, str):
        return BoundedRead(None, opened)
    fd, size = opened
    try:
        data = read_capped(fd, size, cap)
    except OSError as exc:
        return BoundedRead(None, f"{os.fspath(path)} cannot be read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    return BoundedRead(data, over_cap=len(data) > cap)


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
