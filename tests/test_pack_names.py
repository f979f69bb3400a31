"""Hole 6 of issue 18: a pack cannot take over first-party names.

A wheel whose entry point sorts first (``aaa``) registered the files pack's ``Read`` and
``Write`` (calling both read-only) and the search provider ``searxng``; it loaded first, so the
real ``files`` and ``searxng`` packs were failed as name clashes and its ``Write`` ran in an
unattended check-in. Now Hearthside's own packs load first and own every name they register;
the newcomer is the one refused, with a reason that names the first-party pack.

Real wheels (``tests/packfactory.py``), installed with real pip into the packs venv, listed and
run by the real ``hearthside`` command in a subprocess. The widened test squats **every** name
the first-party packs register, found by loading them when the tests are collected.
"""

from __future__ import annotations

import json
from pathlib import Path

import packfactory
import pytest
from drift_helpers import make_persona
from fakemodel import FakeModel
from hearthside.pluginhost.host import OPT_IN_PACKS


def _first_party_names() -> list[tuple[str, str, str]]:
    """(kind, name, pack) for everything the first-party packs register, from loading them."""
    from hearthside.pluginhost.host import FIRST_PARTY, OPT_IN_NAMES, OPT_IN_PACKS, PackHost, discover

    # Every first-party pack whose folder is in this checkout (one listed before its branch is
    # merged has none yet, and is not installed).
    shipped = sorted(d for d in FIRST_PARTY if (packfactory.ROOT / "plugins" / d / "pyproject.toml").is_file())
    host = PackHost(opted_in=FIRST_PARTY)  # the opt-in ones (the shell) too: they own their names all the same
    with packfactory.restored_imports():
        reports = host.load(discover(only_dists=FIRST_PARTY))
    assert sorted(r.dist for r in reports if r.status == "ok" and r.first_party) == shipped, reports
    for r in reports:  # an opt-in pack's names are owned while it is off: the static list must be its names
        if r.name in OPT_IN_PACKS:
            assert {(k, n) for k, names in OPT_IN_NAMES.items() for n, p in names.items() if p == r.name} == {
                (k, n) for k, names in r.contributes.items() for n in names if k != "forms"}, r.contributes
    # A settings form's title is no name: nothing is looked up by it, and a pack's forms show
    # on that pack's own page only.
    return sorted((kind, name, r.name) for r in reports for kind, names in r.contributes.items()
                  for name in names if kind != "forms")


FIRST_PARTY_NAMES = _first_party_names()


def test_the_first_party_packs_register_names_of_every_kind_they_are_tested_for() -> None:
    # the parametrized test below is only as wide as what was found: tools, skills, a provider
    kinds = {kind for kind, _, _ in FIRST_PARTY_NAMES}
    assert {"tools", "skills", "providers", "commands"} <= kinds, FIRST_PARTY_NAMES
    assert ("tools", "Write", "files") in FIRST_PARTY_NAMES
    assert ("providers", "searxng", "searxng") in FIRST_PARTY_NAMES


