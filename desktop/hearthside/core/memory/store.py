"""The seam the memory tools and the CLI talk to; adapters implement it (JSON + file lock today).

Synchronous on purpose: an operation is a short critical section under a file lock, and async
callers run it in a worker thread so a lock wait never stalls the event loop.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from .model import MemoryEntry, MemoryRecord


class MemoryStore(Protocol):
    """One persona's learned memory. Scoped per instance; safe across processes."""

    def remember(self, key: str, value: str, description: str = "", *, expected: str | None = None,
                 writer: str = "user", origin: str = "explicit", session_id: str = "") -> MemoryRecord:
        """Store a value; ``expected`` None = last write wins, a version = CAS, ABSENT = create."""
        ...

    def recall(self, key: str) -> MemoryEntry | None: ...

    def list(self, prefix: str = "") -> builtins.list[MemoryEntry]:
        """Full entries (values included) whose key starts with ``prefix``, sorted by key."""
        ...

    def forget(self, key: str, expected: str | None = None, *, writer: str = "user",
               session_id: str = "") -> MemoryRecord | None: ...

    def index(self) -> builtins.list[MemoryEntry]:
        """Every current entry as key + description + time, value omitted, sorted by key."""
        ...

    def search(self, query: str, k: int = 0) -> builtins.list[MemoryEntry]:
        """BM25 best-first, values omitted; empty query -> []; k <= 0 -> 10, at most 50."""
        ...

    def inspect(self, key: str) -> MemoryRecord | None: ...

    def undo(self, key: str, expected: str, *, writer: str = "user", session_id: str = "") -> MemoryRecord: ...
