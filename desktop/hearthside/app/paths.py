"""Where Hearthside keeps what on this machine (platformdirs, app name ``hearthside``).

One object answers every "where does X live" question so no module builds paths by hand and
tests can point all of them at temporary folders by setting ``HOME`` and the ``XDG_*`` vars.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "hearthside"


@dataclass(frozen=True)
class AppPaths:
    """The app's folders and well-known files. Nothing here creates anything."""

    config_dir: Path
    data_dir: Path
    state_dir: Path

    @classmethod
    def from_environment(cls) -> AppPaths:
        return cls(
            config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False, roaming=True)),
            data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False, roaming=True)),
            state_dir=Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
        )

    @property
    def soul_file(self) -> Path:
        return self.config_dir / "soul.md"

    @property
    def personas_dir(self) -> Path:
        return self.config_dir / "personas"

    @property
    def user_skills_dir(self) -> Path:
        return self.config_dir / "skills"

    @property
    def user_agents_dir(self) -> Path:
        """The user tier of specialists (agent files ``*.md``)."""
        return self.config_dir / "agents"

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.toml"

    @property
    def mcp_file(self) -> Path:
        return self.config_dir / "mcp.json"

    @property
    def memory_root(self) -> Path:
        return self.data_dir / "memory"

    def memory_dir(self, persona: str) -> Path:
        return self.memory_root / persona

    @property
    def packs_dir(self) -> Path:
        """Where user-installed plugin packs live, outside the app's own environment."""
        return self.data_dir / "packs"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "log"

    @property
    def baselines_dir(self) -> Path:
        return self.state_dir / "baselines"

    @property
    def history_file(self) -> Path:
        return self.state_dir / "notifications.jsonl"

    @property
    def schedule_file(self) -> Path:
        """Per persona: the last check-in slot settled and the last run (see app/checkins.py)."""
        return self.state_dir / "schedule.json"

    @property
    def checkins_file(self) -> Path:
        """The ledger: how every check-in slot ended."""
        return self.state_dir / "checkins.jsonl"

    @property
    def installed_packs_file(self) -> Path:
        return self.state_dir / "installed-packs.json"

    def as_dict(self) -> dict[str, str]:
        return {
            "config_dir": str(self.config_dir),
            "data_dir": str(self.data_dir),
            "state_dir": str(self.state_dir),
            "soul_file": str(self.soul_file),
            "personas_dir": str(self.personas_dir),
            "settings_file": str(self.settings_file),
            "mcp_file": str(self.mcp_file),
            "memory_dir": str(self.memory_root),
            "packs_dir": str(self.packs_dir),
            "log_dir": str(self.log_dir),
            "baselines_dir": str(self.baselines_dir),
        }


def ensure_dir(path: Path) -> Path:
    """Create an app-owned folder (never a persona folder) with private permissions."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
