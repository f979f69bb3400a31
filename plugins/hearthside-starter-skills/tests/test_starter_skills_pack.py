"""hearthside-starter-skills: the pack loads and every bundled skill is valid and clean."""

from __future__ import annotations

from hearthside.core.skills import ORIGIN_PACK, DirectorySkillSource, SkillCatalog, scan_skill
from hearthside.pluginhost.host import PackHost, discover
from hearthside_starter_skills.plugin import SKILLS_DIR


def test_the_pack_registers_its_three_skills() -> None:
    host = PackHost()
    [report] = host.load(discover(only_dists=["hearthside-starter-skills"]))
    assert report.status == "ok", report.error
    assert report.contributes["skills"] == ["daily-briefing", "heartbeat-checklist", "tidy-notes"]
    assert report.warnings == []


def test_every_skill_is_valid_and_passes_the_injection_scan() -> None:
    src = DirectorySkillSource([SKILLS_DIR], ORIGIN_PACK, "starter-skills")
    assert src.diagnostics == []
    for doc in src.docs():
        assert scan_skill(doc) is None, doc.meta.name
        assert doc.meta.license == "MIT"
        assert len(doc.meta.description) <= 1024


def test_tidy_notes_ships_its_style_sheet_as_an_asset() -> None:
    cat = SkillCatalog([DirectorySkillSource([SKILLS_DIR], ORIGIN_PACK, "starter-skills")])
    assert [a.name for a in cat.assets("tidy-notes")] == ["references/style.md"]
    assert b"## To do" in cat.read_asset("tidy-notes", "references/style.md")
    assert cat.meta("tidy-notes").allowed_tools == ("Read", "Edit")
