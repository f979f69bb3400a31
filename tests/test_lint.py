"""The code stays lint-clean and ``mypy --strict`` clean (STYLE.md).

Neither linter writes a cache into the repository: ruff runs without one and mypy keeps its
cache in the temp folder (one per checkout, so a second run is fast).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What ``mypy --strict`` checks: the one list in pyproject.toml, which ``make lint`` uses too.
STRICT: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]


def _mypy_cache() -> str:
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return str(Path(tempfile.gettempdir()) / f"hearthside-mypy-cache-{tag}")


def test_ruff_is_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "desktop", "plugins",
                          "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_strict_list_covers_every_layer_and_pack_and_make_lint_uses_it() -> None:
    """Issue 19 item 6: ``make lint`` checked five layers while this test checked six (``ui/``
    was left out); now both take the list from pyproject.toml, and the list misses nothing."""
    layers = {f"desktop/hearthside/{d.name}" for d in (ROOT / "desktop" / "hearthside").iterdir()
              if (d / "__init__.py").is_file()}
    packs = {str(init.parent.relative_to(ROOT)) for init in ROOT.glob("plugins/*/hearthside_*/__init__.py")}
    assert layers | packs | {"desktop/hearthside/plugin.py"} <= set(STRICT)
    [lint] = re.findall(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    [mypy] = [line for line in lint.splitlines() if "mypy" in line]
    assert mypy.split("#")[0].split() == ["$(VENV)/bin/mypy", "--strict"], mypy  # no list of its own


def test_every_checked_layer_is_mypy_strict_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", _mypy_cache()],
                         cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
