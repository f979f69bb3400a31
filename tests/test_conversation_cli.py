"""``hearthside chat --continue`` / ``--conversation`` and ``hearthside chats list|search|export|delete``,
as real ``hearthside`` processes against the loopback fake model."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, said


def ok(run_cli: Any, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = run_cli(*args, input=input)
    assert proc.returncode == 0, (args, proc.stderr)
    return proc


def fails(run_cli: Any, *args: str) -> str:
    proc = run_cli(*args)
    assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hearthside: "), proc.stderr
    return lines[0]


@pytest.fixture
def fm(run_cli):  # type: ignore[no-untyped-def]
    with FakeModel([{"text": "Miso is a lovely name."}, {"text": "Your cat is Miso."}, {"text": "Hi."}],
                   model_ids=("tiny",)) as model:
        ok(run_cli, "persona", "new", "juniper")
        ok(run_cli, "model", "use", model.base_url, "tiny")
        yield model


def test_chat_then_continue_sends_the_earlier_messages_to_the_model(run_cli, fm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = ok(run_cli, "chat", "juniper", "My cat is called Miso")
    assert first.stdout.strip() == "Miso is a lovely name."
    [row] = json.loads(ok(run_cli, "chats", "list", "juniper", "--json").stdout)
    assert row["title"] == "My cat is called Miso" and row["messages"] == 2 and row["read_only"] is False

    again = ok(run_cli, "chat", "juniper", "--continue", "What is my cat called?")
    assert again.stdout.strip() == "Your cat is Miso."
    assert f"Continuing conversation {row['id']}" in again.stderr
    sent = fm.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "My cat is called Miso" and sent[2]["content"] == "Miso is a lovely name."
    assert said(sent[3]["content"]) == "What is my cat called?"

    # an interactive chat (stdin, /exit) continued by id goes on in the same file
    ok(run_cli, "chat", "juniper", "--conversation", row["id"], input="hello\n/exit\n")
    assert [m["role"] for m in fm.requests[2]["messages"]] == ["system", "user", "assistant", "user", "assistant",
                                                               "user"]
    [row2] = json.loads(ok(run_cli, "chats", "list", "juniper", "--json").stdout)
    assert row2["id"] == row["id"] and row2["messages"] == 6

    hits = json.loads(ok(run_cli, "chats", "search", "juniper", "miso", "--json").stdout)
    assert [h["id"] for h in hits] == [row["id"]] and "Miso" in hits[0]["snippet"]

    out = tmp_path / "chat.md"
    said_ok = ok(run_cli, "chats", "export", row["id"], str(out))
    assert str(out) in said_ok.stdout
    md = out.read_text()
    assert md.startswith("# My cat is called Miso") and md.index("My cat is called Miso") < md.index("Your cat is Miso")
    assert "exists already" in fails(run_cli, "chats", "export", row["id"], str(out))
    assert out.read_text() == md
    ok(run_cli, "chats", "export", row["id"], str(out), "--force")

    listed = ok(run_cli, "chats", "list", "juniper").stdout
    assert row["id"] in listed and "6 messages" in listed and "My cat is called Miso" in listed
    deleted = ok(run_cli, "chats", "delete", row["id"])
    assert "Deleted conversation" in deleted.stdout
    assert json.loads(ok(run_cli, "chats", "list", "juniper", "--json").stdout) == []
    assert not list(Path.home().rglob(f"{row['id']}*.jsonl"))  # not even in the trash: the CLI has no undo


def test_wrong_ids_personas_and_flags_are_one_sentence_errors(run_cli, fm) -> None:  # type: ignore[no-untyped-def]
    assert "no conversation to continue" in fails(run_cli, "chat", "juniper", "--continue", "hi")
    assert "is not a conversation id" in fails(run_cli, "chat", "juniper", "--conversation", "../../x", "hi")
    assert "There is no conversation 20260101-000000-00000000" in fails(
        run_cli, "chat", "juniper", "--conversation", "20260101-000000-00000000", "hi")
    assert "There is no conversation" in fails(run_cli, "chats", "export", "20260101-000000-00000000", "x.md")
    assert "There is no conversation" in fails(run_cli, "chats", "delete", "20260101-000000-00000000")
    assert "There is no persona named '../etc'" in fails(run_cli, "chats", "list", "../etc")
    assert "nobody" in fails(run_cli, "chats", "list", "nobody")
    both = run_cli("chat", "juniper", "--continue", "--conversation", "20260101-000000-00000000", "hi")
    assert both.returncode == 2 and "not both" in both.stderr
    assert fm.requests == []


def test_a_removed_persona_keeps_its_conversations_and_they_can_be_deleted(run_cli, fm) -> None:  # type: ignore[no-untyped-def]
    ok(run_cli, "chat", "juniper", "remember the cat")
    cid = json.loads(ok(run_cli, "chats", "list", "juniper", "--json").stdout)[0]["id"]
    shutil.rmtree(Path.home() / ".config" / "hearthside" / "personas" / "juniper")  # removed by hand
    listed = ok(run_cli, "chats", "list", "juniper")
    assert cid in listed.stdout and "no persona 'juniper' any more" in listed.stderr
    ok(run_cli, "chats", "delete", cid)
    assert "juniper" in fails(run_cli, "chats", "list", "juniper")
