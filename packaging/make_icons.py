"""Write the hicolor icon tree (PNG 16-256 drawn by the app's own icon code, plus the SVG).

    python packaging/make_icons.py OUTDIR      ->  OUTDIR/hicolor/<N>x<N>/apps/hearthside.png
                                                   OUTDIR/hicolor/scalable/apps/hearthside.svg

The PNGs come from ``hearthside.ui.icon.hearth_pixmap`` (Qt, offscreen), so the menu icon and
the tray icon are one drawing and no binary art is kept in the repository.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SIZES = (16, 22, 24, 32, 48, 64, 128, 256)
HERE = Path(__file__).resolve().parent


def main(out: Path) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from hearthside.ui.icon import hearth_pixmap
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    for size in SIZES:
        target = out / "hicolor" / f"{size}x{size}" / "apps" / "hearthside.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not hearth_pixmap(size).save(str(target), "PNG"):
            print(f"could not write {target}", file=sys.stderr)
            return 1
    svg = out / "hicolor" / "scalable" / "apps" / "hearthside.svg"
    svg.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "hearthside.svg", svg)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
