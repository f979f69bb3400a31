"""The code stays lint-clean and ``core`` stays ``mypy --strict`` clean (STYLE.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "desktop", "plugins", "tests",
                          "benchmarks"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_core_is_mypy_strict_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "desktop/hearthside/core"],
                         cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
