"""Bounded, non-blocking reads of user files.

Every file Hearthside reads on the user's behalf (the soul, persona files, skills) may be
anything: a FIFO that would block forever, ``/dev/zero`` that never ends, a directory, a
dangling link. This module is the one place that opens them, refusing anything that is not a
regular file and never reading more than a caller's cap + 1 bytes. It only reads.

Files of the kernel's own filesystems (``/proc``, ``/sys``, ``/dev``) are refused even when
they look like regular files: ``/proc/self/environ`` is "regular", 0 bytes by ``fstat``, and
full of secrets. The check is made on the descriptor actually opened (its real path and its
device), so a link, a chain of links, or a swap between check and open cannot get past it.
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
    real_path: str = ""  # where the bytes really came from (links resolved), when known

    @property
    def ok(self) -> bool:
        return self.data is not None


#: Where the kernel's pseudo-files live; nothing under them is ever read as a user's file.
SPECIAL_ROOTS: tuple[str, ...] = ("/proc", "/sys", "/dev")
_SPECIAL_PREFIXES = tuple(r + "/" for r in SPECIAL_ROOTS)
_special_devs: frozenset[int] | None = None


def _special_devices() -> frozenset[int]:
    """Device numbers of the mounts at :data:`SPECIAL_ROOTS` (catches a bind mount elsewhere)."""
    global _special_devs
    if _special_devs is None:
        devs = set()
        for root in SPECIAL_ROOTS:
            try:
                devs.add(os.stat(root).st_dev)
            except OSError:
                pass
        _special_devs = frozenset(devs)
    return _special_devs


def is_special_path(real: str) -> bool:
    """True when a resolved path lies under ``/proc``, ``/sys`` or ``/dev``."""
    return real.startswith(_SPECIAL_PREFIXES) or real in SPECIAL_ROOTS


def fd_real_path(fd: int, fallback: str | os.PathLike[str]) -> str:
    """The real path of an open descriptor (Linux: ``/proc/self/fd``), else ``realpath``."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
        if real.startswith("/"):
            return real
    except OSError:
        pass
    return os.path.realpath(fallback)


def special_file_reason(real: str, st: os.stat_result, path: str) -> str:
    """A sentence when the open file (real path ``real``) belongs to ``/proc``, ``/sys`` or
    ``/dev``; "" otherwise."""
    if is_special_path(real) or st.st_dev in _special_devices():
        where = real if is_special_path(real) else "a kernel filesystem"
        return (f"{path} leads to {where}, a special system file; Hearthside never reads files "
                "under /proc, /sys or /dev")
    return ""


def open_regular(path: str | os.PathLike[str]) -> tuple[int, int] | str:
    """Open a regular file for reading without blocking: ``(fd, size)`` or a reason string.

    The caller owns the descriptor. ``O_NONBLOCK`` keeps a FIFO from hanging the open and
    ``fstat`` on the open descriptor means a swap between check and read cannot fool us.
    """
    opened = _open_regular(path)
    return opened if isinstance(opened, str) else opened[:2]


def _open_regular(path: str | os.PathLike[str]) -> tuple[int, int, str] | str:
    """:func:`open_regular`, plus the real path of what was opened."""
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
    real = fd_real_path(fd, p)
    special = special_file_reason(real, st, p)
    if special:
        os.close(fd)
        return special
    return fd, st.st_size, real


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
    opened = _open_regular(path)
    if isinstance(opened, str):
        return BoundedRead(None, opened)
    fd, size, real = opened
    try:
        data = read_capped(fd, size, cap)
    except OSError as exc:
        return BoundedRead(None, f"{os.fspath(path)} cannot be read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    return BoundedRead(data, over_cap=len(data) > cap, real_path=real)


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


def read_bytes_checked(path: str | os.PathLike[str], cap: int, *,
                       missing_ok: bool = True) -> tuple[bytes | None, str]:
    """The one error ladder for a file Hearthside reads whole (its own files, a file to import):
    ``(data, "")``; ``(None, "")`` when there is no such file and ``missing_ok``; else
    ``(None, reason)``, one sentence naming the file: not a regular file, unreadable, or over
    ``cap`` bytes. Bounded and non-blocking (see :func:`read_bounded`)."""
    p = os.fspath(path)
    if missing_ok and not os.path.lexists(p):
        return None, ""
    got = read_bounded(p, cap)
    if got.data is None:
        return None, got.reason
    if got.over_cap:
        return None, f"{p} is larger than {_size(cap)}, too large to be this file"
    return got.data, ""


def read_text_bounded(path: str | os.PathLike[str], cap: int, *,
                      missing_ok: bool = True) -> tuple[str | None, str]:
    """:func:`read_bytes_checked`, then UTF-8: ``(text, "")``; ``(None, "")`` when there is no
    such file (and ``missing_ok``); ``(None, reason)`` when it is unusable, including not UTF-8
    (the reason gives the offset of the first bad byte). A leading BOM is dropped."""
    data, why = read_bytes_checked(path, cap, missing_ok=missing_ok)
    if data is None:
        return None, why
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), ""
    except UnicodeDecodeError as exc:
        return None, f"{os.fspath(path)} is not UTF-8 text (bad byte at offset {exc.start})"


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"
