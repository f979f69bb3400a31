"""Removing an installed distribution from the packs venv by its RECORD, without running code.

Why not ``pip uninstall``: pip driven with ``--python <packs venv>`` starts that venv's
interpreter, whose ``site`` module executes every ``.pth`` file in it — so a pack shipping
``import os; os._exit(0)`` in a ``.pth`` stops pip before it removes anything, and pip's exit
status 0 made Hearthside report success while the files stayed. Running pip with ``-S`` or
``-I`` is not enough (pip's respawn under ``--python`` would still start the venv's own
interpreter normally). So Hearthside reads the wheel's ``RECORD`` (plain CSV in the
``.dist-info`` folder, the list of every file the install wrote) and deletes those files
itself: no interpreter is started and no pack code runs, in safe mode or not. Success is
reported only after checking that every listed file is gone.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
from pathlib import Path


class RemovalError(Exception):
    """The distribution could not be (fully) removed; the message names what is left."""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def record_paths(dist: md.Distribution, env_dir: Path) -> list[Path]:
    """Every file the distribution's RECORD lists, as absolute paths (links not followed).

    A RECORD entry outside the packs venv (``../../../../etc/x``) is refused outright: a
    hostile RECORD must not turn removal into deleting the user's files."""
    files = dist.files
    info_dir = getattr(dist, "_path", None)
    if files is None or info_dir is None:
        raise RemovalError(
            f"{dist.metadata['Name']} has no RECORD file listing what it installed, so Hearthside "
            f"cannot remove it safely; delete its folders from {env_dir} by hand"
        )
    env = Path(os.path.abspath(env_dir))
    out: list[Path] = []
    for f in files:
        p = Path(os.path.normpath(os.path.abspath(str(dist.locate_file(f)))))
        if not _inside(p, env):
            raise RemovalError(
                f"{dist.metadata['Name']}'s RECORD lists {p}, which is outside the packs folder "
                f"{env}; nothing was removed"
            )
        out.append(p)
    return out


def remove_distribution(dist: md.Distribution, site_dir: Path, env_dir: Path) -> list[Path]:
    """Delete every file of ``dist`` (from its RECORD), its compiled ``.pyc`` files, the folders
    that became empty and the ``.dist-info`` folder. Returns the removed paths; raises
    :class:`RemovalError` naming what is left when something could not be removed."""
    paths = record_paths(dist, env_dir)
    info_dir = Path(os.path.abspath(str(getattr(dist, "_path", ""))))
    removed: list[Path] = []
    folders: set[Path] = set()
    for p in paths:
        extra = []
        if p.suffix == ".py":  # compiled copies pip would have removed too
            cache = p.parent / "__pycache__"
            if cache.is_dir():
                extra = [c for c in cache.glob(f"{p.stem}.*.pyc")]
                folders.add(cache)
        for q in (p, *extra):
            try:
                q.unlink()
                removed.append(q)
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                shutil.rmtree(q, ignore_errors=True)
            except OSError as exc:
                raise RemovalError(f"could not delete {q}: {exc.strerror or exc}") from None
        folders.add(p.parent)
    if info_dir.is_dir() and _inside(info_dir, Path(os.path.abspath(site_dir))):
        shutil.rmtree(info_dir, ignore_errors=True)
    _prune_empty(folders, Path(os.path.abspath(site_dir)), Path(os.path.abspath(env_dir)))
    left = [p for p in [*paths, info_dir] if os.path.lexists(p)]
    if left:
        raise RemovalError(
            f"{len(left)} file(s) of {dist.metadata['Name']} are still there (first: {left[0]}); "
            "check the folder's permissions and try again"
        )
    return removed


def _prune_empty(folders: set[Path], site_dir: Path, env_dir: Path) -> None:
    """Remove folders left empty, deepest first, never the site folder or above it."""
    stop = {site_dir, env_dir, site_dir.parent, env_dir / "bin", env_dir / "Scripts"}
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        cur = folder
        while _inside(cur, env_dir) and cur not in stop:
            try:
                cur.rmdir()
            except OSError:
                break
            cur = cur.parent
