"""The layers of ARCHITECTURE.md, checked on the source: who may import what.

- ``core`` imports no Qt, no adapter library and no other Hearthside layer, so its rules stay
  testable as plain function calls;
- each outside library has one home: only ``adapters/`` imports watchdog, keyring, filelock,
  jeepney, mcp and httpx (one adapter per library), only ``ui/`` imports PySide6;
- ``cli/`` and ``ui/`` go through ``app/`` (they never import an adapter), so the tray and the CLI
  share one policy (ui -> app -> adapters: desktop notifications reach the tray through
  ``app.notify.DesktopNotices``, not the D-Bus adapter).

Imports are read with ``ast`` (inside functions too), and a second check imports all of core in
a fresh interpreter to catch what a static read cannot (a library loaded by a helper).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "desktop" / "hearthside"
CORE = PKG / "core"
FORBIDDEN = {"PySide6", "shiboken6", "keyring", "watchdog", "filelock", "mcp", "httpx", "httpx2",
             "openai", "pluggy", "platformdirs", "jeepney", "secretstorage", "click"}
#: Libraries that only ``adapters/`` may import (one adapter per library).
ADAPTER_LIBRARIES = {"watchdog", "keyring", "filelock", "jeepney", "secretstorage", "mcp", "httpx",
                     "httpx2"}
#: Libraries that only ``ui/`` may import.
UI_LIBRARIES = {"PySide6", "shiboken6"}


def _imports(path: Path, at: Path | None = None) -> Iterator[str]:
    """Every module ``path`` imports, as an absolute dotted name; relative imports are resolved
    as if the file sat at ``at`` (default: where it is)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ["hearthside", *(at or path).relative_to(PKG).with_suffix("").parts[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                kept = package[: len(package) - (node.level - 1)]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            yield base
            # ``from .. import adapters`` names the layer in the imported names
            yield from (f"{base}.{a.name}" for a in node.names if a.name != "*")


def _violations(path: Path, at: Path | None = None) -> list[str]:
    where = (at or path).relative_to(PKG)
    layer = where.parts[0] if len(where.parts) > 1 else ""
    bad = []
    for name in sorted(set(_imports(path, at))):
        top = name.split(".")[0]
        if layer == "core":
            if top in FORBIDDEN:
                bad.append(f"{where}: core imports {name}")
            if top == "hearthside" and not name.startswith("hearthside.core"):
                bad.append(f"{where}: core imports another layer ({name})")
        if top in ADAPTER_LIBRARIES and layer != "adapters":
            bad.append(f"{where}: only adapters/ may import {top} (imports {name})")
        if top in UI_LIBRARIES and layer != "ui":
            bad.append(f"{where}: only ui/ may import {top} (imports {name})")
        if layer in ("cli", "ui") and name.startswith("hearthside.adapters"):
            bad.append(f"{where}: {layer}/ goes through app/, not {name}")
    return bad


def test_every_layer_imports_only_what_it_may() -> None:
    files = sorted(PKG.rglob("*.py"))
    assert len(files) > 50
    assert [v for f in files for v in _violations(f)] == []


def test_the_layer_check_catches_each_kind_of_violation(tmp_path: Path) -> None:
    """The check can fail: relative imports, imports inside functions and each rule are seen."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..adapters.locks import lock_for\n    import filelock\n"
                     "    from PySide6 import QtCore\n    from .. import app\n")
    as_cli = set(_violations(probe, at=PKG / "cli" / "probe.py"))
    assert {"cli/probe.py: only ui/ may import PySide6 (imports PySide6)",
            "cli/probe.py: only adapters/ may import filelock (imports filelock)",
            "cli/probe.py: cli/ goes through app/, not hearthside.adapters.locks"} <= as_cli
    as_core = set(_violations(probe, at=PKG / "core" / "probe.py"))
    assert {"core/probe.py: core imports PySide6", "core/probe.py: core imports filelock",
            "core/probe.py: core imports another layer (hearthside.app)"} <= as_core
    assert set(_violations(probe, at=PKG / "ui" / "probe.py")) == {
        "ui/probe.py: only adapters/ may import filelock (imports filelock)",
        "ui/probe.py: ui/ goes through app/, not hearthside.adapters.locks",
        "ui/probe.py: ui/ goes through app/, not hearthside.adapters.locks.lock_for",
    }
    assert _violations(probe, at=PKG / "adapters" / "probe.py") == [
        "adapters/probe.py: only ui/ may import PySide6 (imports PySide6)",
        "adapters/probe.py: only ui/ may import PySide6 (imports PySide6.QtCore)",
    ]


def test_importing_core_loads_no_forbidden_module() -> None:
    code = (
        "import sys, importlib, pkgutil, hearthside.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'hearthside.core.'): importlib.import_module(m.name)\n"
        f"bad = sorted(n for n in sys.modules if n.split('.')[0] in {sorted(FORBIDDEN)!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
