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


def read_into(fd: int, view: memoryview) -> int | str:
    """Fill ``view`` from ``fd`` until it is full or the file ends; bytes read, or a reason."""
    got = 0
    while got < len(view):
        try:
            n = os.readv(fd, [view[got:]])
        except BlockingIOError:
            break
        except OSError as exc:
            return f"cannot be read: {exc.strerror or exc}"
        if n == 0:
            break
        got += n
    return got


def read_bounded(path: str | os.PathLike[str], cap: int) -> BoundedRead:
    """Read at most ``cap + 1`` bytes of a regular file without ever blocking."""
    opened = open_regular(path)
    if isinstance(opened, str):
        return BoundedRead(None, opened)
    fd, size = opened
    try:
        buf = bytearray(min(size, cap) + 1)
        got = read_into(fd, memoryview(buf))
        if isinstance(got, str):
            return BoundedRead(None, f"{os.fspath(path)} {got}")
        if got == len(buf) and got <= cap:  # the file grew since fstat: read on, bounded
            more = bytearray(cap + 1 - got)
            extra = read_into(fd, memoryview(more))
            if isinstance(extra, str):
                return BoundedRead(None, f"{os.fspath(path)} {extra}")
            buf[got:] = more[:extra]
            got += extra
        del buf[got:]
        data = bytes(buf)
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
