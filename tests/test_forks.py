"""Forks end to end: real folders, real copies, real diffs, the CLI, the write guard, two processes.

Each test forks a real workspace folder through the app's ForkService (the one the Subagent
tool uses), changes the fork as a specialist would, and reviews, applies or discards it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from drift_helpers import make_persona
from hearthside.adapters.forker import DirectoryForker, ForkRefused, copy_tree, measure
from hearthside.adapters.workspace_dir import DirectoryWorkspace
from hearthside.app.context import AppContext
from hearthside.app.forks import ForkError, ForkService
from hearthside.core.environment import EnvironmentRef, new_environment
from hearthside.core.errors import ErrorKind


def workspace(home: Path, files: dict[str, bytes] | None = None) -> Path:
    root = home / "work"
    root.mkdir(exist_ok=True)
    for name, data in (files or {"notes.md": b"one\ntwo\n", "old.txt": b"bye\n", "sub/keep.md": b"k\n"}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def app_with(root: Path) -> AppContext:
    app = AppContext()
    app.settings.set("files.workspace", str(root))
    return app


def edit_like_a_specialist(fork_root: Path) -> None:
    (fork_root / "notes.md").write_bytes(b"one\nTWO!\n")
    (fork_root / "old.txt").unlink()
    (fork_root / "new").mkdir()
    (fork_root / "new" / "plan.md").write_bytes(b"a plan\n")
    (fork_root / "pic.bin").write_bytes(b"\x89PNG\x00\x01")


def edited_fork(app: AppContext) -> tuple[str, Path]:
    """A fork of the workspace, changed as a specialist would and finished: its id and folder."""
    fork = app.forks.create("alice", "tidy")
    fid = app.forks.fork_id(fork)
    child = Path(app.forks.root_of(fork))
    edit_like_a_specialist(child)
    app.forks.finished(fid, "done")
    return fid, child


def contents(root: Path) -> dict[Path, bytes]:
    """Every file under ``root`` and its bytes (to show that nothing was written)."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_fork_is_a_private_copy_outside_every_persona_folder(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    fork = app.forks.create("alice", "tidy the notes")
    child = Path(app.forks.root_of(fork))
    assert child.is_relative_to(app.paths.state_dir) and not child.is_relative_to(app.paths.personas_dir)
    assert (child.stat().st_mode & 0o777) == 0o700 and (child.parent.stat().st_mode & 0o777) == 0o700
    assert (child / "sub" / "keep.md").read_bytes() == b"k\n"
    # untouched files keep the parent's version, so an untouched fork has no diff
    assert dict(DirectoryWorkspace(child).versions()) == dict(DirectoryWorkspace(root).versions()) == dict(fork.base)
    (child / "notes.md").write_bytes(b"changed in the fork\n")
    assert (root / "notes.md").read_bytes() == b"one\ntwo\n"  # the parent is untouched
    rec = json.loads((app.paths.state_dir / "forks" / f"{app.forks.fork_id(fork)}.json").read_text())
    assert rec["persona"] == "alice" and rec["label"] == "tidy the notes" and rec["status"] == "working"
    assert rec["base"]["notes.md"] == fork.base["notes.md"].token


