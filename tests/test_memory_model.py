"""The pure memory model and BM25 ranking (no files)."""

from __future__ import annotations

import math

import pytest
from hearthside.core.memory import Bm25Index, LimitError, MemoryDocument, tokenize
from hearthside.core.memory.model import MAX_KEYS, CorruptMemoryError, secret_shape


def test_bm25_scores_match_the_formula_with_k1_1_5_and_b_0_75() -> None:
    idx = Bm25Index.build([("a", "apple apple banana"), ("b", "banana cherry cherry cherry"), ("c", "date")])
    got = dict(idx.search("apple"))
    # doc "a" tokens: a apple apple banana (key words count) -> |d| = 4; avgdl = (4 + 5 + 2) / 3
    n, df, tf, dl, avgdl = 3, 1, 2, 4, 11 / 3
    idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
    expected = idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))
    assert got == {"a": pytest.approx(expected)}


def test_tokenize_splits_key_separators_and_folds_case() -> None:
    assert tokenize("Pref/Coffee-Order_2 OAT") == ["pref", "coffee", "order", "2", "oat"]


def test_the_key_count_is_capped_at_4096_and_forgetting_frees_room() -> None:
    doc = MemoryDocument()
    for i in range(MAX_KEYS):
        doc.remember(f"k{i}", "v")
    with pytest.raises(LimitError, match="4096"):
        doc.remember("one/more", "v")
    doc.remember("k0", "updating an existing key is fine")
    doc.forget("k1")
    doc.remember("one/more", "v")
    assert doc.active_count() == MAX_KEYS


def test_the_document_round_trips_through_json_and_bad_shapes_are_corrupt() -> None:
    doc = MemoryDocument()
    doc.remember("a", "one", now=5.0)
    doc.remember("a", "two", now=6.0)
    again = MemoryDocument.from_json_obj(doc.to_json_obj())
    assert again.inspect("a") == doc.inspect("a") and again.seq == 2
    for bad in ([], {"format": 2, "seq": 0, "records": {}}, {"format": 1, "records": {}},
                {"format": 1, "seq": 1, "records": {"a": {"revisions": []}}}):
        with pytest.raises(CorruptMemoryError):
            MemoryDocument.from_json_obj(bad)


def test_versions_are_never_reused_even_after_undo() -> None:
    doc = MemoryDocument()
    seen = set()
    v = doc.remember("a", "1").current.version
    seen.add(v)
    v2 = doc.remember("a", "2").current.version
    seen.add(v2)
    v3 = doc.undo("a", v2).current.version
    assert v3 not in seen


@pytest.mark.parametrize("text,shape", [("sk-ant-api03-abcdefghijklmnopqrstuvwx", "OpenAI-style"),
                                        ("token: xoxp-1234567890-abcdef", "Slack"),
                                        ("call me at 555-1234", "")])
def test_secret_shapes_are_named(text: str, shape: str) -> None:
    assert (shape in secret_shape(text)) if shape else secret_shape(text) == ""


from hearthside.core.memory import VersionConflictError
from hypothesis import given, settings
from hypothesis import strategies as st

_ops = st.lists(st.tuples(st.sampled_from(["remember", "forget", "undo", "cas-stale"]),
                          st.sampled_from(["a", "b/c"]), st.text("xyz ", max_size=5)), max_size=120)


@settings(max_examples=60, deadline=None)
@given(_ops)
def test_random_operation_sequences_keep_the_invariants(ops: list[tuple[str, str, str]]) -> None:
    doc = MemoryDocument()
    writes = 0
    for op, key, value in ops:
        rec = doc.inspect(key)
        if op == "remember":
            doc.remember(key, value)
            writes += 1
        elif op == "forget":
            if doc.forget(key) is not None:
                writes += 1
        elif op == "undo" and rec is not None:
            doc.undo(key, rec.current.version)
            writes += 1
        elif op == "cas-stale" and rec is not None and len(rec.revisions) > 1:
            with pytest.raises(VersionConflictError):
                doc.remember(key, value, expected=rec.revisions[-2].version)
        after = doc.inspect(key)
        if after is not None:
            assert len(after.revisions) <= 64
            assert sum(r.status == "active" for r in after.revisions) <= 1
            assert after.revisions[-1] == after.current
            got = doc.recall(key)
            assert (got is not None) == (after.current.status == "active")
            if got is not None:
                assert got.value == after.current.value
    assert doc.seq == writes
    again = MemoryDocument.from_json_obj(doc.to_json_obj())
    assert again.list() == doc.list() and again.seq == doc.seq


from hearthside.core.memory import MemoryEntry
from hearthside.core.session import render_memory_index


def test_the_prompt_index_shows_at_most_200_entries_the_newest_first() -> None:
    entries = [MemoryEntry(f"k{i:03d}", "", "d", float(i)) for i in range(250)]
    block, keys = render_memory_index(entries)
    assert len(keys) == 200 and set(keys) == {f"k{i:03d}" for i in range(50, 250)}
    assert list(keys) == sorted(keys) and "(50 more not shown; find them with memory_search.)" in block
    assert len(render_memory_index(entries[:200])[1]) == 200


def test_the_prompt_index_is_at_most_8_kib() -> None:
    entries = [MemoryEntry(f"fact/n{i:03d}", "", "é" * 60, 1_700_000_000.0 + i) for i in range(200)]
    block, keys = render_memory_index(entries)
    size = len(block.encode("utf-8"))
    assert size <= 8 * 1024 < size + 200 and 0 < len(keys) < 200  # filled up to the cap, not past it
    assert block.endswith(f"({200 - len(keys)} more not shown; find them with memory_search.)")


def test_values_and_descriptions_are_limited_to_64_kib_in_bytes() -> None:
    doc = MemoryDocument()
    doc.remember("v/ascii", "x" * 65536, "d" * 65536)
    with pytest.raises(LimitError, match="value is 65537 bytes"):
        doc.remember("v/over", "x" * 65537)
    with pytest.raises(LimitError, match="value is 65538 bytes"):
        doc.remember("v/wide", "é" * 32769)  # 32,769 characters, 65,538 bytes
    with pytest.raises(LimitError, match="description is 65537 bytes"):
        doc.remember("v/desc", "ok", "d" * 65537)
    assert doc.recall("v/over") is None and doc.recall("v/wide") is None and doc.recall("v/desc") is None


def test_the_limits_are_the_contract_numbers() -> None:
    from hearthside.core import session
    from hearthside.core.memory import bm25, model

    assert (model.MAX_KEY_BYTES, model.MAX_VALUE_BYTES, model.MAX_DESCRIPTION_BYTES) == (128, 65536, 65536)
    assert (model.MAX_KEYS, model.MAX_REVISIONS, model.MAX_DOCUMENT_BYTES) == (4096, 64, 8 * 1024 * 1024)
    assert (bm25.K1, bm25.B, bm25.DEFAULT_RESULTS, bm25.MAX_RESULTS) == (1.5, 0.75, 10, 50)
    assert (session.MEMORY_INDEX_MAX_ENTRIES, session.MEMORY_INDEX_MAX_BYTES) == (200, 8192)


@pytest.mark.parametrize("key,value,description", [
    ("note", "fine", "token ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    ("sk-proj-abcdefghijklmnop1234567890", "fine", ""),
])
def test_a_credential_in_the_description_or_the_key_is_refused_too(key: str, value: str, description: str) -> None:
    from hearthside.core.memory import SecretValueError

    doc = MemoryDocument()
    with pytest.raises(SecretValueError, match="keyring"):
        doc.remember(key, value, description)
    assert doc.list() == [] and doc.seq == 0
