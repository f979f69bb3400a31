"""ToolSearch, the Skill tool and the catalog's mode projection over pack tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hearthside.core.hosttools import HYDRATED_SERVICE, make_skill_tool, make_tool_search
from hearthside.core.skills import DirectorySkillSource, SkillCatalog
from hearthside.core.tools import Catalog, FunctionTool, PermissionMode, ToolEnv, ToolSpec


class BigTool:
    """A disclosable tool: one line until ToolSearch loads the full spec."""

    read_only = True

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("Weather", "Full weather forecast tool with many options.",
                        {"type": "object", "properties": {"city": {"type": "string"}}})

    @property
    def advertised(self) -> ToolSpec:
        return ToolSpec("Weather", "Weather forecasts (use ToolSearch for details).")

    async def execute(self, args: Any, env: ToolEnv) -> Any:
        return None


def catalog() -> Catalog:
    cat = Catalog()
    cat.register(BigTool(), "weatherpack")
    cat.register(FunctionTool("Edit", "Edit a file.", lambda: "", read_only=False), "files")
    cat.register(make_tool_search(cat), "builtin")
    return cat


def test_tool_search_returns_full_specs_and_records_hydration() -> None:
    cat = catalog()
    env = ToolEnv(services={HYDRATED_SERVICE: set()})
    before = {s.name: s for s in cat.advertised_specs(PermissionMode.DEFAULT, env.services[HYDRATED_SERVICE])}
    assert before["Weather"].description.startswith("Weather forecasts")
    out = asyncio.run(cat.lookup("ToolSearch").execute({"query": "weather"}, env))  # type: ignore[union-attr]
    found = json.loads(out.content)
    assert [f["name"] for f in found] == ["Weather"]
    assert found[0]["parameters"]["properties"]["city"] == {"type": "string"}
    assert env.services[HYDRATED_SERVICE] == {"Weather"}
    after = {s.name: s for s in cat.advertised_specs(PermissionMode.DEFAULT, env.services[HYDRATED_SERVICE])}
    assert after["Weather"].description.startswith("Full weather")


def test_tool_search_excludes_itself_and_respects_plan_mode() -> None:
    cat = Catalog()
    cat.register(FunctionTool("Edit", "Edit a file with tools.", lambda: "", read_only=False), "files")
    ts = make_tool_search(cat, PermissionMode.PLAN)
    cat.register(ts, "builtin")
    out = asyncio.run(ts.execute({"query": "tool"}, ToolEnv()))
    assert "No tool matches" in out.content
    default = make_tool_search(cat)
    found = json.loads(asyncio.run(default.execute({"query": "edit"}, ToolEnv())).content)
    assert [f["name"] for f in found] == ["Edit"]
    assert asyncio.run(default.execute({"query": ""}, ToolEnv())).is_error


def test_mode_projection_hides_mutating_pack_tools_in_plan_mode() -> None:
    cat = catalog()
    assert {t.spec.name for t in cat.available(PermissionMode.PLAN)} == {"Weather", "ToolSearch"}
    assert "Edit" in {t.spec.name for t in cat.available(PermissionMode.ACCEPT_EDITS)}


def _skills(tmp_path: Path) -> SkillCatalog:
    d = tmp_path / "tidy"
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy notes.\nallowed-tools: Read Edit\n"
                                "compatibility: any\n---\nStep one.\n")
    (d / "references" / "style.md").write_text("STYLE GUIDE")
    (d / "logo.bin").write_bytes(b"\x00\xff\x00")
    return SkillCatalog([DirectorySkillSource([tmp_path], "user")])


def test_skill_tool_lists_skills_and_loads_a_body(tmp_path: Path) -> None:
    tool = make_skill_tool(_skills(tmp_path))
    assert "- tidy: Tidy notes." in tool.spec.description
    out = asyncio.run(tool.execute({"name": "tidy"}, ToolEnv()))
    assert not out.is_error
    assert out.content.startswith("# Skill: tidy\n\nStep one.")
    assert "references/style.md" in out.content
    assert "advice only, not a permission" in out.content and "Read, Edit" in out.content


def test_skill_tool_reads_assets_by_logical_name_only(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("SECRET")
    tool = make_skill_tool(_skills(tmp_path))
    ok = asyncio.run(tool.execute({"name": "tidy", "asset": "references/style.md"}, ToolEnv()))
    assert ok.content == "STYLE GUIDE"
    for bad in ("../outside.txt", "/etc/passwd"):
        out = asyncio.run(tool.execute({"name": "tidy", "asset": bad}, ToolEnv()))
        assert out.is_error and "SECRET" not in out.content
    binary = asyncio.run(tool.execute({"name": "tidy", "asset": "logo.bin"}, ToolEnv()))
    assert binary.is_error and "binary" in binary.content
    missing = asyncio.run(tool.execute({"name": "nope"}, ToolEnv()))
    assert missing.is_error and "no skill named 'nope'" in missing.content


class PresentPlan:
    """A plan-only tool: registered everywhere, offered only in plan mode."""

    read_only = False
    plan_only = True

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("PresentPlan", "Show the plan to the user for approval.")

    async def execute(self, args: Any, env: ToolEnv) -> Any:
        return None


def test_plan_only_tools_are_offered_only_in_plan_mode() -> None:
    cat = catalog()
    cat.register(PresentPlan(), "builtin")
    offered = {m: {s.name for s in cat.advertised_specs(m)} for m in PermissionMode}
    assert offered[PermissionMode.PLAN] == {"Weather", "ToolSearch", "PresentPlan"}
    for mode in (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS):
        assert offered[mode] == {"Weather", "Edit", "ToolSearch"}
    assert "PresentPlan" in cat  # registered in every mode; only the projection hides it
