"""Hearthside plugin pack: file tools over one workspace folder."""

__version__ = "0.1.0"
