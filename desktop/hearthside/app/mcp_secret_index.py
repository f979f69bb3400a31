"""Which keyring entries Hearthside stored for user MCP servers (names only, never values).

The keyring API cannot list entries portably, so Hearthside keeps this list itself in the
state folder (``mcp-secrets.json``): every key it stored a user server's secret under
(``mcp/<server>/<kind>/<name>#<entry id>``, see :func:`~hearthside.core.mcpconfig.bound_key`).
It is what lets ``doctor`` and the MCP window find *orphaned* secrets — ones whose server entry
is gone from ``mcp.json`` — and delete them. Losing the file loses nothing but that list: a
secret is found by its server's entry id, never through the index.

Written only under ``mcp.json``'s lock (the caller's :meth:`McpConfigStore.editing`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from ..adapters.atomicfile import write_atomic
from ..core.boundedread import read_text_bounded
from .paths import ensure_dir

log = logging.getLogger(__name__)

#: A list of key names; thousands of servers' worth is far below this.
MAX_INDEX_BYTES = 1024 * 1024


class SecretIndex:
    """The keys of stored user-server secrets, plus whether legacy secrets (stored before entry
    ids existed) have been adopted by the entries present at the time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, object]:
        text, why = read_text_bounded(self.path, MAX_INDEX_BYTES)
        if text is None:
            if why:
                log.warning("%s cannot be read (%s); orphaned MCP secrets cannot be listed", self.path, why)
            return {}
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            log.warning("%s is not valid JSON; orphaned MCP secrets cannot be listed", self.path)
            return {}
        return doc if isinstance(doc, dict) else {}

    def stored_keys(self) -> list[str]:
        """Every key recorded, in the order stored."""
        keys = self._read().get("keys")
        return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []

    def legacy_adopted(self) -> bool:
        return self._read().get("legacy_adopted") is True

    def _write(self, keys: list[str], legacy_adopted: bool) -> None:
        ensure_dir(self.path.parent)
        doc = {"version": 1, "legacy_adopted": legacy_adopted, "keys": keys}
        write_atomic(self.path, json.dumps(doc, indent=2) + "\n")

    def update(self, add: Iterable[str] = (), drop: Iterable[str] = (), *,
               legacy_adopted: bool | None = None) -> None:
        """Record ``add`` and forget ``drop`` (keys only). A failure to write is logged, never
        raised: the secret itself is stored already and is found without the index."""
        doc = self._read()
        keys = self.stored_keys()
        gone = set(drop)
        new = [k for k in keys if k not in gone]
        for k in add:
            if k not in new:
                new.append(k)
        adopted = doc.get("legacy_adopted") is True if legacy_adopted is None else legacy_adopted
        if new == keys and adopted == (doc.get("legacy_adopted") is True) and self.path.exists():
            return
        try:
            self._write(new, adopted)
        except OSError as exc:
            log.warning("could not record MCP secret names in %s: %s", self.path, exc)
