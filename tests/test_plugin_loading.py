"""Loading packs in isolation: every bad pack is disabled with a reason, the healthy ones load.

The packs are real distributions, built with ``pip wheel`` and installed with pip into a
packs venv (packfactory). Listings come from the real ``hearthside plugins list --json``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import packfactory
from hearthside.app.paths import AppPaths


@pytest.fixture(scope="module")
def shared_data() -> Path:
    return packfactory.shared_packs_data_dir()


@pytest.fixture
def listing(run_cli, shared_data: Path):  # type: ignore[no-untyped-def]
    """``plugins list --json`` with the shared packs venv; returns {name or 'name (dist)': report}."""

    def run(*flags: str, env: dict[str, str] | None = None) -> dict[str, dict]:  # type: ignore[type-arg]
        full = {"XDG_DATA_HOME": str(shared_data)}
        full.update(env or {})
        proc = run_cli(*flags, "plugins", "list", "--json", env=full)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        out = {}
        for r in doc:
            key = r["name"] if r["name"] != "twin" else f"twin ({r['dist']})"
            out[key] = r
        return out

    return run


@pytest.fixture
def restore_imports() -> Iterator[None]:
    with packfactory.restored_imports():
        yield


def test_healthy_packs_load_next_to_broken_ones(listing) -> None:  # type: ignore[no-untyped-def]
    packs = listing()
    good = packs["good"]
    assert good["status"] == "ok", good
    assert good["error"] == ""
    assert good["dist"] == "hs-good" and good["version"] == "1.0.0"
    assert good["location"] == "packs"
    assert sorted(good["hooks"]) == sorted([
        "hearthside_tools", "hearthside_skills", "hearthside_search_providers", "hearthside_mcp_servers"])
    assert good["contributes"] == {"tools": ["GoodTool"], "skills": ["greet"],
                                   "providers": ["goodsearch"], "servers": ["goodserver"], "commands": [],
                                   "forms": []}
    for first_party in ("files", "searxng", "starter-skills"):
        assert packs[first_party]["status"] == "ok", packs[first_party]
    for key in ("name", "dist", "version", "status", "error", "hooks", "contributes"):
        assert key in good


def test_a_pack_that_prints_does_not_corrupt_the_json_listing(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["noisy"]  # the listing parsed as JSON
    assert r["status"] == "ok" and r["contributes"]["tools"] == ["Noisy"]


def test_pack_whose_module_raises_on_import_is_failed_with_the_error(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["importerror"]
    assert r["status"] == "failed"
    assert "could not be imported" in r["error"] and "broken on purpose" in r["error"]


def test_pack_whose_hook_raises_is_failed_and_contributes_nothing(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["hookraises"]
    assert r["status"] == "failed"
    assert "hearthside_tools" in r["error"] and "hook exploded" in r["error"]
    assert r["contributes"]["tools"] == []


def test_pack_whose_hook_calls_sys_exit_does_not_stop_hearthside(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["sysexit"]
    assert r["status"] == "failed"
    assert "sys.exit(3)" in r["error"]


def test_pack_raising_keyboard_interrupt_on_import_is_isolated(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["keyboard"]
    assert r["status"] == "failed"
    assert "KeyboardInterrupt" in r["error"]


def test_pack_registering_something_that_is_not_a_tool_is_failed(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["notatool"]
    assert r["status"] == "failed"
    assert "not one" in r["error"] and "str" in r["error"]


def test_pack_registering_a_tool_name_another_pack_has_is_failed(listing) -> None:  # type: ignore[no-untyped-def]
    packs = listing()
    r = packs["zduptool"]
    assert r["status"] == "failed"
    assert "'GoodTool'" in r["error"] and "'good'" in r["error"]
    assert packs["good"]["status"] == "ok"


def test_two_distributions_with_the_same_entry_point_name_are_both_reported(listing) -> None:  # type: ignore[no-untyped-def]
    packs = listing()
    a, b = packs["twin (hs-twin-a)"], packs["twin (hs-twin-b)"]
    for r in (a, b):
        assert r["status"] == "failed"
        assert "hs-twin-a" in r["error"] and "hs-twin-b" in r["error"]


def test_disabling_one_twin_by_distribution_lets_the_other_load(listing, run_cli, shared_data) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("plugins", "disable", "hs-twin-b", env={"XDG_DATA_HOME": str(shared_data)})
    assert proc.returncode == 0, proc.stderr
    packs = listing()
    assert packs["twin (hs-twin-a)"]["status"] == "ok"
    assert packs["twin (hs-twin-a)"]["contributes"]["tools"] == ["TwinA"]
    assert packs["twin (hs-twin-b)"]["status"] == "blocked"


def test_pack_for_a_newer_hearthside_is_failed_with_a_clear_reason(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["newer"]
    assert r["status"] == "failed"
    assert r["error"] == ("its hearthside_tools hook asks for 'persona_memory', which this "
                          "Hearthside does not provide; the pack may need a newer Hearthside")


@pytest.mark.slow
def test_disable_blocks_a_pack_before_import_and_enable_restores_it(listing, run_cli, shared_data) -> None:  # type: ignore[no-untyped-def]
    env = {"XDG_DATA_HOME": str(shared_data)}
    assert run_cli("plugins", "disable", "importerror", env=env).returncode == 0
    r = listing()["importerror"]
    assert r["status"] == "blocked"
    assert "enable importerror" in r["error"]
    assert run_cli("plugins", "enable", "importerror", env=env).returncode == 0
    assert listing()["importerror"]["status"] == "failed"
    proc = run_cli("plugins", "enable", "importerror", env=env)  # twice: already so, like disable
    assert proc.returncode == 0 and "already enabled" in proc.stdout
    proc = run_cli("plugins", "enable", "no-such-pack", env=env)
    assert proc.returncode == 1 and "no pack named 'no-such-pack' is disabled" in proc.stderr
    proc = run_cli("plugins", "disable", "  ", env=env)
    assert proc.returncode == 2 and "name of a pack" in proc.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_safe_mode_loads_only_first_party_packs(listing, how: str) -> None:  # type: ignore[no-untyped-def]
    packs = listing("--safe-mode") if how == "flag" else listing(env={"HEARTHSIDE_SAFE_MODE": "1"})
    for name, r in packs.items():
        if r["dist"].startswith("hs-"):
            assert r["status"] == "blocked", (name, r)
            assert "safe mode" in r["error"]
    assert packs["files"]["status"] == "ok"


@pytest.mark.slow
def test_flagged_pack_skill_is_held_back_until_allowed(run_cli, shared_data) -> None:  # type: ignore[no-untyped-def]
    env = {"XDG_DATA_HOME": str(shared_data)}
    held = json.loads(run_cli("plugins", "held", "--json", env=env).stdout)
    assert [(h["pack"], h["name"]) for h in held] == [("flagged", "sneaky")]
    listed = {r["name"]: r for r in json.loads(run_cli("plugins", "list", "--json", env=env).stdout)}
    assert listed["flagged"]["held_skills"] == ["sneaky"] and listed["good"]["held_skills"] == []
    text = run_cli("plugins", "list", env=env).stdout
    assert "held back: skill 'sneaky'" in text and "allow-skill flagged/sneaky" in text
    assert "ignore all previous instructions" in held[0]["finding"].lower()
    names = [s["name"] for s in json.loads(run_cli("plugins", "skills", "--json", env=env).stdout)["skills"]]
    assert "sneaky" not in names and "greet" in names
    proc = run_cli("plugins", "allow-skill", "flagged/sneaky", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(run_cli("plugins", "held", "--json", env=env).stdout) == []
    listed = {r["name"]: r for r in json.loads(run_cli("plugins", "list", "--json", env=env).stdout)}
    assert listed["flagged"]["held_skills"] == []
    names = [s["name"] for s in json.loads(run_cli("plugins", "skills", "--json", env=env).stdout)["skills"]]
    assert "sneaky" in names


def test_allow_skill_of_an_unknown_name_fails_clearly(run_cli, shared_data) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("plugins", "allow-skill", "nope", env={"XDG_DATA_HOME": str(shared_data)})
    assert proc.returncode == 1
    assert "no held-back skill" in proc.stderr


def test_service_exposes_contributions_stamped_with_their_pack(
    shared_data: Path, isolated_home: Path, restore_imports: None, caplog: pytest.LogCaptureFixture
) -> None:
    from hearthside.app.context import AppContext

    base = AppPaths.from_environment()
    app = AppContext(AppPaths(base.config_dir, shared_data / "hearthside", base.state_dir))
    svc = app.plugins
    svc.load()
    svc.load()  # idempotent
    tools = {t.spec.name: pack for t, pack in svc.tool_entries()}
    assert tools["GoodTool"] == "good"
    assert tools["Read"] == "files"
    assert "TwinA" not in tools and "TwinB" not in tools
    servers = svc.mcp_servers()
    assert [(s.name, s.pack) for s in servers] == [("goodserver", "good")]
    assert servers[0].config == {"url": "https://mcp.example.org/mcp", "headers": {}}
    assert servers[0].secrets[0].key == "Authorization"
    # search provider: first registered when unset (first-party packs load first, so a pack
    # named to sort early does not become the default); the setting chooses
    first = svc.search_provider()
    assert first is not None and first.name == "searxng"
    app.settings.set("search.provider", "goodsearch")
    chosen = svc.search_provider()
    assert chosen is not None and chosen.name == "goodsearch"
    app.settings.set("search.provider", "nosuch")
    with caplog.at_level(logging.WARNING, "hearthside.app.plugins"):
        assert svc.search_provider() is None
    # a typo names the choices, so the user can fix settings.toml without reading code
    # (the first-party websearch pack's brave and tavily sit between them when it is installed)
    assert any("'nosuch'" in r.getMessage() and "available: searxng, " in r.getMessage()
               and r.getMessage().rstrip().endswith("goodsearch); web search is off until you change it")
               for r in caplog.records)


def test_skill_catalog_precedence_is_persona_then_user_then_packs(
    shared_data: Path, isolated_home: Path, restore_imports: None, tmp_path: Path
) -> None:
    from hearthside.app.context import AppContext

    base = AppPaths.from_environment()
    app = AppContext(AppPaths(base.config_dir, shared_data / "hearthside", base.state_dir))

    def skill(root: Path, name: str, desc: str) -> None:
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {desc}\n---\nbody of {desc}\n")

    persona = tmp_path / "persona"
    skill(persona / "skills", "greet", "persona greet")
    skill(app.paths.user_skills_dir, "greet", "user greet")
    skill(app.paths.user_skills_dir, "tidy-notes", "user tidy")
    cat = app.plugins.skill_catalog(persona)
    by = {m.name: m for m in cat.list()}
    assert by["greet"].origin == "persona" and cat.body("greet") == "body of persona greet"
    assert by["tidy-notes"].origin == "user"
    assert by["daily-briefing"].origin == "pack" and by["daily-briefing"].pack == "starter-skills"
    assert "sneaky" not in by  # held back
    shadowed = [d for d in cat.diagnostics() if "hidden by" in d.reason]
    assert {(d.skill, d.origin) for d in shadowed} >= {("greet", "user"), ("greet", "pack"), ("tidy-notes", "pack")}
    without_persona = {m.name: m for m in app.plugins.skill_catalog(None).list()}
    assert without_persona["greet"].origin == "user"
    assert os.fspath(persona) not in json.dumps([m.as_dict() for m in cat.list()])


def test_doctor_reports_failed_packs_as_a_warning(
    shared_data: Path, isolated_home: Path, restore_imports: None
) -> None:
    from hearthside.app.context import AppContext
    from hearthside.app.doctor import check_packs

    healthy = check_packs(AppContext())  # only the first-party packs
    assert healthy.status == "ok" and re.match(r"\d+ loaded, 0 failed", healthy.detail)
    base = AppPaths.from_environment()
    check = check_packs(AppContext(AppPaths(base.config_dir, shared_data / "hearthside", base.state_dir)))
    assert check.status == "warn"
    assert "failed" in check.detail and "importerror" in check.detail


def test_malformed_pack_skills_are_skipped_with_reasons_and_the_good_one_loads(listing) -> None:  # type: ignore[no-untyped-def]
    r = listing()["badskills"]
    assert r["status"] == "ok", r
    assert r["contributes"]["skills"] == ["fine", "other-name"]  # loaded under its name (issue 19)
    warnings = "\n".join(r["warnings"])
    assert "'no-front'" in warnings and "no front matter" in warnings
    assert ("skill 'other-name': skill name 'other-name' does not match its folder name 'folder-name'; "
            "it is loaded as 'other-name'") in warnings
    assert "'long-desc'" in warnings and "2000 characters" in warnings


@pytest.mark.parametrize("asset", ["../../secret.md", "/etc/passwd", "references/../../../secret.md"])
def test_a_pack_skill_asset_name_with_dots_or_a_leading_slash_is_refused(
    shared_data: Path, isolated_home: Path, restore_imports: None, asset: str
) -> None:
    import asyncio

    from hearthside.app.context import AppContext
    from hearthside.core.hosttools import make_skill_tool
    from hearthside.core.tools import ToolEnv

    base = AppPaths.from_environment()
    app = AppContext(AppPaths(base.config_dir, shared_data / "hearthside", base.state_dir))
    tool = make_skill_tool(app.plugins.skill_catalog(None))
    ok = asyncio.run(tool.execute({"name": "fine", "asset": "references/notes.md"}, ToolEnv()))
    assert ok.content == "NOTES\n" and not ok.is_error
    out = asyncio.run(tool.execute({"name": "fine", "asset": asset}, ToolEnv()))
    assert out.is_error and "PACK SECRET" not in out.content and "root:" not in out.content
    assert ("'..'" in out.content) or ("leading '/'" in out.content)


def _bare_packs_site(data: Path) -> Path:
    """The packs site folder under an XDG data dir, without a venv (listing needs none)."""
    from hearthside.pluginhost.packsenv import PacksEnv

    site = PacksEnv(data / "hearthside" / "packs").site_dir
    site.mkdir(parents=True)
    return site


def test_a_pack_with_a_damaged_entry_points_file_is_failed_and_the_others_load(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site = _bare_packs_site(tmp_path / "data")
    packfactory.write_installed_dist(site, "hs-damaged", "[hearthside.plugins]\nno equals sign here\n")
    packfactory.write_installed_dist(site, "hs-other-group", "[console_scripts]\nno equals sign\n")
    proc = run_cli("plugins", "list", "--json", env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert proc.returncode == 0, proc.stderr
    packs = {r["name"]: r for r in json.loads(proc.stdout)}
    assert packs["hs-damaged"]["status"] == "failed"
    assert "entry_points.txt cannot be read" in packs["hs-damaged"]["error"]
    assert "hs-other-group" not in packs  # not ours: ignored, not reported
    assert packs["files"]["status"] == "ok"


def test_safe_mode_runs_no_code_from_the_packs_folder(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A pack's .pth file runs at start-up; one that exits must not lock the user out."""
    site = _bare_packs_site(tmp_path / "data")
    marker = tmp_path / "pth-ran"
    (site / "zz_evil.pth").write_text(
        "import os, sys; open(os.environ['HS_PTH_MARKER'], 'w').close(); sys.exit(7)\n")
    packfactory.write_installed_dist(site, "hs-plain", "[hearthside.plugins]\nplain = hs_plain\n",
                                     "from hearthside import hookimpl\n")
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "HS_PTH_MARKER": str(marker)}
    proc = run_cli("--safe-mode", "plugins", "list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    packs = {r["name"]: r for r in json.loads(proc.stdout)}
    assert packs["plain"]["status"] == "blocked" and "safe mode" in packs["plain"]["error"]
    assert not marker.exists()
    proc = run_cli("plugins", "list", "--json", env=env)  # normal start: the .pth runs and exits
    assert marker.exists()
    assert proc.returncode == 0, proc.stderr
    packs = {r["name"]: r for r in json.loads(proc.stdout)}
    assert packs["plain"]["status"] == "ok" and packs["files"]["status"] == "ok"


def test_a_block_list_written_by_hand_as_one_string_blocks_that_pack(run_cli, app_paths) -> None:  # type: ignore[no-untyped-def]
    app_paths.config_dir.mkdir(parents=True, exist_ok=True)
    (app_paths.config_dir / "settings.toml").write_text('[plugins]\nblocked = "files"\n')
    proc = run_cli("plugins", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    packs = {r["name"]: r for r in json.loads(proc.stdout)}
    assert packs["files"]["status"] == "blocked"
    assert packs["searxng"]["status"] == "ok"
