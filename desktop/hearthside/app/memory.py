"""The learned-memory service: one JSON store per persona in the data dir (never the persona
folder)."""

from __future__ import annotations

import threading

from ..adapters.memory_store import JsonMemoryStore
from ..core.persona import validate_persona_name
from .paths import AppPaths


class MemoryService:
    """Hands out each persona's store (one handle per persona per process)."""

    def __init__(self, paths: AppPaths) -> None:
        self.paths = paths
        self._stores: dict[str, JsonMemoryStore] = {}
        self._lock = threading.Lock()

    def store(self, persona: str) -> JsonMemoryStore:
        """The store for ``persona``; raises ValueError for a name that cannot be a folder."""
        reason = validate_persona_name(persona)
        if reason:
            raise ValueError(reason)
        with self._lock:
            if persona not in self._stores:
                self._stores[persona] = JsonMemoryStore(self.paths.memory_dir(persona))
            return self._stores[persona]
