"""A bounded GET of a small JSON document from someone else's server (the MCP Registry).

Reads at most ``limit`` bytes (an answer larger than that is refused while it streams, so a
10 MB page costs no more than ``limit``), follows no redirect, ignores proxy variables and cookies,
and turns every transport failure into :class:`FetchError` with a short reason.
"""

from __future__ import annotations

import httpx2


class FetchError(Exception):
    """The server could not be reached (``status`` 0) or answered ``status`` != 200."""

    def __init__(self, reason: str, status: int = 0) -> None:
        super().__init__(reason)
        self.status = status


class TooLarge(FetchError):
    """The answer is larger than the limit."""


def get_bounded(url: str, limit: int, timeout: float) -> bytes:
    """The body of a 200 answer to ``GET url`` (``Accept: application/json``), at most ``limit`` bytes."""
    try:
        with httpx2.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client, \
                client.stream("GET", url, headers={"Accept": "application/json"}) as resp:
            if resp.status_code != 200:
                raise FetchError(f"HTTP {resp.status_code}", resp.status_code)
            body = bytearray()
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > limit:
                    raise TooLarge(f"more than {limit} bytes")
            return bytes(body)
    except httpx2.HTTPError as exc:
        raise FetchError(type(exc).__name__) from None
