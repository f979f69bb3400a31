"""A search provider speaking SearXNG's JSON API (``/search?format=json``).

Uses the standard library's HTTP client in a worker thread, so the pack needs no extra
dependency; a semaphore bounds concurrent searches and every request has a timeout.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from hearthside.plugin import SearchQuery, SearchResult, SearchUnavailable

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0
MAX_CONCURRENT = 4


class SearxngProvider:
    """Web search through the SearXNG instance at the ``searxng.url`` setting."""

    name = "searxng"

    def __init__(self, settings: Any = None, url: str | None = None, timeout: float | None = None) -> None:
        self.settings = settings
        self._url = url
        self._timeout = timeout
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _setting(self, key: str) -> Any:
        return self.settings.get(key) if self.settings is not None else None

    @property
    def url(self) -> str:
        return (self._url or self._setting("searxng.url") or "").strip()

    @property
    def timeout(self) -> float:
        t = self._timeout if self._timeout is not None else self._setting("searxng.timeout")
        return float(t) if isinstance(t, (int, float)) and t > 0 else DEFAULT_TIMEOUT

    def build_url(self, q: SearchQuery) -> str:
        base = self.url
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SearchUnavailable(
                f"searxng.url {base!r} is not an http(s) address; fix it in Hearthside's settings"
            )
        text = q.query if not q.site else f"{q.query} site:{q.site}"
        params = {"q": text, "format": "json", "pageno": "1"}
        if q.freshness in ("day", "week", "month", "year"):
            params["time_range"] = q.freshness
        path = parts.path.rstrip("/") + "/search"
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, urllib.parse.urlencode(params), ""))

    def _fetch(self, url: str) -> Any:
        req = urllib.request.Request(url, headers={"Accept": "application/json",
                                                   "User-Agent": "hearthside-searxng/0.1"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            if exc.code == 403:
                raise SearchUnavailable(
                    "the SearXNG instance refused JSON answers (HTTP 403); add 'json' to "
                    "search.formats in its settings.yml"
                ) from None
            raise RuntimeError(f"SearXNG answered HTTP {exc.code}") from None
        except urllib.error.URLError as exc:
            raise RuntimeError(f"cannot reach SearXNG at {self.url}: {exc.reason}") from None
        except TimeoutError:
            raise RuntimeError(f"SearXNG did not answer within {self.timeout:.0f} s") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise RuntimeError("SearXNG sent an answer larger than 4 MiB")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise RuntimeError("SearXNG did not answer with JSON; is searxng.url right?") from None

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        if not self.url:
            raise SearchUnavailable(
                "no SearXNG address is set; add searxng.url to Hearthside's settings.toml"
            )
        url = self.build_url(query)
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            self._sem, self._loop = asyncio.Semaphore(MAX_CONCURRENT), loop
        async with self._sem:
            doc = await asyncio.to_thread(self._fetch, url)
        return parse_results(doc, query.limit)


def parse_results(doc: Any, limit: int) -> list[SearchResult]:
    """Map SearXNG's ``results`` list onto SearchResult values, at most ``limit``."""
    items = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise RuntimeError("SearXNG's answer has no 'results' list")  # noqa: TRY004 - a backend fault
    out: list[SearchResult] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        out.append(SearchResult(
            title=str(item.get("title") or ""),
            url=item["url"],
            snippet=str(item.get("content") or ""),
            date=str(item.get("publishedDate") or ""),
            source=str(item.get("engine") or ""),
        ))
        if len(out) >= limit:
            break
    return out
