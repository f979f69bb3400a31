"""core imports no Qt and no adapter library, so its rules stay testable as function calls."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "desktop" / "hearthside" / "core"
FORBIDDEN = {"PySide6", "shiboken6", "keyring", "watchdog", "filelock", "mcp", "httpx", "httpx2",
             "openai", "pluggy", "platformdirs", "jeepney", "secretstorage", "click"}


def test_core_sources_import_nothing_forbidden() -> None:
    bad = []
    files = list(CORE.rglob("*.py"))
    assert files
    for f in files:
        tree = ast.parse(f.read_text(), str(f))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level >= 1:
                pkg = ["hearthside", *f.relative_to(CORE.parent).with_suffix("").parts[:-1]]
                target = pkg[: len(pkg) - (node.level - 1)]
                if target[:2] != ["hearthside", "core"]:
                    bad.append(f"{f.name}: relative import leaves core ({'.' * node.level}{node.module or ''})")
            bad += [f"{f.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert bad == []


def test_importing_core_loads_no_forbidden_module() -> None:
    code = (
        "import sys, importlib, pkgutil, hearthside.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'hearthside.core.'): importlib.import_module(m.name)\n"
        f"bad = sorted(n for n in sys.modules if n.split('.')[0] in {sorted(FORBIDDEN)!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
