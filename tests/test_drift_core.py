"""The pure drift rules: states, trust on first use, damaged baselines, droppings, debounce."""

from __future__ import annotations

import json

import pytest
from hearthside.core.drift import (
    APPROVED,
    DRIFTED,
    MISSING,
    NEW,
    REJECTED,
    Baseline,
    Debouncer,
    Reading,
    baseline_from_json,
    baseline_to_json,
    excluded_names,
    fingerprint,
    is_editor_dropping,
    judge,
    summarize,
    unified_diff,
)
from hypothesis import given
from hypothesis import strategies as st


def approved(text: str) -> Baseline:
    return Baseline.of(Reading.of_text(text), 1000.0)


def test_first_scan_trusts_a_clean_file() -> None:
    v = judge(Reading.of_text("hello"), None, first_scan=True)
    assert (v.state, v.trust) == (APPROVED, True)


def test_first_scan_does_not_trust_a_flagged_file() -> None:
    v = judge(Reading.of_text("x", findings=("marker",)), None, first_scan=True)
    assert (v.state, v.trust) == (NEW, False)


def test_file_appearing_after_first_scan_is_new() -> None:
    v = judge(Reading.of_text("hello"), None, first_scan=False)
    assert (v.state, v.trust) == (NEW, False)


def test_same_fingerprint_is_approved_and_different_is_drifted() -> None:
    base = approved("one")
    assert judge(Reading.of_text("one"), base).state == APPROVED
    assert judge(Reading.of_text("two"), base).state == DRIFTED


def test_gone_file_is_missing_and_unusable_file_is_rejected() -> None:
    base = approved("one")
    assert judge(Reading(False, None), base).state == MISSING
    v = judge(Reading(True, None, reason="is a named pipe (FIFO)"), base)
    assert (v.state, v.reason) == (REJECTED, "is a named pipe (FIFO)")


def test_damaged_baseline_is_never_retrusted_even_on_first_scan() -> None:
    v = judge(Reading.of_text("one"), None, baseline_error="not valid JSON", first_scan=True)
    assert v.state == DRIFTED and not v.trust and "not valid JSON" in v.reason


def test_baseline_round_trips_through_json() -> None:
    b = approved("héllo\nworld")
    assert baseline_from_json(baseline_to_json("SOUL.md", b)) == b


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(content=d["content"] + "x"),
        lambda d: d.update(sha256="0" * 64),
        lambda d: d.update(version=99),
        lambda d: d.pop("size"),
        lambda d: d.update(approved_at=True),
    ],
)
def test_tampered_baseline_record_is_damaged(mutate) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(baseline_to_json("SOUL.md", approved("text")))
    mutate(doc)
    with pytest.raises(ValueError):
        baseline_from_json(json.dumps(doc))


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b"[]", b"null"])
def test_garbage_baseline_record_is_damaged(raw: bytes) -> None:
    with pytest.raises(ValueError):
        baseline_from_json(raw)


@pytest.mark.parametrize(
    "name",
    [".SOUL.md.swp", ".SOUL.md.swx", "SOUL.md~", "4913", ".tmp123", "SOUL.md.tmp",
     ".SOUL.md.abc.tmp", ".#SOUL.md", "#SOUL.md#", ".goutputstream-X1"],
)
def test_editor_droppings_are_recognised(name: str) -> None:
    assert is_editor_dropping(name)
    assert is_editor_dropping(f"/some/folder/{name}")


@pytest.mark.parametrize("name", ["SOUL.md", "USER.md", "SKILL.md", "4914", "notes.md", "tmp.md"])
def test_real_files_are_not_droppings(name: str) -> None:
    assert not is_editor_dropping(name)


def test_strict_mode_holds_back_drifted_and_new_only() -> None:
    states = [("SOUL.md", DRIFTED), ("USER.md", NEW), ("TOOLS.md", APPROVED),
              ("AGENTS.md", REJECTED), ("MEMORY.md", MISSING)]
    assert excluded_names(states, strict=True) == {"SOUL.md", "USER.md"}
    assert excluded_names(states, strict=False) == frozenset()


def test_diff_shows_changed_lines_and_is_empty_when_equal() -> None:
    d = unified_diff("a\nb\n", "a\nc", "SOUL.md")
    assert "--- approved/SOUL.md" in d and "-b\n" in d and "+c\n" in d
    assert unified_diff("same", "same", "x") == ""


def test_summary_counts_lines_and_names_the_file() -> None:
    s = summarize("SOUL.md", judge(Reading.of_text("a\nc\nd"), approved("a\nb")), "a\nb", "a\nc\nd")
    assert s == "SOUL.md changed since you approved it (+2 -1 lines)"


def test_debounce_burst_becomes_one_due_key() -> None:
    d: Debouncer[str] = Debouncer(quiet=0.1, max_wait=2.0)
    for i in range(1000):
        d.note("alice", i * 0.001)  # 1,000 notices within one second
        assert d.due(i * 0.001) == []
    assert d.next_deadline() == pytest.approx(0.999 + 0.1)
    assert d.due(1.0) == []
    assert d.due(1.1) == ["alice"]
    assert d.due(5.0) == [] and d.pending() == 0


def test_debounce_never_postpones_past_max_wait() -> None:
    d: Debouncer[str] = Debouncer(quiet=0.1, max_wait=0.5)
    t = 0.0
    fired_at = None
    while t < 2.0 and fired_at is None:
        d.note("k", t)
        t += 0.05
        if d.due(t):
            fired_at = t
    assert fired_at is not None and fired_at == pytest.approx(0.5, abs=0.051)


def test_debounce_rejects_nonsense_windows() -> None:
    with pytest.raises(ValueError):
        Debouncer(quiet=1.0, max_wait=0.5)


@given(st.text())
def test_reading_fingerprint_matches_contract_sha256(text: str) -> None:
    r = Reading.of_text(text)
    assert r.sha256 == fingerprint(text) and r.size == len(text.encode("utf-8"))


def test_the_live_watcher_does_not_import_the_drift_service() -> None:
    """Issue 10 item 5: values live in drift_types; drift_live sees the service only through
    its DriftSource protocol, so the two modules no longer import each other."""
    import ast
    from pathlib import Path

    import hearthside.app.drift_live as live

    tree = ast.parse(Path(live.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "drift" not in imported and "hearthside.app.drift" not in imported, imported
    assert "drift_types" in imported
