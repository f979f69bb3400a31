"""Fetching and parsing one feed, with a conditional-GET cache in the pack's cache folder.

A feed is fetched through Hearthside's ``safe_get`` (plugin API 1.2: https or loopback http,
every redirect re-checked, a time and size budget). The last good copy is kept in
``pack_cache_dir("feeds")`` with its ``ETag`` and ``Last-Modified``, sent back next time, so an
unchanged feed costs a 304; when a feed cannot be fetched the cached copy is used and the
reader says how old it is.
"""

from __future__ import annotations

import calendar
import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import feedparser  # type: ignore[import-untyped]
from hearthside.plugin import Fetched, FetchError, safe_get, shown_url

from .fence import plain

MAX_FEED_BYTES = 8 * 1024 * 1024
MAX_ITEMS_PER_FEED = 500
ACCEPT = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"


@dataclass(frozen=True)
class Item:
    """One entry: a stable ``id``, text fields (plain, untrusted) and when it was published."""

    id: str
    title: str
    link: str
    summary: str
    published: datetime | None
    feed: str


@dataclass
class FeedRead:
    """What reading a feed gave: its ``items`` (newest first) or an ``error`` sentence; ``note``
    says when a cached copy stood in for a failed fetch."""

    url: str
    title: str = ""
    items: list[Item] = field(default_factory=list)
    error: str = ""
    note: str = ""


def _key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, mode 0600 (temp file in the same folder, rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class FeedCache:
    """The last good copy of each feed: ``<key>.xml`` and ``<key>.json`` (validators, time)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self, url: str) -> tuple[dict[str, Any], bytes | None]:
        meta_path, body_path = self.folder / f"{_key(url)}.json", self.folder / f"{_key(url)}.xml"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            body = body_path.read_bytes()
        except (OSError, ValueError):
            return {}, None
        if not isinstance(meta, dict) or meta.get("url") != url:
            return {}, None
        return meta, body

    def save(self, url: str, fetched: Fetched) -> None:
        meta = {"url": url, "etag": fetched.headers.get("etag", ""),
                "last_modified": fetched.headers.get("last-modified", ""),
                "content_type": fetched.headers.get("content-type", ""), "saved": time.time()}
        try:
            write_private(self.folder / f"{_key(url)}.xml", fetched.body)
            write_private(self.folder / f"{_key(url)}.json", json.dumps(meta).encode("utf-8"))
        except OSError:
            pass  # a cache that cannot be written only costs a full fetch next time

    def forget(self, url: str) -> None:
        for suffix in (".json", ".xml"):
            with contextlib.suppress(OSError):
                (self.folder / f"{_key(url)}{suffix}").unlink()


def _when(entry: Any) -> datetime | None:
    for key in ("published_parsed", "updated_parsed"):
        t = entry.get(key)
        if t:
            try:
                return datetime.fromtimestamp(calendar.timegm(t), UTC)
            except (OverflowError, ValueError, TypeError):
                continue
    return None


def parse(url: str, body: bytes, content_type: str = "") -> FeedRead:
    """The feed in ``body``, or a :class:`FeedRead` whose ``error`` says why it is not one."""
    headers = {"content-type": content_type} if content_type else {}
    try:
        doc = feedparser.parse(body, response_headers=headers, sanitize_html=False,
                               resolve_relative_uris=False)
    except Exception:  # noqa: BLE001 - feedparser on hostile bytes: one sentence, not a crash
        return FeedRead(url, error=f"{shown_url(url)} could not be read as a feed")
    if not doc.get("version") and not doc.entries:
        head = body[:512].lstrip().lower()
        looks = " (it is a web page, not a feed)" if head.startswith((b"<!doctype html", b"<html")) else ""
        return FeedRead(url, error=f"{shown_url(url)} is not an RSS or Atom feed{looks}")
    title = plain(str(doc.feed.get("title") or "")) or shown_url(url)
    items = []
    for e in doc.entries[:MAX_ITEMS_PER_FEED]:
        link = str(e.get("link") or "")
        ident = str(e.get("id") or link or "")
        etitle = plain(str(e.get("title") or ""))
        when = _when(e)
        if not ident:
            ident = "h:" + hashlib.sha256(f"{etitle}|{when}".encode()).hexdigest()[:24]
        summary = plain(str(e.get("summary") or ""))
        items.append(Item(ident[:500], etitle, link, summary, when, title))
    items.sort(key=lambda i: i.published or datetime.min.replace(tzinfo=UTC), reverse=True)
    return FeedRead(url, title, items)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def read(url: str, cache: FeedCache, timeout: float = 10.0) -> FeedRead:
    """Fetch (conditionally) and parse ``url``; fall back to the cached copy, saying so."""
    meta, cached = cache.load(url)
    headers = {"Accept": ACCEPT}
    if cached is not None:
        if meta.get("etag"):
            headers["If-None-Match"] = str(meta["etag"])
        if meta.get("last_modified"):
            headers["If-Modified-Since"] = str(meta["last_modified"])
    try:
        got = safe_get(url, timeout=timeout, max_bytes=MAX_FEED_BYTES, headers=headers)
    except FetchError as exc:
        if cached is None:
            return FeedRead(url, error=str(exc))
        out = parse(url, cached, str(meta.get("content_type") or ""))
        age = _age(max(0.0, time.time() - float(meta.get("saved") or 0)))
        out.note = f"{exc}; using the copy fetched {age} ago"
        return out
    if got.not_modified and cached is not None:
        return parse(url, cached, str(meta.get("content_type") or ""))
    out = parse(url, got.body, got.headers.get("content-type", ""))
    if not out.error:
        cache.save(url, got)
    return out
