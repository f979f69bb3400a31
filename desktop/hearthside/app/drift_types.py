"""The drift guard's values: what is watched, what a file's state is, what is announced.

Kept apart from the service (:mod:`hearthside.app.drift`) and the live watcher
(:mod:`hearthside.app.drift_live`) so that each of those imports this module and neither
imports the other's internals; the CLI, headless mode, the tray and the review window use
these types through ``hearthside.app.drift``, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

SKILLS = "skills"
SKILL_FILE = "SKILL.md"
#: A persona's specialists (agent definition files, ``agents/<name>.md``): persona files too.
AGENTS = "agents"
AGENT_SUFFIX = ".md"


def is_agent_file_name(name: str) -> bool:
    """Whether a watched name is a persona's agent file (``agents/x.md``, one level deep)."""
    parts = name.split("/")
    return (len(parts) == 2 and parts[0] == AGENTS and parts[1].endswith(AGENT_SUFFIX)
            and not parts[1].startswith(".") and len(parts[1]) > len(AGENT_SUFFIX))


#: A specialist's read-only memory in the persona folder (``memory: persona``):
#: ``agents/<name>/MEMORY.md``. Hearthside only reads it (its head goes into the specialist's
#: system prompt), so it is a persona file like the agent file beside it: watched, approved.
AGENT_MEMORY = "MEMORY.md"


def is_agent_memory_name(name: str) -> bool:
    """Whether a watched name is a specialist's memory file (``agents/<name>/MEMORY.md``)."""
    parts = name.split("/")
    return (len(parts) == 3 and parts[0] == AGENTS and parts[2] == AGENT_MEMORY
            and bool(parts[1]) and not parts[1].startswith("."))


def is_agent_name(name: str) -> bool:
    """An agent file or a specialist's memory file: the persona files of the specialists."""
    return is_agent_file_name(name) or is_agent_memory_name(name)
#: Where a Hermes home keeps USER.md and MEMORY.md (see core.compose.HERMES_MEMORIES).
MEMORIES = "memories"


@dataclass(frozen=True)
class FileStatus:
    """One watched file's state against its approved copy.

    ``link_target`` is where the file really is when a link leads it outside its folder (a
    bootstrap file, a skill, the soul); such a file is used only once that link is approved.
    """

    persona: str  # "" for the user soul
    file: str  # "soul.md", "SOUL.md", "skills/NAME/SKILL.md", "agents/NAME.md"
    path: str
    state: str
    baseline: str  # approved fingerprint, "" when none (or damaged)
    current: str  # current fingerprint, "" when unusable or gone
    findings: tuple[str, ...] = ()
    reason: str = ""
    link_target: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "state": self.state,
            "baseline": self.baseline,
            "current": self.current,
            "findings": list(self.findings),
            "persona": self.persona,
            "file": self.file,
            "reason": self.reason,
            "link_target": self.link_target,
        }


@dataclass(frozen=True)
class DriftEvent:
    """A settled change of a watched file: its state, or its content (a new fingerprint).

    The first five fields are the stable API the CLI, headless mode and the tray use; the rest
    were added later (with defaults, so older constructors still work). ``fingerprint`` is the
    current content's SHA-256 ("" when the file is unusable or gone); ``is_link`` and
    ``link_target`` say the file leads outside its folder through a link, and where.
    """

    persona: str
    file: str
    path: str
    state: str
    summary: str
    fingerprint: str = ""
    baseline: str = ""
    is_link: bool = False
    link_target: str = ""
    findings: tuple[str, ...] = ()
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"persona": self.persona, "file": self.file, "path": self.path,
                "state": self.state, "summary": self.summary, "fingerprint": self.fingerprint,
                "baseline": self.baseline, "is_link": self.is_link, "link_target": self.link_target,
                "findings": list(self.findings), "reason": self.reason}


@dataclass(frozen=True)
class HeldBack:
    """What a new session leaves out until the user approves it, and which links it may follow.

    ``files``/``skills``/``soul`` are held back by strict mode (drifted or new). ``link_skills``
    are persona skills leading outside the folder through a link nobody approved (always held,
    whatever the mode), with the reason; ``links`` maps bootstrap names to the outside targets
    the user approved, which composing may follow.
    """

    files: frozenset[str] = frozenset()  # bootstrap names, e.g. "SOUL.md"
    skills: frozenset[str] = frozenset()  # persona skill names (folders under skills/)
    soul: bool = False  # the user soul (soul.md)
    links: Mapping[str, str] = field(default_factory=dict)
    link_skills: Mapping[str, str] = field(default_factory=dict)
    agents: frozenset[str] = frozenset()  # agent files, e.g. "agents/reviewer.md" (strict mode)

    def notes(self) -> list[str]:
        """One line per held-back item, for the session's notes."""
        names = sorted(self.files) + [f"skill {n}" for n in sorted(self.skills)]
        names += [f"specialist file {n}" for n in sorted(self.agents)]
        names += ["your soul (soul.md)"] if self.soul else []
        out = [f"{n} left out: it changed since you approved it (strict mode)" for n in names]
        out += [f"skill {n} left out: {why}" for n, why in sorted(self.link_skills.items())
                if n not in self.skills]
        return out

    def skill_reasons(self) -> dict[str, str]:
        """Every persona skill folder the session must not offer, with why (for the catalog's
        diagnostics; the session notes say it in :meth:`notes`)."""
        out = dict(self.link_skills)
        out.update({n: "it changed since you approved it (strict mode)" for n in self.skills})
        return out

    @property
    def all_skills(self) -> frozenset[str]:
        """Every persona skill the session must not offer."""
        return self.skills | frozenset(self.link_skills)


@dataclass(frozen=True)
class Unit:
    """A watched unit: the user soul (one file) or a persona folder."""

    key: str
    persona: str  # "" for the soul
    root: Path  # the folder (for the soul: the folder holding soul.md)
    soul_file: Path | None = None

    @property
    def is_soul(self) -> bool:
        return self.soul_file is not None

    def path_of(self, name: str) -> Path:
        """Where a watched name of this unit lives."""
        return self.soul_file if self.soul_file is not None else self.root / name


@dataclass(frozen=True)
class Observation:
    """One settle's look at a file: its status plus the two texts a summary compares.

    Produced by a single read of the file, so the live watcher announces what the service
    judged without reading the file a second time. ``approved_link`` is the outside target the
    approval recorded ("" when none).
    """

    status: FileStatus
    approved: str | None  # the approved text; None when there is none (or it is damaged)
    current: str | None  # the current clean text; None when the file is unusable or gone
    approved_link: str = ""


@dataclass(frozen=True)
class WatchRoots:
    """Folders the live watcher watches besides the units: where personas, approvals and the
    settings (which name added folders) live."""

    personas_dir: Path
    baselines_dir: Path
    settings_file: Path
