"""Shared test setup: every test gets its own HOME and XDG dirs; Qt runs offscreen.

Nothing in the test suite may touch the real home. Fixtures here are the common ground the
unit, integration and UI tests stand on; the keyring tests additionally need the private
D-Bus session that ``scripts/run-tests.sh`` (``make test``) starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture
def app_paths(isolated_home: Path):  # type: ignore[no-untyped-def]
    from hearthside.app.paths import AppPaths

    return AppPaths.from_environment()


@pytest.fixture
def app_context(isolated_home: Path):  # type: ignore[no-untyped-def]
    from hearthside.app.context import AppContext

    return AppContext()


@pytest.fixture
def run_cli(isolated_home: Path):  # type: ignore[no-untyped-def]
    """Run the real ``hearthside`` console script in a subprocess with the test's env."""
    import subprocess

    def run(*args: str, input: str | None = None, timeout: float = 120, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "hearthside", *args],
            capture_output=True, text=True, input=input, timeout=timeout, env=full_env, check=False,
        )

    return run


def have_secret_service() -> bool:
    """True inside the test D-Bus session with GNOME Keyring (``make test`` provides it)."""
    return bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS"))


@pytest.fixture
def secret_service() -> Iterator[None]:
    if not have_secret_service():
        pytest.skip("needs the D-Bus session with GNOME Keyring that 'make test' starts")
    yield
