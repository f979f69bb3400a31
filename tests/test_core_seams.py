"""The seed-004 seams in core: environments, forks' diffs and merges, agent-definition tiers.

Pure values over an in-memory workspace: the file-backed forker and the file source have
their own tests with real folders."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping

import pytest
from hearthside.core.agentdefs import (
    MAX_TURNS_CAP,
    AgentDef,
    AgentDefListing,
    AgentMCPServer,
    AgentOrigin,
    capped,
    merge_tiers,
)
from hearthside.core.environment import (
    Environment,
    EnvironmentRef,
    ErrNoShell,
    FileVersion,
    Fork,
    MergeConflict,
    MutatesParent,
    SerializingMerger,
    WorkspaceMerger,
    diff_versions,
    new_environment,
    valid_name,
)


class MemoryWorkspace:
    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = dict(files)
        self.writes: list[str] = []

    def versions(self) -> dict[str, FileVersion]:
        return {n: FileVersion(hashlib.sha256(b).hexdigest()) for n, b in self.files.items()}

    def read(self, name: str) -> bytes:
        return self.files[name]

    def write(self, name: str, data: bytes) -> None:
        self.writes.append(name)
        self.files[name] = data

    def remove(self, name: str) -> None:
        self.writes.append(name)
        del self.files[name]


def _fork(parent: MemoryWorkspace) -> tuple[Environment, Fork, MemoryWorkspace]:
    penv = new_environment(EnvironmentRef("workspace", "p"), parent)
    child = MemoryWorkspace(parent.files)
    fork = Fork(new_environment(EnvironmentRef("fork-copy", "c"), child), lambda: None, parent.versions())
    return penv, fork, child


def test_an_environment_needs_a_workspace_and_says_when_it_has_no_shell() -> None:
    with pytest.raises(ValueError):
        new_environment(EnvironmentRef("workspace", "x"), None)  # type: ignore[arg-type]
    env = new_environment(EnvironmentRef("workspace", "x"), MemoryWorkspace({}))
    with pytest.raises(ErrNoShell):
        env.command_runner()


def test_a_merge_applies_added_changed_and_removed_files() -> None:
    parent = MemoryWorkspace({"a.md": b"1", "b.md": b"2", "keep.md": b"k"})
    penv, fork, child = _fork(parent)
    child.write("a.md", b"changed")
    child.remove("b.md")
    child.write("new/c.md", b"new")
    diff = diff_versions(fork.base, child.versions())
    assert (diff.added, diff.changed, diff.removed) == (("new/c.md",), ("a.md",), ("b.md",))
    result = SerializingMerger(WorkspaceMerger()).merge(fork, penv)
    assert result.applied == ("a.md", "b.md", "new/c.md")
    assert parent.files == {"a.md": b"changed", "keep.md": b"k", "new/c.md": b"new"}


def test_a_conflict_applies_nothing_and_names_the_files() -> None:
    parent = MemoryWorkspace({"a.md": b"1", "b.md": b"2"})
    penv, fork, child = _fork(parent)
    child.write("a.md", b"fork")
    child.write("b.md", b"fork")
    child.write("c.md", b"fork")
    parent.files["a.md"] = b"parent changed it"
    parent.files["c.md"] = b"parent made it"
    parent.writes.clear()
    with pytest.raises(MergeConflict) as err:
        WorkspaceMerger().merge(fork, penv)
    assert err.value.names == ("a.md", "c.md")
    assert "a.md, c.md" in str(err.value) and "kept" in str(err.value)
    assert parent.writes == []


def test_the_parent_side_write_check_refuses_before_anything_is_written() -> None:
    parent = MemoryWorkspace({"a.md": b"1", "SOUL.md": b"soul"})
    penv, fork, child = _fork(parent)
    child.write("a.md", b"2")
    child.write("SOUL.md", b"rewritten")
    parent.writes.clear()
    merger = WorkspaceMerger(lambda env, name: "persona file" if name == "SOUL.md" else None)
    with pytest.raises(PermissionError):
        merger.merge(fork, penv)
    assert parent.writes == [] and parent.files["SOUL.md"] == b"soul"


def test_serialized_merges_never_interleave() -> None:
    inside = 0
    most = 0
    guard = threading.Lock()

    class Slow:
        def merge(self, fork: Fork, parent: Environment) -> object:
            nonlocal inside, most
            with guard:
                inside += 1
                most = max(most, inside)
            threading.Event().wait(0.02)
            with guard:
                inside -= 1
            return None

    merger = SerializingMerger(Slow())  # type: ignore[arg-type]
    parent = MemoryWorkspace({})
    penv, fork, _ = _fork(parent)
    threads = [threading.Thread(target=merger.merge, args=(fork, penv)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


@pytest.mark.parametrize("name,ok", [("a.md", True), ("d/e.md", True), ("../x", False), ("/abs", False),
                                     ("a//b", False), ("a\\b", False), ("", False), ("./a", False)])
def test_logical_names(name: str, ok: bool) -> None:
    assert valid_name(name) is ok


def test_mutates_parent_is_an_optional_capability() -> None:
    class Merging:
        def mutates_parent(self, args: Mapping[str, object]) -> bool:
            return bool(args.get("write"))

    assert isinstance(Merging(), MutatesParent)
    assert not isinstance(object(), MutatesParent)


def test_the_persona_tier_wins_a_name_clash_with_a_note() -> None:
    persona = AgentDefListing((AgentDef("helper", "persona one", origin=AgentOrigin.PERSONA),))
    user = AgentDefListing((AgentDef("helper", "user one"), AgentDef("arch", "user arch")), ("x skipped",))
    merged = merge_tiers([persona, user])
    assert [d.name for d in merged.defs] == ["arch", "helper"]
    assert merged.get("helper") is not None and merged.get("helper").description == "persona one"  # type: ignore[union-attr]
    assert "x skipped" in merged.notes
    assert any("'helper' (user tier) is left out" in n for n in merged.notes)


def test_limits_are_capped_and_headers_never_shown() -> None:
    assert capped(10_000_000, MAX_TURNS_CAP) == MAX_TURNS_CAP
    assert capped(0, MAX_TURNS_CAP) == 0 and capped(-5, MAX_TURNS_CAP) == 0 and capped(7, MAX_TURNS_CAP) == 7
    server = AgentMCPServer("inline", "http://127.0.0.1:9/mcp", (("Authorization", "Bearer s3cr3t"),))
    assert not server.is_reference and AgentMCPServer("ref").is_reference
    assert "s3cr3t" not in repr(server) and "s3cr3t" not in repr(AgentDef("a", "b", mcp_servers=(server,)))


def test_a_directory_workspace_refuses_names_outside_it_and_links(tmp_path: object) -> None:
    import os
    from pathlib import Path

    from hearthside.adapters.workspace_dir import DirectoryWorkspace

    root = Path(tmp_path) / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("a")
    (root / "sub" / "b.md").write_text("b")
    outside = Path(tmp_path) / "outside.md"
    outside.write_text("secret")
    os.symlink(outside, root / "link.md")
    os.symlink(Path(tmp_path), root / "up")
    os.mkfifo(root / "pipe")
    ws = DirectoryWorkspace(root)
    assert sorted(ws.versions()) == ["a.md", "sub/b.md"]
    for bad in ("../outside.md", "link.md", "up/outside.md", "/etc/passwd"):
        with pytest.raises(ValueError):
            ws.write(bad, b"x")
        with pytest.raises(ValueError):
            ws.read(bad)
    with pytest.raises(ValueError):
        ws.read("pipe")  # a FIFO is never opened for a blocking read
    before = ws.versions()["a.md"]
    ws.write("a.md", b"changed!")
    ws.write("new/c.md", b"c")
    assert ws.versions()["a.md"] != before and ws.read("new/c.md") == b"c"
    ws.remove("sub/b.md")
    assert "sub/b.md" not in ws.versions() and outside.read_text() == "secret"
