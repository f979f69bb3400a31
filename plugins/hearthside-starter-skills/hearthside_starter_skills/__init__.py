"""Hearthside plugin pack: starter skills for everyday use."""

__version__ = "0.1.0"
