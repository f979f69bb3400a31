"""A fork's shell: a writing specialist's ``Bash`` runs in its fork, inside the sandbox, where
the fork's own copy is the one writable place of Hearthside's state folder.

Real bubblewrap, real commands, a real session (the model a fake server on loopback, the
user's answer an approver that allows every call, as a person pressing *Allow* would)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, by_system
from hearthside.adapters.sandbox import probe
from hearthside.core.agent import AllowAll
from hearthside.core.environment import ErrNoShell
from hearthside.core.sandbox import SandboxPolicy, bus_endpoints, bwrap_argv, granted, writable_roots
from hearthside.core.tools import PermissionMode
from personas import make_persona, use_model

PERSONA = "Be brief."
needs_bwrap = pytest.mark.skipif(not probe().ok, reason=f"bubblewrap cannot run here: {probe().reason}")


def stamp(p: Path) -> tuple[bytes, int] | None:
    return (p.read_bytes(), p.stat().st_mtime_ns) if p.exists() else None


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


@pytest.fixture
def forked_shell(app_context, tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    (folder / "agents").mkdir()
    (folder / "agents" / "builder.md").write_text(
        "---\nname: builder\ndescription: Builds things.\npermissionMode: acceptEdits\n---\nBUILDER-MARK\n")
    ws = tmp_path / "work"
    ws.mkdir()
    (ws / "readme.md").write_text("hello\n")
    app_context.settings.set("files.workspace", str(ws))
    app_context.plugins.enable("shell")
    return app_context, folder, ws


@needs_bwrap
def test_a_forked_specialists_bash_writes_its_fork_and_nothing_protected(  # type: ignore[no-untyped-def]
        forked_shell, monkeypatch) -> None:
    app, persona, ws = forked_shell
    other_ws = ws.parent / "other"
    other_ws.mkdir()
    (other_ws / "theirs.md").write_text("theirs\n")
    other = app.forks.create("juniper", "someone else's fork", workspace=str(other_ws))
    other_tree = Path(app.forks.root_of(other))
    forks_dir = app.paths.state_dir / "forks"
    watched = [persona / "SOUL.md", persona / "AGENTS.md", app.paths.settings_file, other_tree / "theirs.md",
               forks_dir / f"{app.forks.fork_id(other)}.json"]
    before = {p: stamp(p) for p in watched}
    attacks = [persona / "SOUL.md", persona / "new.md", app.paths.settings_file, other_tree / "theirs.md",
               forks_dir / "planted.txt", app.paths.state_dir / "planted.txt"]
    command = "echo x > notes.txt && pwd; " + "; ".join(f"echo x > '{p}'; echo rc=$?" for p in attacks)
    script = by_system({
        "BUILDER-MARK": [{"tool_calls": [("Bash", json.dumps({"command": command}))]}, {"text": "built"}],
        PERSONA: [{"tool_calls": [("Subagent", json.dumps({"agent": "builder", "task": "build"}))]},
                  {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        prepared = app.sessions.prepare("juniper", PermissionMode.DEFAULT)
        assert "Bash" in [t.spec.name for t in prepared.snapshot.tools]
        agent = app.sessions.agent(prepared, app.sessions.model(), AllowAll())
        asyncio.run(agent.send("build it"))
    [out] = tool_messages([r for r in fm.requests if "BUILDER-MARK" in r["messages"][0]["content"]][-1])
    [rec] = [r for r in app.forks.pending() if r.label == "build"]
    tree = forks_dir / rec.id / "tree"
    assert out.startswith("exit code 0") and str(tree) in out  # it ran in the fork's copy
    assert out.count("rc=2") == len(attacks) and "rc=0" not in out, out  # dash: a failed redirection
    assert out.count("Read-only file system") == len(attacks)  # refused by the OS, every one
    assert (tree / "notes.txt").read_text() == "x\n" and not (ws / "notes.txt").exists()
    assert {p: stamp(p) for p in watched} == before
    assert not (persona / "new.md").exists() and not (forks_dir / "planted.txt").exists()
    assert not (app.paths.state_dir / "planted.txt").exists()
    assert app.forks.apply(rec.id) == ("notes.txt",)
    assert (ws / "notes.txt").read_text() == "x\n"


@needs_bwrap
def test_a_shell_bound_to_a_fork_folder_the_registry_does_not_know_has_no_writable_copy(  # type: ignore[no-untyped-def]
        forked_shell) -> None:
    from hearthside.app.shell import fork_runner

    app, _persona, ws = forked_shell
    fork = app.forks.create("juniper", "soon gone", workspace=str(ws))
    tree = Path(app.forks.root_of(fork))
    runner = fork_runner(app, tree)
    assert asyncio.run(runner.run("echo x > a.txt && cat a.txt")).stdout == "x\n"
    fake = app.paths.state_dir / "forks" / "0123456789ab" / "tree"  # no record: not a fork
    fake.mkdir(parents=True)
    with pytest.raises(ErrNoShell, match="one Hearthside protects"):
        asyncio.run(fork_runner(app, fake).run("echo x > a.txt"))
    app.forks.discard(app.forks.fork_id(fork))
    tree.mkdir(parents=True)  # even a folder put back where the discarded fork was
    with pytest.raises(ErrNoShell, match="one Hearthside protects"):
        asyncio.run(runner.run("echo x > a.txt"))


def test_a_grant_is_only_a_place_strictly_inside_a_protected_one_holding_none(tmp_path: Path) -> None:
    state, persona = tmp_path / "state", tmp_path / "config" / "personas" / "juniper"
    tree = state / "forks" / "abc" / "tree"
    for p in (tree, persona):
        p.mkdir(parents=True)
    protected = (str(state), str(persona), str(tmp_path / "config"))
    assert granted([str(tree)], protected) == (str(tree),)
    # the whole state folder, a folder around the config, a place outside every protected one
    assert granted([str(state), str(tmp_path), str(tmp_path / "elsewhere")], protected) == ()
    link = tmp_path / "link"
    link.symlink_to(state)
    assert granted([str(link)], protected) == ()  # a link to the state folder is the state folder
    assert writable_roots([str(tree)], protected) == ()
    assert writable_roots([str(tree)], protected, [str(tree)]) == (str(tree),)
    policy = SandboxPolicy(protected=protected, writable=(str(tree),), grants=(str(tree),), cwd=str(tree))
    argv = bwrap_argv("bwrap", ["true"], policy, bus_endpoints(""), None)
    state_ro = argv.index(str(state)) - 1
    assert argv[state_ro] == "--ro-bind-try"
    binds = [i for i, a in enumerate(argv) if a == "--bind"]
    assert [argv[i + 1] for i in binds] == [str(tree)] and binds[0] > state_ro
    assert os.fspath(persona) in argv and argv[argv.index(str(persona)) - 1] != "--bind"
