"""What every test of the checkout stands on, Hearthside's own (``tests/``) and the packs'
(``plugins/*/tests``) alike: no test ever touches the real home.

The packs' tests have no ``tests/conftest.py`` above them, so the isolation lives here, at the
root, where pytest loads it for both.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME and every XDG dir at a fresh temporary folder for this test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(home / "run"))
    (home / "run").mkdir(mode=0o700)
    for var in ("HEARTHSIDE_SAFE_MODE", "HEARTHSIDE_MODEL_BASE_URL", "HEARTHSIDE_MODEL",
                "HEARTHSIDE_MODEL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home
