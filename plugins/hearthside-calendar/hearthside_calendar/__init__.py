"""Hearthside plugin pack: the user's calendars, read-only, for personas and check-ins."""

__version__ = "0.1.0"
