"""The pack's entry point: registers the bundled skills folder."""

from __future__ import annotations

from pathlib import Path

from hearthside.plugin import RegisterSkills, hookimpl

SKILLS_DIR = Path(__file__).parent / "skills"


@hookimpl
def hearthside_skills(register: RegisterSkills) -> None:
    """Register ``skills/`` (one folder per skill, each with a SKILL.md)."""
    register(SKILLS_DIR)
