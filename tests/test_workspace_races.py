"""Hole 13a of issue 9: a folder swapped for a link between the check and the open cannot
lead Read (or Write) outside the workspace.

Another *process* swaps ``ws/d`` between a real folder and a link to a folder outside the
workspace as fast as it can, while this process resolves and reads ``d/f.txt`` (and creates
files under ``d/``) in a bounded loop. The old code checked the resolved path and then opened
it by name, following the link: thousands of reads returned the outside file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hearthside_files.workspace import Workspace, WorkspaceError

SWAPPER = textwrap.dedent('''
    import os, shutil, sys, time
    ws = sys.argv[1]
    end = time.monotonic() + float(sys.argv[2])
    d, real, link = (os.path.join(ws, n) for n in ("d", "real_d", "link_d"))
    while time.monotonic() < end:
        for src, dst in ((real, d), (d, real), (link, d), (d, link)):
            try:
                os.rename(src, dst)
            except OSError:
                if os.path.isdir(d) and not os.path.islink(d) and os.path.isdir(real):
                    shutil.rmtree(d, ignore_errors=True)  # a folder Write made while d was absent
''')


def test_a_folder_swapped_for_a_link_never_leads_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "real_d").mkdir(parents=True)
    (ws / "real_d" / "f.txt").write_text("inside\n")
    (outside / "d").mkdir(parents=True)
    (outside / "d" / "f.txt").write_text("SECRET outside the workspace\n")
    (ws / "link_d").symlink_to(outside / "d")
    space = Workspace(ws)
    racer = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), "8"])
    escapes = reads = refused = created = 0
    try:
        time.sleep(0.2)
        end = time.monotonic() + 6
        n = 0
        while time.monotonic() < end and n < 200_000:
            n += 1
            try:
                data, _ = space.read(space.resolve("d/f.txt"))
                reads += 1
                escapes += b"SECRET" in data
            except (WorkspaceError, OSError):  # OSError: how the old code failed some races
                refused += 1
            if n % 10 == 0:
                try:
                    space.create(space.resolve(f"d/new-{n}.txt"), b"x")
                    created += 1
                except (WorkspaceError, OSError):
                    pass
    finally:
        racer.kill()
        racer.wait()
    written_outside = [p.name for p in (outside / "d").iterdir() if p.name != "f.txt"]
    print(f"attempts={n} reads={reads} refused={refused} created={created}")
    assert reads > 100, "the race never let a read through: the test proves nothing"
    assert escapes == 0, f"{escapes} reads returned the file outside the workspace"
    assert written_outside == []
    assert os.path.isdir(outside / "d")
