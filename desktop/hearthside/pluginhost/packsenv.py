"""The user's packs location: a small virtual environment of its own, outside the app.

Why a venv and not ``pip install --target``: ``--target`` leaves no record pip can uninstall
from, while a venv is an ordinary pip environment (install, upgrade and uninstall all work, and
``importlib.metadata`` finds its ``.dist-info`` folders). It lives in the user's data folder, so
reinstalling or upgrading Hearthside never touches it.

The venv is created without pip; Hearthside's own pip drives it with ``pip --python``. A
``.pth`` file in it lists the app's own site folders, so pip sees Hearthside and its
dependencies as already installed (the version pins hold, nothing is installed twice) while
pip's uninstall refuses to touch anything outside the packs venv. At start Hearthside appends
the venv's site folder to ``sys.path`` *after* its own, so a pack can never replace a library
the app depends on.
"""

from __future__ import annotations

import importlib
import logging
import os
import site
import sys
import sysconfig
import venv
from pathlib import Path

HOST_PTH = "_hearthside_host.pth"

log = logging.getLogger(__name__)


class PacksEnv:
    """The packs venv under ``root`` (``app.paths.packs_dir``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.env_dir = self.root / "env"

    @property
    def site_dir(self) -> Path:
        if os.name == "nt":
            return self.env_dir / "Lib" / "site-packages"
        v = sys.version_info
        return self.env_dir / "lib" / f"python{v.major}.{v.minor}" / "site-packages"

    @property
    def python(self) -> Path:
        if os.name == "nt":
            return self.env_dir / "Scripts" / "python.exe"
        return self.env_dir / "bin" / "python"

    def exists(self) -> bool:
        return self.site_dir.is_dir()

    def activate(self) -> bool:
        """Put the packs venv on ``sys.path`` (after the app's own folders). Idempotent.

        ``addsitedir`` runs the ``.pth`` files packs installed (editable installs need them),
        and such a line may raise anything, even ``SystemExit``: the folder then goes on the
        path without the rest of its ``.pth`` lines, and Hearthside carries on. Safe mode
        never calls this, so a bad ``.pth`` cannot stop the user from uninstalling its pack.
        """
        if not self.exists():
            return False
        site_str = str(self.site_dir)
        if site_str not in sys.path:
            try:
                site.addsitedir(site_str)
            except BaseException as exc:  # noqa: BLE001 - a pack's .pth ran code that raised
                log.warning("a .pth file in %s failed (%r); its packs may not load", site_str, exc)
                if site_str not in sys.path:
                    sys.path.append(site_str)
            importlib.invalidate_caches()
        return True

    def search_path(self) -> list[str]:
        """``sys.path`` plus the packs folder, to *list* packs without importing from them."""
        site_str = str(self.site_dir)
        return sys.path if site_str in sys.path else [*sys.path, site_str]

    def ensure(self) -> None:
        """Create the venv when missing (or built for another Python) and refresh the host link.

        In a PyInstaller bundle there is no interpreter to make a venv from: the bundled pip
        installs with ``--prefix`` into the same ``lib/pythonX.Y/site-packages`` folder, so
        only that folder is made (and a venv a source install made earlier is used as it is).
        """
        if getattr(sys, "frozen", False):
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.site_dir.mkdir(parents=True, exist_ok=True)
            return
        if not (self.exists() and self.python.exists()):
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._drop_dangling_links()
            venv.EnvBuilder(with_pip=False, clear=False, symlinks=os.name != "nt").create(self.env_dir)
        self.site_dir.mkdir(parents=True, exist_ok=True)
        lines = [p for p in host_site_dirs() if Path(p).resolve() != self.site_dir.resolve()]
        (self.site_dir / HOST_PTH).write_text("\n".join(lines) + "\n", encoding="utf-8")


    def _drop_dangling_links(self) -> None:
        """Remove interpreter links whose target is gone (the Python Hearthside runs on was
        upgraded or moved). ``venv`` never replaces an existing link, so without this the
        packs venv would keep pointing at nothing; its installed packs are kept either way."""
        bindir = self.python.parent
        if not bindir.is_dir():
            return
        for entry in bindir.iterdir():
            if entry.is_symlink() and not entry.exists():
                entry.unlink()


def host_site_dirs() -> list[str]:
    """The running app's own library folders, in import order."""
    out: list[str] = []
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p and p not in out and os.path.isdir(p):
            out.append(p)
    for p in sys.path:
        if p and p.endswith(("site-packages", "dist-packages")) and p not in out and os.path.isdir(p):
            out.append(p)
    return out
