"""hearthside-files: the five tools over a real folder, confinement and the version protocol."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from hearthside.core.tools import ToolEnv, ToolResult
from hearthside.pluginhost.host import PackHost, ReadOnlySettings, discover
from hearthside_files.tools import make_tools


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("alpha\nbeta\ngamma\n")
    (root / "todo.txt").write_text("buy milk\nbuy bread\n")
    (tmp_path / "outside.txt").write_text("SECRET")
    return root


@pytest.fixture
def tools() -> dict[str, Any]:
    return {t.spec.name: t for t in make_tools()}


def call(tools: dict[str, Any], name: str, env: ToolEnv, **args: Any) -> ToolResult:
    return asyncio.run(tools[name].execute(args, env))


def test_the_pack_registers_three_read_only_and_two_mutating_tools() -> None:
    host = PackHost()
    [report] = host.load(discover(only_dists=["hearthside-files"]))
    assert report.status == "ok", report.error
    flags = {name: t.read_only for name, (t, pack) in host.tools.items()}
    assert flags == {"Read": True, "Glob": True, "Grep": True, "Edit": False, "Write": False}
    assert {pack for _, pack in host.tools.values()} == {"files"}


def test_without_a_workspace_every_tool_says_how_to_set_one(tools: dict[str, Any]) -> None:
    out = call(tools, "Read", ToolEnv(), path="a.md")
    assert out.is_error and "files.workspace" in out.content


def test_the_workspace_setting_is_used_when_the_session_has_none(ws: Path) -> None:
    settings = ReadOnlySettings(lambda k, d=None: str(ws) if k == "files.workspace" else d)
    tools = {t.spec.name: t for t in make_tools(settings)}
    out = call(tools, "Read", ToolEnv(), path="todo.txt")
    assert not out.is_error and "buy milk" in out.content


def test_read_then_edit_changes_the_file(ws: Path, tools: dict[str, Any]) -> None:
    env = ToolEnv(workspace=str(ws))
    out = call(tools, "Read", env, path="notes/a.md")
    assert "     2\tbeta" in out.content and "lines 1-3 of 3" in out.content
    out = call(tools, "Edit", env, path="notes/a.md", old_string="beta", new_string="BETA")
    assert not out.is_error, out.content
    assert (ws / "notes" / "a.md").read_text() == "alpha\nBETA\ngamma\n"
    # a second edit in the same session is fine: the edit recorded the new version
    assert not call(tools, "Edit", env, path="notes/a.md", old_string="gamma", new_string="G").is_error


def test_edit_without_reading_first_is_refused(ws: Path, tools: dict[str, Any]) -> None:
    out = call(tools, "Edit", ToolEnv(workspace=str(ws)), path="todo.txt", old_string="milk", new_string="tea")
    assert out.is_error and "Read todo.txt before editing" in out.content
    assert "milk" in (ws / "todo.txt").read_text()


def test_edit_after_the_file_changed_on_disk_is_refused(ws: Path, tools: dict[str, Any]) -> None:
    env = ToolEnv(workspace=str(ws))
    call(tools, "Read", env, path="todo.txt")
    (ws / "todo.txt").write_text("buy milk\nbuy eggs\n")
    out = call(tools, "Edit", env, path="todo.txt", old_string="milk", new_string="tea")
    assert out.is_error and "changed since you read it" in out.content
    assert (ws / "todo.txt").read_text() == "buy milk\nbuy eggs\n"


def test_edit_needs_a_unique_match_unless_replace_all(ws: Path, tools: dict[str, Any]) -> None:
    env = ToolEnv(workspace=str(ws))
    call(tools, "Read", env, path="todo.txt")
    out = call(tools, "Edit", env, path="todo.txt", old_string="buy", new_string="get")
    assert out.is_error and "appears 2 times" in out.content
    missing = call(tools, "Edit", env, path="todo.txt", old_string="cheese", new_string="x")
    assert missing.is_error and "not found" in missing.content
    assert not call(tools, "Edit", env, path="todo.txt", old_string="buy", new_string="get", replace_all=True).is_error
    assert (ws / "todo.txt").read_text() == "get milk\nget bread\n"


def test_write_creates_new_files_only_and_replaces_only_what_was_read(ws: Path, tools: dict[str, Any]) -> None:
    env = ToolEnv(workspace=str(ws))
    out = call(tools, "Write", env, path="new/dir/plan.md", content="# Plan\n")
    assert not out.is_error and (ws / "new" / "dir" / "plan.md").read_text() == "# Plan\n"
    refused = call(tools, "Write", ToolEnv(workspace=str(ws)), path="todo.txt", content="gone")
    assert refused.is_error and "Read it before replacing" in refused.content
    assert "milk" in (ws / "todo.txt").read_text()
    call(tools, "Read", env, path="todo.txt")
    assert not call(tools, "Write", env, path="todo.txt", content="fresh\n").is_error
    assert (ws / "todo.txt").read_text() == "fresh\n"


@pytest.mark.parametrize("path", ["../outside.txt", "notes/../../outside.txt", "/etc/passwd"])
def test_paths_outside_the_workspace_are_refused(ws: Path, tools: dict[str, Any], path: str) -> None:
    env = ToolEnv(workspace=str(ws))
    for name, args in (("Read", {"path": path}), ("Write", {"path": path, "content": "x"})):
        out = call(tools, name, env, **args)
        assert out.is_error and "outside the workspace" in out.content
    assert (ws.parent / "outside.txt").read_text() == "SECRET"


def test_symlinks_cannot_lead_out_of_the_workspace(ws: Path, tools: dict[str, Any]) -> None:
    os.symlink(ws.parent / "outside.txt", ws / "link.txt")
    os.symlink(ws.parent, ws / "up")
    env = ToolEnv(workspace=str(ws))
    for path in ("link.txt", "up/outside.txt"):
        out = call(tools, "Read", env, path=path)
        assert out.is_error and "outside the workspace" in out.content
    out = call(tools, "Write", env, path="up/new.txt", content="x")
    assert out.is_error and not (ws.parent / "new.txt").exists()
    listing = call(tools, "Glob", env, pattern="**/*.txt")
    assert "outside" not in listing.content and "todo.txt" in listing.content


def test_glob_and_grep_search_the_workspace(ws: Path, tools: dict[str, Any]) -> None:
    env = ToolEnv(workspace=str(ws))
    assert call(tools, "Glob", env, pattern="**/*.md").content == "notes/a.md"
    assert call(tools, "Glob", env, pattern="../*").is_error
    out = call(tools, "Grep", env, pattern="^b", glob="**/*")
    assert out.content.splitlines() == ["notes/a.md:2: beta", "todo.txt:1: buy milk", "todo.txt:2: buy bread"]
    assert call(tools, "Grep", env, pattern="(").is_error
    assert call(tools, "Grep", env, pattern="ALPHA", ignore_case=True).content == "notes/a.md:1: alpha"


def test_binary_files_are_not_read_as_text(ws: Path, tools: dict[str, Any]) -> None:
    (ws / "img.bin").write_bytes(b"\x89PNG\x00\x00")
    out = call(tools, "Read", ToolEnv(workspace=str(ws)), path="img.bin")
    assert out.is_error and "binary" in out.content


def test_pack_tests_run_in_a_home_of_their_own(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """The checkout's root conftest.py gives the packs' tests the same isolated HOME and XDG
    dirs as Hearthside's own: a pack that writes its cache never writes the real home."""
    import os
    from pathlib import Path

    base = tmp_path_factory.getbasetemp().resolve()
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[var]).resolve().is_relative_to(base), var