def test_links_and_special_files_are_never_followed_nor_copied(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    secret = isolated_home / "secret.txt"
    secret.write_text("private")
    (root / "link.txt").symlink_to(secret)
    (root / "linkdir").symlink_to(isolated_home)
    os.mkfifo(root / "pipe")
    app = app_with(root)
    fork = app.forks.create("alice", "x")
    child = Path(app.forks.root_of(fork))
    assert not os.path.lexists(child / "link.txt") and not os.path.lexists(child / "linkdir")
    assert not os.path.lexists(child / "pipe")
    assert "link.txt" in fork.advisory and "pipe" in fork.advisory and "never copied" in fork.advisory


def test_review_shows_added_changed_removed_and_each_files_diff(isolated_home: Path, run_cli: Any) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    fork = app.forks.create("alice", "tidy the notes")
    fid = app.forks.fork_id(fork)
    edit_like_a_specialist(Path(app.forks.root_of(fork)))
    rec = app.forks.finished(fid, "Tidied the notes and wrote a plan.")
    assert rec.status == "ready" and [r.id for r in app.forks.pending()] == [fid]
    review = app.forks.show(fid)
    assert review.diff.added == ("new/plan.md", "pic.bin")
    assert review.diff.changed == ("notes.md",) and review.diff.removed == ("old.txt",)
    by = {f.name: f for f in review.files}
    assert "-two\n+TWO!\n" in by["notes.md"].text and "--- a/notes.md" in by["notes.md"].text
    assert by["pic.bin"].binary and by["pic.bin"].text == ""
    assert "-bye" in by["old.txt"].text and by["old.txt"].change == "removed"

    listed = run_cli("forks", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert [(d["id"], d["status"], d["persona"]) for d in doc] == [(fid, "ready", "alice")]
    shown = run_cli("forks", "show", fid)
    assert shown.returncode == 0, shown.stderr
    assert "2 added, 1 changed, 1 removed" in shown.stdout and "+TWO" in shown.stdout
    assert "added: pic.bin (binary file)" in shown.stdout


def test_apply_brings_the_changes_back_and_cleans_the_fork_up(isolated_home: Path, run_cli: Any) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    fid, child = edited_fork(app)
    out = run_cli("forks", "apply", fid)
    assert out.returncode == 0, out.stderr
    assert "Applied fork" in out.stdout and "notes.md" in out.stdout
    assert (root / "notes.md").read_bytes() == b"one\nTWO!\n"
    assert (root / "new" / "plan.md").read_bytes() == b"a plan\n"
    assert not (root / "old.txt").exists() and (root / "sub" / "keep.md").exists()
    assert not child.exists()  # cleaned up after apply
    again = run_cli("forks", "apply", fid)
    assert again.returncode == 1 and "already applied" in again.stderr
    assert run_cli("forks", "list", "--json").stdout.strip() == "[]"


def test_discard_throws_the_changes_away_and_touches_nothing(isolated_home: Path, run_cli: Any) -> None:
    root = workspace(isolated_home)
    before = contents(root)
    app = app_with(root)
    fid, child = edited_fork(app)
    out = run_cli("forks", "discard", fid)
    assert out.returncode == 0 and "Discarded" in out.stdout
    assert not child.exists()
    assert contents(root) == before
    gone = run_cli("forks", "show", fid)
    assert gone.returncode == 1 and "already discarded" in gone.stderr


def test_a_fork_that_changed_nothing_is_discarded_when_it_finishes(isolated_home: Path) -> None:
    app = app_with(workspace(isolated_home))
    fork = app.forks.create("alice", "look only")
    rec = app.forks.finished(app.forks.fork_id(fork), "nothing to do")
    assert rec.status == "discarded" and not Path(app.forks.root_of(fork)).exists()
    assert app.forks.summary_for_model(rec) == "The specialist changed no files."


def test_a_conflict_applies_nothing_keeps_the_fork_and_names_the_files(isolated_home: Path, run_cli: Any) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    fid, child = edited_fork(app)
    time.sleep(0.01)
    (root / "notes.md").write_bytes(b"the user edited this meanwhile\n")  # the parent changed
    (root / "pic.bin").write_bytes(b"the user made this too\n")
    before = contents(root)
    out = run_cli("forks", "apply", fid)
    assert out.returncode == 1
    assert "notes.md, pic.bin" in out.stderr and "kept" in out.stderr
    assert contents(root) == before  # nothing written
    assert child.is_dir() and app.forks.show(fid).record.status == "ready"  # the fork is still there


def test_unknown_and_malformed_ids_are_one_sentence(isolated_home: Path, run_cli: Any) -> None:
    for cmd in ("show", "apply", "discard"):
        for bad in ("0123456789ab", "../../etc", ""):
            out = run_cli("forks", cmd, bad)
            assert out.returncode == 1, (cmd, bad)
            assert "There is no fork" in out.stderr and "Traceback" not in out.stderr


def test_a_too_big_workspace_is_refused_with_the_figure(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    with open(root / "huge.img", "wb") as fh:  # sparse: 5.1 GiB of size, no blocks
        fh.truncate(int(5.1 * (1 << 30)))
    app = app_with(root)
    with pytest.raises(ForkError) as err:
        app.forks.create("alice", "x")
    assert str(err.value) == "This workspace is 5.1 GB; forks are limited to 1.0 GB."
    assert err.value.kind == ErrorKind.INVALID
    assert not (app.paths.state_dir / "forks").exists() or not any((app.paths.state_dir / "forks").iterdir())
    app.settings.set("forks.max_files", 3)
    (root / "huge.img").unlink()
    (root / "more.md").write_text("x")
    with pytest.raises(ForkError, match=r"^This workspace has 4 files; forks are limited to 3\.$"):
        app.forks.create("alice", "x")


def test_the_write_guard_inside_a_fork_is_the_guard_outside(isolated_home: Path) -> None:
    """The user's workspace is a persona folder (the OpenClaw layout): in the fork, SOUL.md is
    refused exactly as in the folder, notes are allowed, and a persona path stays refused."""
    persona = make_persona(isolated_home, "alice")
    (persona / "notes.md").write_text("n\n")
    app = app_with(persona)
    from hearthside.app.writeguard import build_write_guard

    guard = build_write_guard(app.paths, app.personas, app.soul_path())
    fork = app.forks.create("alice", "x")
    child = Path(app.forks.root_of(fork))
    fguard = app.forks.guard_for(fork, guard)
    assert guard.refusal(persona / "SOUL.md") and fguard.refusal(child / "SOUL.md")
    assert "SOUL.md" in fguard.refusal(child / "SOUL.md") and "alice" in fguard.refusal(child / "SOUL.md")
    other = make_persona(isolated_home, "bob")
    guard = build_write_guard(app.paths, app.personas, app.soul_path())
    fguard = app.forks.guard_for(fork, guard)
    assert fguard.refusal(other / "SOUL.md")  # a persona path from a fork: refused as outside
    assert fguard.refusal(app.paths.settings_file)
    assert fguard.refusal(child)  # the fork's folder itself
    (child / "out").symlink_to(other)
    assert fguard.refusal(child / "out" / "IDENTITY.md")  # a link out of the fork: where it leads

    ws = isolated_home / "plain"
    ws.mkdir()
    app.settings.set("files.workspace", str(ws))
    plain = app.forks.create("alice", "y")
    pchild = Path(app.forks.root_of(plain))
    pguard = app.forks.guard_for(plain, build_write_guard(app.paths, app.personas, app.soul_path()))
    assert pguard.refusal(pchild / "notes.md") == ""  # an ordinary file in the fork is allowed
    assert pguard.refusal(app.paths.state_dir / "forks" / "x.json")  # the state dir still is not


def test_a_fork_that_changed_a_persona_file_cannot_be_applied(isolated_home: Path, run_cli: Any) -> None:
    persona = make_persona(isolated_home, "alice")
    soul_before = (persona / "SOUL.md").read_bytes()
    app = app_with(persona)
    fork = app.forks.create("alice", "x")
    fid = app.forks.fork_id(fork)
    child = Path(app.forks.root_of(fork))
    (child / "SOUL.md").write_text("# rewritten by a specialist\n")  # bypassing the guard (a shell)
    (child / "notes.md").write_text("fine\n")
    app.forks.finished(fid, "done")
    out = run_cli("forks", "apply", fid)
    assert out.returncode == 1 and "Refused" in out.stderr and "persona folder of alice" in out.stderr
    assert (persona / "SOUL.md").read_bytes() == soul_before and not (persona / "notes.md").exists()
    assert child.is_dir()


def test_forks_older_than_seven_days_are_cleaned_up(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    old = app.forks.create("alice", "old")
    new = app.forks.create("alice", "new")
    oid, nid = app.forks.fork_id(old), app.forks.fork_id(new)
    rec_file = app.paths.state_dir / "forks" / f"{oid}.json"
    doc = json.loads(rec_file.read_text())
    doc["created"] = time.time() - 8 * 24 * 3600
    rec_file.write_text(json.dumps(doc))
    assert app.forks.cleanup() == [oid]
    assert not rec_file.exists() and not Path(app.forks.root_of(old)).exists()
    assert Path(app.forks.root_of(new)).is_dir() and [r.id for r in app.forks.list()] == [nid]
    with pytest.raises(ForkError, match="There is no fork"):
        app.forks.apply(oid)


def test_cleanup_runs_when_the_app_starts(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    app = app_with(root)
    old = app.forks.create("alice", "old")
    rec_file = app.paths.state_dir / "forks" / f"{app.forks.fork_id(old)}.json"
    doc = json.loads(rec_file.read_text())
    doc["created"] = time.time() - 8 * 24 * 3600
    rec_file.write_text(json.dumps(doc))
    from hearthside.app.headless import HeadlessEvents
    from hearthside.app.lifecycle import Lifecycle

    life = Lifecycle(app, HeadlessEvents())
    try:
        life.start()
        assert not rec_file.exists()
    finally:
        life.stop()


@pytest.mark.subprocess_cli
def test_two_processes_applying_the_same_fork_one_wins(isolated_home: Path) -> None:
    root = workspace(isolated_home, {f"f{i}.md": b"x\n" * 50 for i in range(300)})
    app = app_with(root)
    fork = app.forks.create("alice", "many files")
    fid = app.forks.fork_id(fork)
    child = Path(app.forks.root_of(fork))
    for i in range(300):
        (child / f"f{i}.md").write_bytes(b"fork\n")
    app.forks.finished(fid, "done")
    procs = [subprocess.Popen([sys.executable, "-m", "hearthside", "forks", "apply", fid],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 1], results
    loser = next(r for r in results if r[0] == 1)
    assert "already applied" in loser[2] or "being applied" in loser[2]
    assert all((root / f"f{i}.md").read_bytes() == b"fork\n" for i in range(300))


def test_the_forker_alone_refuses_a_non_folder_workspace_and_copies_with_modes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "d" / "run.sh", 0o755)
    method, skipped = copy_tree(src, tmp_path / "dst", use_reflink=False)
    assert method == "copy" and skipped == ()
    assert os.stat(tmp_path / "dst" / "d" / "run.sh").st_mode & 0o777 == 0o755
    assert measure(src).files == 1
    forker = DirectoryForker(tmp_path / "forks")

    class Other:
        def versions(self) -> dict[str, Any]:
            return {}

    with pytest.raises(ForkRefused):
        forker.fork(new_environment(EnvironmentRef("workspace", "x"), Other()), "x")  # type: ignore[arg-type]


def test_a_fork_binds_the_injected_runner_to_the_fork_folder(isolated_home: Path) -> None:
    root = workspace(isolated_home)
    bound: list[Path] = []

    def runner_for(folder: Path) -> Any:
        bound.append(folder)
        return None

    svc = ForkService(AppContext().paths.state_dir, None, lambda: __import__("hearthside.core.writeguard",
                      fromlist=["WriteGuard"]).WriteGuard(), runner_for=runner_for)
    fork = svc.create("alice", "x", workspace=str(root))
    assert bound == [Path(svc.root_of(fork))]


def test_a_link_or_file_in_the_way_stops_the_apply_before_anything_is_written(isolated_home: Path) -> None:
    """Fails before the shape check: the versions leave links out, so a link the user put
    where the fork added a file was no conflict, and the apply stopped half-way (the other
    files already written)."""
    root = workspace(isolated_home)
    app = app_with(root)
    fork = app.forks.create("alice", "x")
    fid = app.forks.fork_id(fork)
    child = Path(app.forks.root_of(fork))
    (child / "a-first.md").write_text("written first\n")
    (child / "zz.md").write_text("fork\n")
    (child / "dir").mkdir()
    (child / "dir" / "f.md").write_text("fork\n")
    app.forks.finished(fid, "done")
    elsewhere = isolated_home / "elsewhere.md"
    elsewhere.write_text("not the workspace\n")
    (root / "zz.md").symlink_to(elsewhere)
    with pytest.raises(ForkError) as err:
        app.forks.apply(fid)
    assert err.value.kind == ErrorKind.REFUSED and "zz.md" in str(err.value)
    assert not (root / "a-first.md").exists() and elsewhere.read_text() == "not the workspace\n"
    (root / "zz.md").unlink()
    (root / "dir").write_text("a file where the fork has a folder\n")
    with pytest.raises(ForkError, match="dir in the workspace is not a folder"):
        app.forks.apply(fid)
    assert not (root / "a-first.md").exists() and child.is_dir()


def test_the_real_write_tool_in_a_fork_is_guarded_as_outside(isolated_home: Path) -> None:
    """The files pack's Write, run as a forked specialist runs it (the fork's folder as its
    workspace, the session's own guard inherited as it is): SOUL.md of the persona-folder
    workspace is refused in the fork exactly as outside, an ordinary file lands in the fork and
    not in the workspace. Fails with a plain guard: every write in a fork (the state folder)
    was refused."""
    import asyncio
    import dataclasses

    persona = make_persona(isolated_home, "alice")
    app = app_with(persona)
    prepared = app.sessions.prepare("alice")
    tools = {t.spec.name: t for t in prepared.snapshot.tools}
    if "Write" not in tools:
        pytest.skip("the files pack is not installed in this environment")
    fork = app.forks.create("alice", "x")
    child = Path(app.forks.root_of(fork))
    env = dataclasses.replace(prepared.env, workspace=str(child), environment=fork.child)

    def write(path: str, content: str) -> Any:
        return asyncio.run(asyncio.wait_for(tools["Write"].execute({"path": path, "content": content}, env), 60))

    outside = asyncio.run(tools["Write"].execute({"path": str(persona / "SOUL.md"), "content": "x"}, prepared.env))
    inside = write("SOUL.md", "rewritten")
    assert outside.is_error and inside.is_error and "Refused" in inside.content
    assert (child / "SOUL.md").read_text() == (persona / "SOUL.md").read_text() != "rewritten"
    assert write(str(make_persona(isolated_home, "bob") / "SOUL.md"), "x").is_error
    # the whole persona folder is protected outside, so in its fork every name is refused too
    assert asyncio.run(tools["Write"].execute({"path": "drafts/plan.md", "content": "x"}, prepared.env)).is_error
    assert write("drafts/plan.md", "a plan\n").is_error

    plain = isolated_home / "plain"
    plain.mkdir()
    app.settings.set("files.workspace", str(plain))
    prepared = app.sessions.prepare("alice")
    fork = app.forks.create("alice", "y")
    child = Path(app.forks.root_of(fork))
    env = dataclasses.replace(prepared.env, workspace=str(child), environment=fork.child)
    ok = write("drafts/plan.md", "a plan\n")
    assert not ok.is_error, ok.content
    assert (child / "drafts" / "plan.md").read_text() == "a plan\n" and not (plain / "drafts").exists()
    assert write(str(persona / "SOUL.md"), "x").is_error  # a persona path from this fork: refused


def test_the_subagent_seam_forks_the_sessions_environment_and_keeps_it_for_review(isolated_home: Path) -> None:
    """What the Subagent tool does with ``app.forks.hook(persona)``: fork the session's
    Environment (set by ``prepare``), let the specialist write, then ``keep`` the fork."""
    root = workspace(isolated_home)
    make_persona(isolated_home, "alice")
    app = app_with(root)
    prepared = app.sessions.prepare("alice")
    base = prepared.env.environment
    assert base is not None and isinstance(base.workspace, DirectoryWorkspace)
    assert base.workspace.root == root.resolve()
    forker = app.forks.forker("alice")
    fork = forker.fork(base, "write a plan")
    child = Path(app.forks.root_of(fork))
    (child / "plan.md").write_text("plan\n")
    said = app.forks.keep(fork, "scribe", "write a plan")
    fid = app.forks.fork_id(fork)
    assert f"fork {fid}" in said and "1 added" in said and "until the user applies" in said
    assert [r.id for r in app.forks.pending()] == [fid] and app.forks.pending()[0].summary == "scribe: write a plan"
    assert not (root / "plan.md").exists()
    idle = forker.fork(base, "look only")
    assert app.forks.keep(idle, "scribe", "look") == "The specialist changed no files."
    assert not Path(app.forks.root_of(idle)).exists()
    # a fork that is gone is the state folder again for every session's guard
    guard = app.sessions.prepare("alice").env.write_guard
    assert guard.refusal(child / "more.md") == ""
    app.forks.discard(fid)
    assert "state folder" in guard.refusal(child / "more.md")


def test_a_session_without_a_workspace_forks_the_personas_shell_folder_or_says_why_not(isolated_home: Path) -> None:
    """Without files.workspace the session's environment is the persona's own shell folder (the
    shell pack's); a writing specialist forks that, and a folder that is not there is one sentence."""
    from hearthside.app.shell import default_folder

    make_persona(isolated_home, "alice")
    app = AppContext()
    base = app.sessions.prepare("alice").env.environment
    assert base is not None and isinstance(base.workspace, DirectoryWorkspace)
    assert base.workspace.root == default_folder("alice").resolve()
    assert not base.workspace.root.is_relative_to(app.paths.personas_dir)
    with pytest.raises(ForkError, match="does not exist"):
        app.forks.forker("alice").fork(base, "write")
    app.settings.set("files.workspace", str(isolated_home / "does-not-exist"))
    base = app.sessions.prepare("alice").env.environment
    assert base is not None
    with pytest.raises(ForkError, match="does-not-exist does not exist"):
        app.forks.forker("alice").fork(base, "write")


def test_a_session_without_a_workspace_forks_the_personas_own_folder_never_the_persona(isolated_home: Path) -> None:
    from hearthside.adapters.workspace_dir import DirectoryWorkspace
    from hearthside.app.shell import default_folder

    persona = make_persona(isolated_home, "alice")
    app = AppContext()
    env = app.sessions.prepare("alice").env.environment
    assert env is not None and isinstance(env.workspace, DirectoryWorkspace)
    assert env.workspace.root == default_folder("alice").resolve()
    assert persona.resolve() not in (env.workspace.root, *env.workspace.root.parents)
    ws = isolated_home / "ws"
    ws.mkdir()
    app.settings.set("files.workspace", str(ws))
    env = app.sessions.prepare("alice").env.environment
    assert env is not None and isinstance(env.workspace, DirectoryWorkspace) and env.workspace.root == ws.resolve()