def _listing(run_cli, env: dict[str, str] | None = None) -> dict[str, dict]:  # type: ignore[no-untyped-def, type-arg]
    proc = run_cli("plugins", "list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout)}


def test_a_squatter_sorting_first_cannot_take_read_write_or_searxng(
    run_cli, isolated_home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    packfactory.install_into_data(isolated_home / ".local" / "share", "hs-aaa")
    packs = _listing(run_cli)
    files, searxng, squatter = packs["files"], packs["searxng"], packs["aaa"]
    assert files["status"] == "ok", files
    assert {"Read", "Write"} <= set(files["contributes"]["tools"])
    assert searxng["status"] == "ok" and searxng["contributes"]["providers"] == ["searxng"], searxng
    assert squatter["status"] == "failed"
    assert "Hearthside's own pack 'files' (hearthside-files)" in squatter["error"], squatter["error"]
    assert squatter["contributes"] == {"tools": [], "skills": [], "providers": [], "servers": [], "commands": [],
                                       "forms": []}

    # An unattended check-in: the model asks for Write; the squatter's "read-only" Write must
    # not run (the first-party Write needs approval, which nobody is there to give).
    make_persona(isolated_home, "alice", {"HEARTBEAT.md": "- tidy the notes\n"})
    marker = tmp_path / "squatter-ran"
    target = tmp_path / "written.txt"
    call = json.dumps({"file_path": str(target), "content": "x"})
    with FakeModel([{"tool_calls": [("Write", call), ("Read", json.dumps({"file_path": str(marker)}))]},
                    {"text": "HEARTBEAT_OK"}]) as fm:
        env = {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback", "HS_SQUAT_MARKER": str(marker)}
        proc = run_cli("heartbeat", "run", "alice", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        assert len(fm.requests) >= 2, proc.stderr
        offered = {t["function"]["name"]: t["function"] for t in fm.requests[0].get("tools", [])}
        told = [m["content"] for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    assert not marker.exists(), marker.read_text()
    assert not target.exists()
    assert "squatted" not in json.dumps(told)
    assert "The squatter's" not in json.dumps(offered)


@pytest.fixture(scope="module")
def one_name_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG data dir whose packs venv holds the one-name squatter (pip-installed once)."""
    data = tmp_path_factory.mktemp("squat-data")
    packfactory.install_into_data(data, "hs-one-name")
    return data


@pytest.mark.parametrize(("kind", "name", "owner"), FIRST_PARTY_NAMES,
                         ids=[f"{k}:{n}" for k, n, _ in FIRST_PARTY_NAMES])
def test_no_first_party_name_can_be_squatted(run_cli, one_name_data: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                             kind: str, name: str, owner: str) -> None:
    env = {"XDG_DATA_HOME": str(one_name_data), "HS_SQUAT_KIND": kind, "HS_SQUAT_NAME": name,
           "HS_SQUAT_DIR": str(tmp_path)}
    packs = _listing(run_cli, env)
    first, squatter = packs[owner], packs["aa-squat"]
    if owner in OPT_IN_PACKS:  # off until the user turns it on, and its names are its own all the same
        assert first["status"] == "blocked", first
    else:
        assert first["status"] == "ok", first
        assert name in first["contributes"][kind]
    assert squatter["status"] == "failed", squatter
    assert f"Hearthside's own pack {owner!r}" in squatter["error"], squatter["error"]
    assert name not in squatter["contributes"][kind]


@pytest.mark.parametrize(("kind", "name", "owner"),
                         [("tools", "read", "files"), ("tools", "WRITE", "files"), ("providers", "searxng", "searxng")])
def test_a_first_party_name_in_other_letter_case_is_squatting_too(run_cli, one_name_data: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  kind: str, name: str, owner: str) -> None:
    env = {"XDG_DATA_HOME": str(one_name_data), "HS_SQUAT_KIND": kind, "HS_SQUAT_NAME": name,
           "HS_SQUAT_DIR": str(tmp_path)}
    squatter = _listing(run_cli, env)["aa-squat"]
    assert squatter["status"] == "failed"
    assert f"Hearthside's own pack {owner!r}" in squatter["error"], squatter["error"]


def _host_tool_names() -> list[str]:
    from hearthside.core.hosttools import RESERVED_TOOL_NAMES
    from hearthside.core.memory.tools import memory_tools

    class NoStore:
        """memory_tools only keeps the store; building the specs never touches it."""

    built_in = {t.spec.name for t in memory_tools(NoStore())}  # type: ignore[arg-type]
    names = sorted(RESERVED_TOOL_NAMES | built_in)
    return names + [n.lower() for n in names if n.lower() != n] + ["mcp__github__create_issue", "MCP__x"]


@pytest.mark.parametrize("name", _host_tool_names())
def test_no_host_tool_name_can_be_taken_by_a_pack(run_cli, one_name_data: Path, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    env = {"XDG_DATA_HOME": str(one_name_data), "HS_SQUAT_KIND": "tools", "HS_SQUAT_NAME": name,
           "HS_SQUAT_DIR": str(tmp_path)}
    squatter = _listing(run_cli, env)["aa-squat"]
    assert squatter["status"] == "failed"
    assert "reserved for Hearthside's own tools" in squatter["error"], squatter["error"]


def test_a_distribution_named_like_a_first_party_pack_in_the_packs_folder_is_not_first_party(
    run_cli, isolated_home: Path, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """What identifies a first-party pack is not a name a wheel can claim: a distribution named
    ``hearthside-searxng`` with the entry point ``searxng`` and the module
    ``hearthside_searxng`` put into a folder on the path that is not Hearthside's own is a
    third-party pack (not loaded in safe mode, its names not owned)."""
    from hearthside.pluginhost.host import PackHost, discover

    site = tmp_path / "elsewhere"
    site.mkdir()
    packfactory.write_installed_dist(site, "hearthside-searxng",
                                     "[hearthside.plugins]\nsearxng = hearthside_searxng.plugin\n")
    found = [c for c in discover(path=[str(site)]) if c.name == "searxng"]
    assert found and not found[0].first_party
    host = PackHost(safe_mode=True)
    [report] = host.load(found)
    assert report.status == "failed" and "reserved for Hearthside's own pack" in report.error
    real = [c for c in discover() if c.name == "searxng"]
    assert real and real[0].first_party
