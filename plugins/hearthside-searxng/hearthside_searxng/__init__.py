"""Hearthside plugin pack: a SearXNG web-search provider."""

__version__ = "0.1.0"
