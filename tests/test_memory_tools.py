"""The persona's memory tools against a real JSON store: what the model sees for each call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hearthside.adapters.memory_store import JsonMemoryStore
from hearthside.core.agent import needs_approval
from hearthside.core.memory.tools import memory_tools
from hearthside.core.tools import ToolEnv, ToolResult


def tools(tmp_path: Path) -> tuple[JsonMemoryStore, dict[str, Any]]:
    store = JsonMemoryStore(tmp_path / "mem")
    return store, {t.spec.name: t for t in memory_tools(store, "s1")}


def call(tool: Any, **args: Any) -> ToolResult:
    return asyncio.run(asyncio.wait_for(tool.execute(args, ToolEnv()), 30))


def test_the_six_tools_need_no_approval_and_only_recall_search_inspect_are_read_only(tmp_path: Path) -> None:
    _, t = tools(tmp_path)
    assert sorted(t) == ["memory_forget", "memory_inspect", "memory_recall", "memory_remember",
                         "memory_search", "memory_undo"]
    assert {n for n, x in t.items() if x.read_only} == {"memory_inspect", "memory_recall", "memory_search"}
    assert not any(needs_approval(x) for x in t.values())


def test_forget_and_undo_need_the_expected_version(tmp_path: Path) -> None:
    store, t = tools(tmp_path)
    saved = json.loads(call(t["memory_remember"], key="pref/tea", value="green, no sugar").content)
    for name in ("memory_forget", "memory_undo"):
        res = call(t[name], key="pref/tea")
        assert res.is_error and "expected_version" in res.content
        stale = call(t[name], key="pref/tea", expected_version="r999")
        assert stale.is_error and "changed" in stale.content
    assert store.recall("pref/tea").value == "green, no sugar"
    gone = call(t["memory_forget"], key="pref/tea", expected_version=saved["version"])
    assert not gone.is_error and store.recall("pref/tea") is None
    tomb = json.loads(call(t["memory_inspect"], key="pref/tea").content)["version"]
    back = json.loads(call(t["memory_undo"], key="pref/tea", expected_version=tomb).content)
    assert back["exists"] and store.recall("pref/tea").value == "green, no sugar"
    assert store.inspect("pref/tea").current.writer == "model"


def test_recall_search_and_inspect_answer_the_model(tmp_path: Path) -> None:
    store, t = tools(tmp_path)
    store.remember("pref/coffee", "oat flat white", "coffee order")
    store.remember("people/sam", "Sam is Ada's sister")
    got = json.loads(call(t["memory_recall"], key="pref/coffee").content)
    assert (got["found"], got["value"]) == (True, "oat flat white")
    assert json.loads(call(t["memory_recall"], key="pref/none").content) == {"found": False, "key": "pref/none"}
    hits = json.loads(call(t["memory_search"], query="coffee", limit=5).content)
    assert hits == [{"key": "pref/coffee", "description": "coffee order"}]
    assert json.loads(call(t["memory_search"], query="").content) == []
    rec = json.loads(call(t["memory_inspect"], key="pref/coffee").content)
    assert rec["exists"] and [r["value"] for r in rec["revisions"]] == ["oat flat white"]


def test_bad_arguments_and_refusals_are_errors_for_the_model(tmp_path: Path) -> None:
    store, t = tools(tmp_path)
    cases = [
        (t["memory_remember"], {"key": "Bad Key", "value": "v"}, "not a valid memory key"),
        (t["memory_remember"], {"key": "creds", "value": "sk-proj-abcdefghijklmnopqrstuv"}, "keyring"),
        (t["memory_remember"], {"key": "big", "value": "x" * 65537}, "64 KiB"),
        (t["memory_remember"], {"value": "no key"}, "missing argument"),
        (t["memory_search"], {"query": "x", "limit": "many"}, "wrong argument"),
    ]
    for tool, args, expect in cases:
        res = call(tool, **args)
        assert res.is_error and expect in res.content, (args, res)
    assert store.list() == []
