"""Hearthside: a desktop tray app for personal AI personas kept as folders of Markdown files.

The names exported here are the stable Python API (contracts sections 1, 2 and 10).
Importing this package stays light: no Qt, no network libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.compose import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul
from .core.persona import Persona, from_dir
from .core.soul import DEFAULT_MAX_BYTES, SoulResult, SoulStore, validate_body

__version__ = "0.1.0"

__all__ = [
    "BOOTSTRAP_ORDER",
    "DEFAULT_MAX_BYTES",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "Persona",
    "SoulResult",
    "SoulStore",
    "__version__",
    "compose_soul",
    "from_dir",
    "hookimpl",
    "validate_body",
]

if TYPE_CHECKING:  # pragma: no cover
    from .pluginhost.specs import hookimpl


def __getattr__(name: str) -> Any:
    # pluggy is loaded only when a pack asks for the marker, keeping `hearthside --version` fast.
    if name == "hookimpl":
        from .pluginhost.specs import hookimpl

        return hookimpl
    raise AttributeError(name)
