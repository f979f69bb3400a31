"""The downloaded copy of each remote calendar, in ``pack_cache_dir("calendar")``.

``<id>.ics`` is the body as the server sent it; ``<id>.json`` says when it was fetched, the
validators for the next conditional request (ETag, Last-Modified) and the last error. Files
are named by the calendar's random id, never by its address (a subscription's address is a
secret). Writes are atomic (a temporary file renamed into place), mode 0600.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from hearthside.plugin import pack_cache_dir, read_bounded

from .fetch import MAX_BYTES

PACK = "calendar"


@dataclass
class CacheMeta:
    """What is known about the cached copy (times are ``time.time()`` seconds)."""

    fetched_at: float = 0.0   # when the server last confirmed the copy (200 or 304)
    tried_at: float = 0.0     # when a fetch last ended, well or not
    etag: str = ""
    last_modified: str = ""
    error: str = ""           # the last fetch's failure, one sentence ("" when it worked)

    def age(self, now: float | None = None) -> float:
        return max(0.0, (now or time.time()) - self.fetched_at) if self.fetched_at else float("inf")


def _dir() -> Path:
    return pack_cache_dir(PACK)


def body_path(cal_id: str) -> Path:
    return _dir() / f"{cal_id}.ics"


def load_meta(cal_id: str) -> CacheMeta:
    got = read_bounded(_dir() / f"{cal_id}.json", 64 * 1024)
    if got.data is None or got.over_cap:
        return CacheMeta()
    try:
        raw = json.loads(got.data)
        return CacheMeta(**{k: raw[k] for k in CacheMeta.__dataclass_fields__ if k in raw})
    except (ValueError, TypeError):
        return CacheMeta()


def save_meta(cal_id: str, meta: CacheMeta) -> None:
    _write(_dir() / f"{cal_id}.json", json.dumps(asdict(meta)).encode())


def save_body(cal_id: str, body: bytes) -> None:
    _write(body_path(cal_id), body)


def load_body(cal_id: str) -> bytes | None:
    got = read_bounded(body_path(cal_id), MAX_BYTES)
    return got.data if got.data is not None and not got.over_cap else None


def body_stamp(cal_id: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of the cached body, to know when a parsed copy is still current."""
    try:
        st = os.stat(body_path(cal_id))
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def forget(cal_id: str) -> None:
    for suffix in (".ics", ".json"):
        try:
            (_dir() / f"{cal_id}{suffix}").unlink()
        except OSError:
            pass


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
