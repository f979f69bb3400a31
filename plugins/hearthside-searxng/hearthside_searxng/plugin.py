"""The pack's entry point: registers the SearXNG provider."""

from __future__ import annotations

from typing import Any

from hearthside import hookimpl

from .provider import SearxngProvider


@hookimpl
def hearthside_search_providers(register: Any, settings: Any) -> None:
    """Register the provider; it reads ``searxng.url`` at search time."""
    register(SearxngProvider(settings))
