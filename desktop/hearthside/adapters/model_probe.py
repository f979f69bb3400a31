"""Asking a model server what it has: one bounded ``GET`` over ``httpx2``, never raising.

The welcome window's model step needs to look at a server before anything is configured
(is Ollama there, which models does it have, does this key work). This adapter does the HTTP;
:mod:`hearthside.app.model_discovery` decides what the answers mean for the user.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2


@dataclass(frozen=True)
class ProbeResponse:
    """What came back: an HTTP status and body, or ``error`` (a short reason) when nothing did."""

    status: int = 0
    body: str = ""
    error: str = ""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


async def get(url: str, api_key: str = "", timeout: float = 3.0) -> ProbeResponse:
    """``GET url`` with an optional bearer key; connection trouble becomes ``error``."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=timeout, trust_env=False, headers=headers) as client:
            r = await client.get(url)
    except httpx2.ConnectError:
        return ProbeResponse(error="nothing is answering there (connection refused or no such host)")
    except httpx2.TimeoutException:
        return ProbeResponse(error=f"no answer within {timeout:g} s")
    except httpx2.HTTPError as exc:
        return ProbeResponse(error=f"{type(exc).__name__}: {exc}")
    except ValueError as exc:  # a malformed address
        return ProbeResponse(error=f"not a usable web address ({exc})")
    return ProbeResponse(r.status_code, r.text[:200_000])
