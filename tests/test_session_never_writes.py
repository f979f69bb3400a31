"""Chats (and their kept conversations), heartbeats and memory writes never write the soul or a persona folder.

Reuses the audit-hook recorder of ``test_never_writes.py``: every write-like operation of this
process is recorded while a chat (with memory tool calls and a refused file write aimed at the
persona folder itself), heartbeats and memory CLI commands run in-process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakemodel import FakeModel
from hearthside.cli import cli
from test_never_writes import RECORDER, find_violations


def _cli(*args: str, expect: int = 0, input: str | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert res.exit_code == expect, (args, res.exit_code, res.output)
    return res.stdout


def test_chats_heartbeats_and_memory_writes_never_touch_the_soul_or_persona_folder(
        isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = isolated_home / ".config" / "hearthside"
    folder = config / "personas" / "alice"
    folder.mkdir(parents=True)
    for name, body in {"SOUL.md": "Kind.", "USER.md": "Ada.", "HEARTBEAT.md": "- remind me about the 3pm sync\n",
                       "MEMORY.md": "Ada likes tea."}.items():
        (folder / name).write_text(body)
    (config / "soul.md").write_text("I like short answers.\n")
    before = {p: p.read_bytes() for p in [*folder.iterdir(), config / "soul.md"]}
    remember = json.dumps({"key": "pref/tea", "value": "Ada likes green tea", "description": "tea"})
    write = json.dumps({"path": "SOUL.md", "content": "rewritten by the model"})
    script = [
        {"tool_calls": [("memory_remember", remember), ("Write", write)]}, {"text": "Noted."},
        {"text": "Your 3pm sync is soon."}, {"text": "HEARTBEAT_OK"}, {"text": "And coffee too."},
    ]
    with FakeModel(script) as fm:
        for k, v in fm.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("HEARTHSIDE_MODEL_API_KEY", "loopback")
        RECORDER.ops.clear()
        RECORDER.active = True
        RECORDER.step = "running personas"
        try:
            _cli("soul", "status")  # baselines: trust on first use
            from hearthside.app.context import AppContext
            AppContext().settings.set("files.workspace", str(folder))  # the worst place for a workspace
            out = _cli("chat", "alice", "remember that I like green tea")
            assert "Noted." in out
            assert json.loads(_cli("heartbeat", "run", "alice", "--json"))["status"] == "notified"
            assert json.loads(_cli("heartbeat", "run", "alice", "--json"))["status"] == "silent"
            inspected = json.loads(_cli("memory", "inspect", "pref/tea", "--persona", "alice", "--json"))
            ver = inspected["current"]["version"]
            tomb = json.loads(_cli("memory", "forget", "pref/tea", "--persona", "alice", "--version", ver, "--json"))
            _cli("memory", "undo", "pref/tea", "--persona", "alice", "--version", tomb["current"]["version"])
            _cli("memory", "remember", "note/x", "by the user", "--persona", "alice")
            # the kept conversation: continued, renamed, exported outside, deleted
            assert "And coffee too." in _cli("chat", "alice", "--continue", "and coffee?")
            [row] = json.loads(_cli("chats", "list", "alice", "--json"))
            AppContext().conversations.rename(row["id"], "Tea and coffee")
            _cli("chats", "export", row["id"], str(isolated_home / "tea.md"))
            _cli("chats", "delete", row["id"])
        finally:
            RECORDER.active = False
    ops = list(RECORDER.ops)
    memory_dir = os.path.realpath(isolated_home / ".local" / "share" / "hearthside" / "memory" / "alice")
    assert any(op.path.startswith(memory_dir) for op in ops), "memory writes were not seen: recorder broken?"
    assert any(op.path.endswith("notifications.jsonl") for op in ops)
    conversations = os.path.realpath(isolated_home / ".local" / "share" / "hearthside" / "conversations")
    assert any(op.path.startswith(conversations + "/alice/") for op in ops), "conversation writes not seen"
    assert find_violations(ops, config, [folder], {}) == []
    assert {p: p.read_bytes() for p in before} == before
    tool_msgs = [m["content"] for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    assert "Refused:" in tool_msgs[1]  # the write guard refuses, and says why
