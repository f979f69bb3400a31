"""How pip is run for the packs folder: from a source install, or from inside the bundle.

A source install has a real Python with pip: ``python -m pip --python <packs venv>`` drives the
packs venv from outside. A PyInstaller bundle has no Python interpreter beside it, so the frozen
``hearthside`` executable runs its *bundled* pip itself, in a child process (``hearthside
--run-pip ...``, a hidden entry of ``packaging/hearthside_main.py``), installing with
``--prefix`` into the same packs folder. Either way pip never runs inside the app's process.

A bundle cannot build anything (no compiler, no build backends, no interpreter for build
isolation), so it installs wheels only; and a wheel made for another Python or platform can never
load. Both are refused before pip starts, with the reason (:func:`refusal`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Protocol

from .packsenv import PacksEnv

WHEELS_ONLY = "--only-binary=:all:"


def is_frozen() -> bool:
    """True in a PyInstaller bundle (``sys.frozen`` is set by its bootloader)."""
    return bool(getattr(sys, "frozen", False))


class PipRunner(Protocol):
    """Builds the command line that runs pip against the packs folder."""

    wheels_only: bool

    def command(self, args: list[str]) -> list[str]: ...


class VenvPip:
    """Source install: this interpreter's pip, pointed at the packs venv."""

    wheels_only = False

    def __init__(self, env: PacksEnv) -> None:
        self.env = env

    def command(self, args: list[str]) -> list[str]:
        return [sys.executable, "-m", "pip", "--python", str(self.env.python), *args]


class BundledPip:
    """Bundle: the frozen executable runs its bundled pip in a child process, wheels only."""

    wheels_only = True

    def __init__(self, env: PacksEnv, executable: str | None = None) -> None:
        self.env = env
        self.executable = executable or sys.executable

    def command(self, args: list[str]) -> list[str]:
        return [self.executable, "--run-pip", "--packs-prefix", str(self.env.env_dir),
                "--packs-site", str(self.env.site_dir), *args]


def default_runner(env: PacksEnv) -> PipRunner:
    return BundledPip(env) if is_frozen() else VenvPip(env)


def refusal(spec: str, wheels_only: bool) -> str | None:
    """Why ``spec`` cannot be installed here, in one sentence, or None when pip may try.

    Checks what can be known without pip: a local file or folder that is not a wheel (in a
    bundle), and a wheel whose tags fit no Python/platform this Hearthside runs on.
    """
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    name = spec.rsplit("/", 1)[-1].split("#", 1)[0].split("?", 1)[0]
    is_url = "://" in spec
    local = not is_url and os.path.exists(spec)
    if name.endswith(".whl"):
        try:
            _, _, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename as exc:
            return f"{name} is not a valid wheel file name ({exc})"
        if tags.isdisjoint(set(sys_tags())):
            wanted = ", ".join(sorted(str(t) for t in tags))
            v = sys.version_info
            return (f"{name} is built for {wanted}, but this Hearthside runs Python {v.major}.{v.minor} "
                    f"on {_platform()}; get the pack's wheel for this Python and platform (or a "
                    "py3-none-any wheel)")
        return None
    if wheels_only and (local or is_url or spec.startswith(("git+", "file:"))):
        what = "a folder" if local and Path(spec).is_dir() else "a source distribution"
        return (f"{spec} is {what}, which would have to be built first; the bundled Hearthside "
                "installs ready-built wheels (.whl) only: ask the pack's author for a wheel, or build "
                "one with `pip wheel --no-deps` on a computer with Python")
    return None


def _platform() -> str:
    import sysconfig

    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def explain_wheels_only(error: str) -> str:
    """pip's "no matching distribution" in a bundle usually means "only an sdist exists"."""
    if "matching distribution" in error or "Could not find a version" in error:
        return (f"{error} (the bundled Hearthside installs wheels only, so a pack published only as "
                "source cannot be installed from here)")
    return error


def run_bundled_pip(argv: list[str]) -> int:
    """The ``hearthside --run-pip`` child: run the bundled pip on the packs folder.

    ``--packs-prefix DIR`` and ``--packs-site DIR`` come first. The packs site goes on
    ``sys.path`` so pip sees (and can upgrade or remove) the packs already there, while the
    bundle's own distributions satisfy every pin on Hearthside and its libraries. Installs get
    ``--prefix`` (the files land in ``<prefix>/lib/pythonX.Y/site-packages``, the folder the app
    loads packs from) and are wheels only.
    """
    prefix = site = None
    while argv and argv[0] in ("--packs-prefix", "--packs-site") and len(argv) >= 2:
        if argv[0] == "--packs-prefix":
            prefix = argv[1]
        else:
            site = argv[1]
        argv = argv[2:]
    if site:
        Path(site).mkdir(parents=True, exist_ok=True)
        sys.path.append(site)
    if argv[:1] == ["install"] and prefix:
        argv = ["install", "--prefix", prefix, WHEELS_ONLY, "--no-warn-script-location",
                "--no-compile", *argv[1:]]
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    os.environ.setdefault("PIP_ROOT_USER_ACTION", "ignore")  # the packs folder is the user's own
    from pip._internal.cli.main import main as pip_main

    return int(pip_main(argv) or 0)
