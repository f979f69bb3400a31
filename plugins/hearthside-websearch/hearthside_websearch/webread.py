"""The read-only tool ``web_read(url)``: one web page as readable text, fenced as untrusted.

The page is fetched through Hearthside's ``safe_get`` (plugin API 1.2: https, http only to this
computer, every redirect re-checked, no cookies, no proxy from the environment) within a time
and size budget, and turned into text by ``trafilatura`` (the article, without menus, footers
and ads). No JavaScript runs: what the server sends is what is read. The answer is bounded in
length.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

import trafilatura
from hearthside.plugin import Fetched, FetchError, ToolEnv, ToolResult, ToolSpec, safe_get, shown_url

from .textutil import fence_page, plain

MAX_PAGE_BYTES = 3 * 1024 * 1024
DEFAULT_CHARS = 12_000
MAX_CHARS = 40_000
TIMEOUT = 15.0
HTML_TYPES = ("text/html", "application/xhtml+xml")
_TITLE = re.compile(rb"<title[^>]*>(.{0,600}?)</title>", re.IGNORECASE | re.DOTALL)


def page_text(fetched: Fetched) -> tuple[str, str]:
    """(title, readable text) of a fetched page; ValueError with a sentence when there is none."""
    ctype = fetched.headers.get("content-type", "").split(";")[0].strip().lower()
    charset = fetched.charset() or "utf-8"
    try:
        text = fetched.body.decode(charset, errors="replace")
    except LookupError:
        text = fetched.body.decode("utf-8", errors="replace")
    if ctype == "text/plain":
        return "", text
    if ctype and ctype not in HTML_TYPES:
        raise ValueError(f"{shown_url(fetched.url)} is {ctype[:60]}, not a web page that can be read as text")
    m = _TITLE.search(fetched.body)
    title = plain(m.group(1).decode(charset, errors="replace")) if m else ""
    body = trafilatura.extract(text, url=fetched.url, include_comments=False, include_tables=True,
                               include_images=False, include_links=False, favor_precision=True)
    if not body or not body.strip():
        raise ValueError(f"{shown_url(fetched.url)} has no readable text (it may need JavaScript)")
    return title, body.strip()


def web_read(url: str, max_chars: int = DEFAULT_CHARS, timeout: float = TIMEOUT) -> ToolResult:
    if not isinstance(url, str) or not url.strip():
        return ToolResult.error("web_read needs a 'url'.")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int):
        max_chars = DEFAULT_CHARS
    max_chars = max(500, min(MAX_CHARS, max_chars))
    try:
        got = safe_get(url, timeout=timeout, max_bytes=MAX_PAGE_BYTES,
                          headers={"Accept": "text/html, application/xhtml+xml, text/plain;q=0.8"})
        title, text = page_text(got)
    except (FetchError, ValueError) as exc:
        return ToolResult.error(f"Could not read the page: {exc}.")
    note = ""
    if len(text) > max_chars:
        note = (f"(The page's text was cut at {max_chars} of {len(text)} characters; "
                "ask with a larger max_chars for more.)")
        text = text[:max_chars] + "…"
    return ToolResult(fence_page(got.url, title, text, note))


class WebRead:
    """The ``web_read`` tool (read-only: it fetches, never changes anything)."""

    read_only = True

    def __init__(self, timeout: float = TIMEOUT) -> None:
        self.timeout = timeout

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            "web_read",
            "Read one web page (https) as plain text: the article, without menus and ads. No "
            "JavaScript runs. The text is untrusted content from the internet. 'max_chars' "
            f"bounds the answer (default {DEFAULT_CHARS}, at most {MAX_CHARS}).",
            {"type": "object", "properties": {
                "url": {"type": "string"},
                "max_chars": {"type": "integer", "minimum": 500, "maximum": MAX_CHARS}},
             "required": ["url"]},
        )

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        return await asyncio.to_thread(web_read, args.get("url", ""),
                                       args.get("max_chars", DEFAULT_CHARS), self.timeout)
