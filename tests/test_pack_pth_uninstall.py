"""Issue 9 hole 9: a pack shipping a ``.pth`` that runs ``import os; os._exit(0)`` cannot stop
its own removal. ``--safe-mode plugins uninstall`` removes it without running any pack code (pip
driven with ``--python <packs venv>`` would start that venv's interpreter, which runs the
``.pth`` and exits 0 before removing anything), and success is reported only when the files
are gone. A real wheel built by tests/packfactory.py, installed with real pip."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import packfactory

PTH = "hs_pth_trap.pth"
PTH_LINE = "import os; os._exit(0)\n"


def _pth_wheel() -> Path:
    """hs-pth 1.0.0: an ordinary pack whose wheel also puts a ``.pth`` at the top of
    site-packages (listed in its RECORD, as a real wheel would)."""
    root = packfactory.workdir() / "pth"
    proj = packfactory.write_project(root / "src", "hs-pth", "pthpack", "VALUE = 1\n", {})
    packfactory.pip_wheel([proj], root / "plain")
    plain = next((root / "plain").glob("hs_pth-1.0.0-*.whl"))
    out = root / plain.name
    digest = base64.urlsafe_b64encode(hashlib.sha256(PTH_LINE.encode()).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                data += f"{PTH},sha256={digest},{len(PTH_LINE)}\n".encode()
            dst.writestr(item, data)
        dst.writestr(PTH, PTH_LINE)
    return out


def test_safe_mode_uninstall_removes_a_pack_whose_pth_exits_without_running_it(  # type: ignore[no-untyped-def]
    run_cli, app_paths
) -> None:
    from hearthside.pluginhost.packsenv import PacksEnv

    env = PacksEnv(app_paths.packs_dir)
    env.ensure()
    proc = packfactory.pip_into(env.python, "install", "--no-deps", "--no-index", str(_pth_wheel()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    site = env.site_dir
    assert (site / PTH).exists() and (site / "hs_pth" / "__init__.py").exists()

    # The trap works: the packs venv's interpreter exits 0 at start, before doing anything.
    probe = packfactory.pip_into(env.python, "list")
    assert probe.returncode == 0 and "hs-pth" not in probe.stdout

    proc = run_cli("--safe-mode", "plugins", "uninstall", "hs-pth")
    assert proc.returncode == 0, proc.stderr
    assert "removed hs-pth 1.0.0" in proc.stdout
    assert not (site / PTH).exists()
    assert not (site / "hs_pth").exists()
    assert not list(site.glob("hs_pth-*.dist-info"))
    # Hearthside's own link to its libraries is not the pack's and stays.
    assert (site / "_hearthside_host.pth").exists()
    listed = run_cli("--safe-mode", "plugins", "list", "--json")
    assert "pthpack" not in listed.stdout


def test_a_record_pointing_outside_the_packs_folder_removes_nothing(  # type: ignore[no-untyped-def]
    run_cli, app_paths, tmp_path: Path
) -> None:
    from hearthside.pluginhost.packsenv import PacksEnv

    env = PacksEnv(app_paths.packs_dir)
    env.ensure()
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    packfactory.write_installed_dist(env.site_dir, "hs-evil-record", "[hearthside.plugins]\nevil = hs_evil_record\n")
    info = next(env.site_dir.glob("hs_evil_record-*.dist-info"))
    rel = os.path.relpath(victim, env.site_dir)  # ../../../../precious.txt, as a hostile RECORD has it
    (info / "RECORD").write_text(f"{info.name}/METADATA,,\n{rel},,\n")
    proc = run_cli("--safe-mode", "plugins", "uninstall", "hs-evil-record")
    assert proc.returncode == 1 and "outside the packs folder" in proc.stderr
    assert victim.read_text() == "keep me"
    assert info.is_dir()
