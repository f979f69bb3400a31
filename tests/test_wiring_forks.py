"""Writing specialists end to end: a real ``hearthside chat`` (the model a fake server on
loopback, each agent its own script), a specialist with ``permissionMode: acceptEdits`` whose
``Write`` (the files pack) lands in a fork, the persona told that a fork waits, and the
``forks`` commands that list, show and apply it — or refuse it on a conflict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakemodel import FakeModel, by_system
from personas import make_persona, use_workspace

PERSONA = "Be brief."  # juniper's AGENTS.md: in the persona's prompt, never in a specialist's


def writer(folder: Path, name: str = "scribe") -> None:
    (folder / "agents").mkdir(exist_ok=True)
    (folder / "agents" / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: Writes files.\npermissionMode: acceptEdits\n---\n"
        f"{name.upper()}-MARK\n", encoding="utf-8")


def call(tool: str, **args: Any) -> tuple[str, str]:
    return (tool, json.dumps(args))


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def marked(fm: FakeModel, marker: str) -> list[dict[str, Any]]:
    return [r for r in fm.requests if marker in r["messages"][0]["content"]]


def pending(run_cli: Any) -> list[dict[str, Any]]:
    proc = run_cli("forks", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def writer_and_workspace(app_context: Any, tmp_path: Path) -> Path:
    """Juniper with the writing specialist, and a workspace holding notes.md (returned)."""
    writer(make_persona(app_context))
    ws = use_workspace(app_context, tmp_path / "ws")
    (ws / "notes.md").write_text("one\ntwo\n", encoding="utf-8")
    return ws


def chat(run_cli: Any, fm: FakeModel, text: str) -> Any:
    proc = run_cli("chat", "juniper", "--accept-edits", text, env=fm.env())
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_writing_specialists_write_lands_in_a_fork_that_the_user_reviews_and_applies(  # type: ignore[no-untyped-def]
        app_context, run_cli, tmp_path) -> None:
    ws = writer_and_workspace(app_context, tmp_path)
    script = by_system({
        "SCRIBE-MARK": [{"tool_calls": [call("Write", path="plan.md", content="the plan\n")]},
                        {"tool_calls": [call("Read", path="notes.md")]},
                        {"tool_calls": [call("Write", path="notes.md", content="one\nTWO\n")]},
                        {"text": "Wrote the plan and fixed the notes."}],
        PERSONA: [{"tool_calls": [call("Subagent", agent="scribe", task="write the plan")]}, {"text": "done"}]})
    with FakeModel(default=script) as fm:
        proc = chat(run_cli, fm, "plan it")
    assert "[scribe/Write: ok]" in proc.stderr
    # the workspace is untouched while the fork waits
    assert not (ws / "plan.md").exists() and (ws / "notes.md").read_text() == "one\ntwo\n"
    assert tool_messages(marked(fm, "SCRIBE-MARK")[-1]) == [
        "Created plan.md (9 bytes).", "notes.md (version c3f9c8c283a2b1f2; lines 1-2 of 2)\n     1\tone\n     2\ttwo",
        "Replaced notes.md (8 bytes)."]
    forks_dir = app_context.paths.state_dir / "forks"
    [rec] = pending(run_cli)
    fid = rec["id"]
    told = tool_messages(marked(fm, PERSONA)[-1])[0]
    assert told.startswith("Wrote the plan and fixed the notes.")
    assert (f"The specialist's changes wait for the user's review as fork {fid} (1 added, 1 changed, 0 removed)"
            in told)
    assert rec["persona"] == "juniper" and rec["status"] == "ready" and rec["label"] == "write the plan"
    shown = run_cli("forks", "show", fid)
    assert shown.returncode == 0, shown.stderr
    assert "+the plan" in shown.stdout and "-two" in shown.stdout and "+TWO" in shown.stdout
    applied = run_cli("forks", "apply", fid)
    assert applied.returncode == 0, applied.stderr
    assert (ws / "plan.md").read_text() == "the plan\n" and (ws / "notes.md").read_text() == "one\nTWO\n"
    assert pending(run_cli) == [] and not (forks_dir / fid).exists()


def test_a_workspace_file_changed_meanwhile_refuses_the_apply_and_keeps_the_fork(  # type: ignore[no-untyped-def]
        app_context, run_cli, tmp_path) -> None:
    ws = writer_and_workspace(app_context, tmp_path)
    script = by_system({
        "SCRIBE-MARK": [{"tool_calls": [call("Read", path="notes.md")]},
                        {"tool_calls": [call("Write", path="notes.md", content="the specialist's\n")]},
                        {"text": "Rewrote the notes."}],
        PERSONA: [{"tool_calls": [call("Subagent", agent="scribe", task="rewrite the notes")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        chat(run_cli, fm, "rewrite")
    [rec] = pending(run_cli)
    (ws / "notes.md").write_text("the user's own edit, longer\n", encoding="utf-8")
    refused = run_cli("forks", "apply", rec["id"])
    assert refused.returncode == 1
    assert "notes.md" in refused.stderr and "the fork is kept" in refused.stderr
    assert (ws / "notes.md").read_text() == "the user's own edit, longer\n"
    assert [r["id"] for r in pending(run_cli)] == [rec["id"]]


def test_the_write_guard_inside_a_fork_refuses_a_persona_file_exactly_as_outside(  # type: ignore[no-untyped-def]
        app_context, run_cli) -> None:
    folder = make_persona(app_context)
    writer(folder)
    soul_before = (folder / "SOUL.md").read_bytes() if (folder / "SOUL.md").exists() else None
    app_context.settings.set("files.workspace", str(folder))  # the persona's own folder as the workspace
    script = by_system({
        "SCRIBE-MARK": [{"tool_calls": [call("Write", path="SOUL.md", content="I obey the specialist.\n")]},
                        {"text": "Could not."}],
        PERSONA: [{"tool_calls": [call("Write", path="SOUL.md", content="I obey.\n")]},
                  {"tool_calls": [call("Subagent", agent="scribe", task="change the soul")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        chat(run_cli, fm, "change yourself")
    [own] = tool_messages(marked(fm, PERSONA)[1])
    scribe = tool_messages(marked(fm, "SCRIBE-MARK")[-1])[0]
    assert own.startswith("Error: Refused") and scribe.startswith("Error: Refused"), (own, scribe)
    # the same sentence: the fork's file is judged as the persona file it is a copy of
    assert scribe.replace(" (in the fork: SOUL.md)", "") == own
    assert ((folder / "SOUL.md").read_bytes() if (folder / "SOUL.md").exists() else None) == soul_before
    # nothing changed in the fork: it was dropped, its record closed (not "working" for a week)
    assert pending(run_cli) == [] and not any((app_context.paths.state_dir / "forks").glob("*/tree"))
