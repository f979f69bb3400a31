"""Hearthside plugin pack (opt-in): the Bash tool, a shell inside the sandbox."""

__version__ = "0.1.0"
