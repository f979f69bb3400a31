"""The feed list (the pack's config) and the per-persona record of items already reported.

The list is ``pack_config("feeds")``: ``{"feeds": [{"url": ..., "persona": ""}]}``, one entry
per address; ``persona`` empty means every persona. The seen-items record is one JSON file
per persona in ``pack_data_dir("feeds")/seen/`` — never in a persona folder — written
atomically under a lock, so two check-ins of one persona cannot lose each other's items.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hearthside.plugin import FetchRefused, check_web_url, pack_config, pack_data_dir, shown_url

from .reader import write_private

PACK = "feeds"
#: At most this many ids are remembered per feed (the newest); a feed keeps far fewer items.
MAX_SEEN_PER_FEED = 5000
MAX_FEEDS = 500
PERSONA_RX = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,64}$")


class FeedListError(ValueError):
    """A change to the feed list was refused; the message is one sentence."""


def check_persona(persona: str) -> str:
    persona = (persona or "").strip()
    if persona and not PERSONA_RX.match(persona):
        raise FeedListError(f"{persona[:64]!r} is not a persona name")
    return persona


def feeds() -> list[dict[str, str]]:
    """Every configured feed, as ``{"url", "persona"}`` (what is unusable is skipped)."""
    raw = pack_config(PACK).load().get("feeds")
    out = []
    for f in raw if isinstance(raw, list) else []:
        if isinstance(f, dict) and isinstance(f.get("url"), str):
            out.append({"url": f["url"], "persona": str(f.get("persona") or "")})
    return out


def feeds_for(persona: str) -> list[str]:
    """The addresses ``persona`` follows: its own and those for every persona."""
    return [f["url"] for f in feeds() if f["persona"] in ("", persona)]


def add(url: str, persona: str = "") -> str:
    """Add (or re-assign) a feed; returns the checked address. Raises :class:`FeedListError`."""
    try:
        url = check_web_url(url)
    except FetchRefused as exc:
        raise FeedListError(str(exc)) from None
    persona = check_persona(persona)

    def change(doc: dict[str, Any]) -> None:
        items = [f for f in doc.get("feeds") or [] if isinstance(f, dict) and f.get("url") != url]
        if len(items) >= MAX_FEEDS:
            raise FeedListError(f"there are already {MAX_FEEDS} feeds; remove some first")
        doc["feeds"] = [*items, {"url": url, "persona": persona}]

    pack_config(PACK).update(change)
    return url


def add_many(entries: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Add several ``(url, persona)`` in one change: (added addresses, one sentence per refusal)."""
    added: list[str] = []
    refused: list[str] = []
    checked: list[tuple[str, str]] = []
    for url, persona in entries:
        try:
            checked.append((check_web_url(url), check_persona(persona)))
        except (FetchRefused, FeedListError) as exc:
            refused.append(str(exc))

    def change(doc: dict[str, Any]) -> None:
        items = [f for f in doc.get("feeds") or [] if isinstance(f, dict)]
        have = {f.get("url") for f in items}
        for url, persona in checked:
            if url in have:
                continue
            if len(items) >= MAX_FEEDS:
                refused.append(f"{shown_url(url)} was not added: there are already {MAX_FEEDS} feeds")
                continue
            items.append({"url": url, "persona": persona})
            have.add(url)
            added.append(url)
        doc["feeds"] = items

    pack_config(PACK).update(change)
    return added, refused


def remove(url: str) -> bool:
    """Remove the feed at ``url`` (as written, or as shown); True when there was one."""
    url = url.strip()
    gone: list[str] = []

    def change(doc: dict[str, Any]) -> None:
        items = [f for f in doc.get("feeds") or [] if isinstance(f, dict)]
        keep = [f for f in items if f.get("url") != url]
        if len(keep) == len(items):  # also by the address as shown (without its query)
            keep = [f for f in items if shown_url(str(f.get("url"))) != url]
        gone.extend(str(f.get("url")) for f in items if f not in keep)
        doc["feeds"] = keep

    pack_config(PACK).update(change)
    return bool(gone)


class SeenRecord:
    """Which items each persona has been told about, per feed: ``{url: {id: first_reported}}``."""

    def __init__(self, persona: str, folder: Path | None = None) -> None:
        self.persona = persona
        root = folder if folder is not None else pack_data_dir(PACK) / "seen"
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9-]", "_", persona.lower())[:40] or "_all"
        digest = hashlib.sha256(persona.encode("utf-8")).hexdigest()[:12]
        self.path = root / f"{slug}-{digest}.json"

    def _load(self) -> dict[str, dict[str, float]]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        feeds = doc.get("feeds") if isinstance(doc, dict) else None
        if not isinstance(feeds, dict):
            return {}
        return {u: {str(k): float(v) for k, v in ids.items() if isinstance(v, (int, float))}
                for u, ids in feeds.items() if isinstance(ids, dict)}

    def seen(self) -> dict[str, set[str]]:
        return {u: set(ids) for u, ids in self._load().items()}

    def mark(self, reported: dict[str, list[str]]) -> None:
        """Record ``reported`` ids (per feed address) as told, under the record's lock."""
        if not any(reported.values()):
            return
        now = time.time()
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            doc = self._load()
            for url, ids in reported.items():
                have = doc.setdefault(url, {})
                for i in ids:
                    have.setdefault(i, now)
                if len(have) > MAX_SEEN_PER_FEED:
                    newest = sorted(have.items(), key=lambda kv: kv[1], reverse=True)[:MAX_SEEN_PER_FEED]
                    doc[url] = dict(newest)
            body = json.dumps({"version": 1, "persona": self.persona, "feeds": doc})
            write_private(self.path, body.encode("utf-8"))
