"""Search providers for the Brave Search API and Tavily, with their real request shapes.

Brave: ``GET <endpoint>?q=...&count=N`` with the key in ``X-Subscription-Token``; results in
``web.results[].{title,url,description}``. Tavily: ``POST <endpoint>`` with a JSON body
``{"query": ..., "max_results": N}`` and ``Authorization: Bearer <key>``; results in
``results[].{title,url,content}``. The key comes from the keyring (``pack_secrets``) at search
time and goes only to the configured endpoint, which must be https (or http on this
computer); no redirect is followed with it. Results are returned as SearchResult values and
Hearthside's WebSearch tool fences them as untrusted.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any, ClassVar

import httpx2
from hearthside.plugin import (
    FetchError,
    FetchRefused,
    PackSecretError,
    PackSettings,
    SearchQuery,
    SearchResult,
    SearchUnavailable,
    check_web_url,
    pack_secrets,
    safe_client,
    shown_url,
)

from .textutil import plain

PACK = "websearch"
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0
MAX_CONCURRENT = 4


class KeyedProvider:
    """What Brave and Tavily share: the key, the endpoint setting, one bounded request."""

    name = ""
    label = ""
    default_endpoint = ""

    def __init__(self, settings: PackSettings | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.settings = settings
        self.timeout = timeout
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def endpoint_key(self) -> str:
        return f"search.{self.name}.endpoint"

    def endpoint(self) -> str:
        value = self.settings.get(self.endpoint_key) if self.settings is not None else None
        url = value.strip() if isinstance(value, str) and value.strip() else self.default_endpoint
        try:
            return check_web_url(url)
        except FetchRefused as exc:
            raise SearchUnavailable(f"{self.endpoint_key} is not usable: {exc}") from None

    def key(self) -> str:
        try:
            key = pack_secrets(PACK).get(self.name)
        except PackSecretError as exc:
            raise SearchUnavailable(f"the {self.label} API key cannot be read: {exc}") from None
        if not key:
            raise SearchUnavailable(
                f"no {self.label} API key is set; add it on the websearch pack's page in the Plugins "
                f"window or with 'hearthside websearch set-key {self.name}'")
        return key

    def request(self, query: SearchQuery, key: str, endpoint: str) -> httpx2.Request:
        raise NotImplementedError

    def parse(self, doc: Any, limit: int) -> list[SearchResult]:
        raise NotImplementedError

    def _call(self, query: SearchQuery) -> list[SearchResult]:
        endpoint, key = self.endpoint(), self.key()
        try:
            with safe_client(self.timeout) as http:
                resp = http.send(self.request(query, key, endpoint), stream=True)
                try:
                    raw = bytearray()
                    for chunk in resp.iter_bytes():
                        raw += chunk
                        if len(raw) > MAX_RESPONSE_BYTES:
                            raise RuntimeError(f"{self.label} sent an answer larger than 4 MiB")
                finally:
                    resp.close()
        except httpx2.TimeoutException:
            raise RuntimeError(f"{self.label} did not answer within {self.timeout:g} s") from None
        except FetchError as exc:
            raise RuntimeError(f"{self.label}: {exc}") from None
        except (httpx2.HTTPError, OSError) as exc:
            raise RuntimeError(f"cannot reach {self.label} at {shown_url(endpoint)} "
                               f"({type(exc).__name__})") from None
        status = resp.status_code
        if status in (401, 403):
            raise SearchUnavailable(
                f"{self.label} refused the API key (HTTP {status}); set a new one on the websearch "
                f"pack's page in the Plugins window or with 'hearthside websearch set-key {self.name}'")
        if status == 429:
            raise RuntimeError(f"{self.label} says too many searches were made (HTTP 429); try again later")
        if 300 <= status < 400:
            raise RuntimeError(f"{self.label} answered with a redirect (HTTP {status}), which is not "
                               "followed with an API key; check the endpoint setting")
        if status >= 400:
            raise RuntimeError(f"{self.label} answered HTTP {status}")
        try:
            doc = json.loads(bytes(raw).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise RuntimeError(f"{self.label} did not answer with JSON; is {self.endpoint_key} right?") from None
        return self.parse(doc, query.limit)

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            self._sem, self._loop = asyncio.Semaphore(MAX_CONCURRENT), loop
        async with self._sem:
            return await asyncio.to_thread(self._call, query)


def _items(doc: Any, *path: str) -> list[Any]:
    for part in path:
        if not isinstance(doc, dict):
            raise RuntimeError(f"the answer has no '{'.'.join(path)}' list")  # noqa: TRY004
        doc = doc.get(part, [] if part == path[-1] else {})
    if not isinstance(doc, list):
        raise RuntimeError(f"the answer's '{'.'.join(path)}' is not a list")  # noqa: TRY004
    return doc


def _results(items: list[Any], snippet_key: str, limit: int, date_keys: tuple[str, ...]) -> list[SearchResult]:
    out: list[SearchResult] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        date = next((str(item[k]) for k in date_keys if isinstance(item.get(k), str)), "")
        host = urllib.parse.urlsplit(item["url"]).hostname or ""
        out.append(SearchResult(title=plain(str(item.get("title") or "")), url=item["url"],
                                snippet=plain(str(item.get(snippet_key) or "")), date=date, source=host))
        if len(out) >= limit:
            break
    return out


class BraveProvider(KeyedProvider):
    """The Brave Search API (``search.provider = "brave"``)."""

    name = "brave"
    label = "Brave Search"
    default_endpoint = "https://api.search.brave.com/res/v1/web/search"
    FRESHNESS: ClassVar[dict[str, str]] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}

    def request(self, query: SearchQuery, key: str, endpoint: str) -> httpx2.Request:
        text = query.query if not query.site else f"{query.query} site:{query.site}"
        params = {"q": text, "count": str(min(20, query.limit))}
        if query.freshness in self.FRESHNESS:
            params["freshness"] = self.FRESHNESS[query.freshness]
        return httpx2.Request("GET", endpoint, params=params, headers={
            "Accept": "application/json", "X-Subscription-Token": key})

    def parse(self, doc: Any, limit: int) -> list[SearchResult]:
        if not isinstance(doc, dict):
            raise RuntimeError("Brave Search's answer is not a JSON object")  # noqa: TRY004
        return _results(_items(doc, "web", "results"), "description", limit, ("page_age", "age"))


class TavilyProvider(KeyedProvider):
    """Tavily's search API (``search.provider = "tavily"``)."""

    name = "tavily"
    label = "Tavily"
    default_endpoint = "https://api.tavily.com/search"

    def request(self, query: SearchQuery, key: str, endpoint: str) -> httpx2.Request:
        body: dict[str, Any] = {"query": query.query, "max_results": min(20, query.limit),
                                "topic": "general", "search_depth": "basic"}
        if query.freshness:
            body["time_range"] = query.freshness
        if query.site:
            body["include_domains"] = [query.site]
        return httpx2.Request("POST", endpoint, json=body, headers={
            "Accept": "application/json", "Authorization": f"Bearer {key}"})

    def parse(self, doc: Any, limit: int) -> list[SearchResult]:
        if not isinstance(doc, dict):
            raise RuntimeError("Tavily's answer is not a JSON object")  # noqa: TRY004
        return _results(_items(doc, "results"), "content", limit, ("published_date",))


PROVIDERS: dict[str, type[KeyedProvider]] = {"brave": BraveProvider, "tavily": TavilyProvider}
