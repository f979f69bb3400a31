"""The pack's entry point: registers the SearXNG provider."""

from __future__ import annotations

from hearthside.plugin import PackSettings, RegisterSearchProvider, hookimpl

from .provider import SearxngProvider


@hookimpl
def hearthside_search_providers(register: RegisterSearchProvider, settings: PackSettings) -> None:
    """Register the provider; it reads ``searxng.url`` at search time."""
    register(SearxngProvider(settings))
