"""Hearthside plugin pack: RSS and Atom feeds a persona follows (read-only tools)."""

__version__ = "0.1.0"
