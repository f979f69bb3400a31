"""Hole 13b of issue 9: a persona's memory filled to its cap by the model.

On the old code 128 model writes of 64 KiB filled the 8 MiB document, after which every write
*and every undo* was refused, and "forget some memories first" freed nothing (a forget adds a
tombstone and keeps the old value in history). Now history counts and old revisions are
dropped first, the model's writes stop 1 MiB below the cap, and the user can always forget
and undo. Real store, real files, real locks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hearthside.adapters.memory_store import JsonMemoryStore
from hearthside.core.memory.model import (
    MAX_DOCUMENT_BYTES,
    USER_RESERVE_BYTES,
    LimitError,
    MemoryDocument,
)

BIG = 64 * 1024


def value(i: int) -> str:
    return f"{i:05d}" + "x" * (BIG - 5)


def fill_as_model(store: JsonMemoryStore, start: int, count: int) -> tuple[int, str]:
    saved, refusal = 0, ""
    for i in range(start, start + count):
        try:
            store.remember(f"fill/n{i:03d}", value(i), "filler", writer="model")
            saved += 1
        except LimitError as exc:
            refusal = str(exc)
    return saved, refusal


def test_the_model_fills_memory_but_the_user_can_always_forget_and_undo(tmp_path: Path) -> None:
    store = JsonMemoryStore(tmp_path / "mem")
    saved, refusal = fill_as_model(store, 0, 128)
    size = (tmp_path / "mem" / "memory.json").stat().st_size
    assert 100 < saved < 128 and "Ask the user to forget" in refusal
    assert size <= MAX_DOCUMENT_BYTES - USER_RESERVE_BYTES

    # The user forgets a few: the space really comes back, for the model too (four new
    # memories and one rewrite, whose earlier value is kept for the user's undo).
    for i in range(5):
        assert store.forget(f"fill/n{i:03d}") is not None
    assert fill_as_model(store, 200, 4)[0] == 4
    store.remember("fill/n050", value(7), "rewritten", writer="model")

    # Full again: a refused write changes nothing at all ...
    before, seq = (tmp_path / "mem" / "memory.json").read_bytes(), store.seq()
    with pytest.raises(LimitError, match="Ask the user to forget"):
        store.remember("one/more", value(999), writer="model")
    assert (tmp_path / "mem" / "memory.json").read_bytes() == before and store.seq() == seq
    # ... and the user can still undo the model's rewrite (bringing 64 KiB back) ...
    rec = store.inspect("fill/n050")
    assert rec is not None
    back = store.undo("fill/n050", rec.current.version)
    assert back.exists and store.recall("fill/n050").value == value(50)  # type: ignore[union-attr]
    created = store.inspect("fill/n203")
    assert created is not None and not store.undo("fill/n203", created.current.version).exists
    # ... and forget everything, one by one.
    for entry in store.list():
        store.forget(entry.key)
    assert store.list() == []
    assert (tmp_path / "mem" / "memory.json").stat().st_size < MAX_DOCUMENT_BYTES


def test_history_counts_and_old_revisions_go_first() -> None:
    """Rewriting a few keys again and again never fills memory: old revisions make room."""
    doc = MemoryDocument()
    for n in range(130):  # 130 x 64 KiB = 8.1 MiB of values, 3 keys
        doc.remember(f"notes/k{n % 3}", value(n), writer="model")
    assert len(doc.encode()) <= MAX_DOCUMENT_BYTES - USER_RESERVE_BYTES
    rec = doc.inspect("notes/k2")  # written last at n = 128
    assert rec is not None and rec.truncated and rec.current.value == value(128)
    assert len(rec.revisions) < 60  # dropped for room, before the 64-revision cap
    assert doc.seq == 130
