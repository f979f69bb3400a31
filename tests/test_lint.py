"""The code stays lint-clean and ``mypy --strict`` clean (STYLE.md).

Neither linter writes a cache into the repository: ruff runs without one and mypy keeps its
cache in the temp folder (one per checkout, so a second run is fast).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The layers (and the first-party packs) checked with ``mypy --strict``: every layer of the app.
STRICT = ["desktop/hearthside/core", "desktop/hearthside/adapters", "desktop/hearthside/pluginhost",
          "desktop/hearthside/app", "desktop/hearthside/ui", "desktop/hearthside/cli", "desktop/hearthside/plugin.py",
          "plugins/hearthside-files/hearthside_files", "plugins/hearthside-searxng/hearthside_searxng",
          "plugins/hearthside-starter-skills/hearthside_starter_skills"]


def _mypy_cache() -> str:
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return str(Path(tempfile.gettempdir()) / f"hearthside-mypy-cache-{tag}")


def test_ruff_is_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "desktop", "plugins",
                          "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_checked_layer_is_mypy_strict_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", _mypy_cache(), *STRICT],
                         cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
