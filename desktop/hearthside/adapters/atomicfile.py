"""Atomic writes of app-owned files: temp file in the same folder, fsync, rename.

Used for settings, ``mcp.json``, baselines and records — never for a persona file or the soul.
A reader sees either the old file or the new one, never half of one, even after a crash.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: bytes | str, mode: int = 0o600, *,
                 durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; creates the parent folder if needed.

    ``durable=False`` skips the fsyncs: still all-or-nothing for readers, but a crash soon
    after may leave the old file or a damaged new one. Only for bulk writes whose damage is
    detected and safe (drift baselines written on first use show a damaged copy as drift).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
    try:
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def keep_backup(path: str | os.PathLike[str]) -> Path:
    """Rename an unparsable app file aside (``NAME.broken-<time>``, mode 0600) so nothing is lost."""
    src = Path(path)
    dst = src.with_name(f"{src.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while dst.exists():
        dst = src.with_name(f"{src.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        n += 1
    os.replace(src, dst)
    # The damaged file may hold user text or a pasted secret: only the user may read the copy,
    # whatever mode the original had (a hand-edited file is often 0644).
    try:
        os.chmod(dst, 0o600)
    except OSError:
        pass
    return dst
