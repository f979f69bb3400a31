"""JSON and TOML parsing that cannot crash a command.

Python's ``json`` and ``tomllib`` recurse once per nesting level, so a file of 100,000 ``[``
raises ``RecursionError`` — not a ``ValueError`` — and every caller that only expected a
parse error would print a traceback. Every app file Hearthside reads (settings.toml, mcp.json,
memory.json, the notification history, install records, baselines, import files) is parsed
here, so deep nesting is one more parse error with a sentence.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

NESTED_TOO_DEEPLY = "it is nested too deeply to be a Hearthside file"


class NestingError(ValueError):
    """The text nests arrays/objects/tables deeper than the parser can follow."""


def loads_json(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads``; raises ``ValueError`` (``JSONDecodeError`` or :class:`NestingError`)."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise NestingError(NESTED_TOO_DEEPLY) from None


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``; raises ``ValueError`` (``TOMLDecodeError`` or :class:`NestingError`)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise NestingError(NESTED_TOO_DEEPLY) from None
