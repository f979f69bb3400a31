"""`make install` / `make uninstall` into a temporary HOME, the launcher and icons, and the pip
runner's refusals (wheels for another Python or platform; sources in a bundle)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tree(root: Path) -> dict[str, str]:
    """Every path under root: 'link -> target', 'file' or 'dir' (what install/uninstall change)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = f"link -> {os.readlink(p)}" if p.is_symlink() else ("dir" if p.is_dir() else "file")
    return out


def _make(target: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin")
    return subprocess.run(["make", "-s", "-C", str(ROOT), target], env=env, capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_install_puts_hearthside_on_the_path_and_in_the_menu_and_uninstall_removes_exactly_that(
    tmp_path: Path,
) -> None:
    home = tmp_path / "hôme with space"
    (home / ".config" / "hearthside" / "personas" / "kip").mkdir(parents=True)
    (home / ".config" / "hearthside" / "personas" / "kip" / "SOUL.md").write_text("Kip is kind.\n")
    (home / ".local" / "share" / "applications").mkdir(parents=True)
    (home / ".local" / "share" / "applications" / "other.desktop").write_text("[Desktop Entry]\n")
    before = _tree(home)

    proc = _make("install", home)
    assert proc.returncode == 0, proc.stderr
    link = home / ".local" / "bin" / "hearthside"
    assert link.is_symlink() and os.readlink(link) == str(ROOT / ".venv" / "bin" / "hearthside")
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert version.stdout.strip().startswith("hearthside ")
    desktop = home / ".local" / "share" / "applications" / "hearthside.desktop"
    text = desktop.read_text()
    assert f'Exec="{link}"' in text and "StartupWMClass=Hearthside" in text and "Icon=hearthside" in text
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 and check.stdout == "", check.stdout
    icons = home / ".local" / "share" / "icons" / "hicolor"
    for size in (16, 22, 24, 32, 48, 64, 128, 256):
        png = icons / f"{size}x{size}" / "apps" / "hearthside.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(png.read_bytes()[16:20], "big") == size  # IHDR width
    assert (icons / "scalable" / "apps" / "hearthside.svg").read_text().lstrip().startswith("<?xml")
    installed = _tree(home)

    again = _make("install", home)  # idempotent
    assert again.returncode == 0, again.stderr
    assert _tree(home) == installed

    gone = _make("uninstall", home)
    assert gone.returncode == 0, gone.stderr
    assert _tree(home) == before  # exactly what install created is gone; the persona and other.desktop stay
    assert _make("uninstall", home).returncode != 0  # nothing installed: says so, removes nothing
    assert _tree(home) == before


def test_install_refuses_to_replace_a_hearthside_command_it_did_not_create(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    mine = home / ".local" / "bin" / "hearthside"
    mine.write_text("#!/bin/sh\necho mine\n")
    icons = tmp_path / "build" / "icons" / "hicolor" / "16x16" / "apps"
    icons.mkdir(parents=True)
    (icons / "hearthside.png").write_bytes(b"png")
    fake = tmp_path / "checkout"
    (fake / ".venv" / "bin").mkdir(parents=True)
    (fake / ".venv" / "bin" / "hearthside").write_text("#!/bin/sh\n")
    (fake / ".venv" / "bin" / "hearthside").chmod(0o755)
    (fake / "packaging").mkdir()
    shutil.copy(ROOT / "packaging" / "hearthside.desktop", fake / "packaging")
    shutil.copytree(tmp_path / "build", fake / "build")
    proc = subprocess.run([str(ROOT / "packaging" / "install.sh"), "--source", str(fake)],
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 1
    assert "exists and is not a link this script made" in proc.stderr
    assert mine.read_text() == "#!/bin/sh\necho mine\n"


def test_the_svg_icon_is_the_same_drawing_as_the_tray_icon(qapp) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.icon import hearth_pixmap
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    drawn = hearth_pixmap(256).toImage().convertToFormat(QImage.Format.Format_ARGB32)
    svg = QImage(256, 256, QImage.Format.Format_ARGB32)
    svg.fill(Qt.GlobalColor.transparent)
    painter = QPainter(svg)
    assert QSvgRenderer(str(ROOT / "packaging" / "hearthside.svg")).render(painter) is None
    painter.end()
    differ = sum(
        1 for y in range(0, 256, 2) for x in range(0, 256, 2)
        if max(abs(getattr(QColor(drawn.pixel(x, y)), c)() - getattr(QColor(svg.pixel(x, y)), c)())
               for c in ("red", "green", "blue", "alpha")) > 40
    )
    assert differ < 64 * 64 * 0.01, f"{differ} of 16384 sampled pixels differ"


# -- the pip runner's refusals (run before pip; the same in a source install and a bundle) --

def test_a_wheel_for_another_python_or_platform_is_refused_with_the_reason() -> None:
    from hearthside.pluginhost.piprunner import refusal

    v = sys.version_info
    other = f"cp{v.major}{v.minor + 1}"
    why = refusal(f"/x/pack-1.0-{other}-{other}-win_amd64.whl", wheels_only=False)
    assert why and f"runs Python {v.major}.{v.minor}" in why and "win_amd64" in why
    assert refusal("/x/pack-1.0-py3-none-any.whl", wheels_only=True) is None
    assert "not a valid wheel file name" in (refusal("/x/not-a-wheel.whl", wheels_only=False) or "")


def test_a_source_pack_is_refused_in_a_bundle_but_not_from_a_source_install(tmp_path: Path) -> None:
    from hearthside.pluginhost.piprunner import refusal

    sdist = tmp_path / "pack-1.0.tar.gz"
    sdist.write_bytes(b"")
    assert refusal(str(sdist), wheels_only=False) is None
    why = refusal(str(sdist), wheels_only=True)
    assert why and "source distribution" in why and "wheels (.whl) only" in why
    assert "is a folder" in (refusal(str(tmp_path), wheels_only=True) or "")
    assert refusal("some-pack", wheels_only=True) is None  # a name: pip looks for a wheel itself


def test_plugins_install_refuses_a_wheel_for_another_platform_before_pip_runs(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    wheel = tmp_path / "hs_alien-1.0-cp39-cp39-macosx_11_0_arm64.whl"
    wheel.write_bytes(b"not even a zip")
    proc = run_cli("plugins", "install", str(wheel))
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert line.startswith("hearthside: Cannot install this pack: hs_alien-1.0-cp39-cp39-macosx_11_0_arm64.whl "
                           "is built for cp39-cp39-macosx_11_0_arm64"), line
    assert "\n" not in line


def _fake_checkout(tmp_path: Path) -> Path:
    """A checkout as ``install.sh --source`` needs it: a ``hearthside`` that says it ran, the
    launcher and an icon."""
    fake = tmp_path / "checkout"
    (fake / ".venv" / "bin").mkdir(parents=True)
    (fake / ".venv" / "bin" / "hearthside").write_text("#!/bin/sh\necho hearthside ran\n")
    (fake / ".venv" / "bin" / "hearthside").chmod(0o755)
    (fake / "packaging").mkdir()
    shutil.copy(ROOT / "packaging" / "hearthside.desktop", fake / "packaging")
    icons = fake / "build" / "icons" / "hicolor" / "16x16" / "apps"
    icons.mkdir(parents=True)
    (icons / "hearthside.png").write_bytes(b"png")
    return fake


def _script(name: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "packaging" / name), *args], env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60, check=False)


def _desktop_string(value: str) -> str:
    """Undo a Desktop Entry string's escapes (\\s \\n \\t \\r \\\\)."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append({"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(value[i + 1], "\\" + value[i + 1]))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _exec_args(value: str) -> list[str]:
    """Split an Exec value into arguments as the Desktop Entry spec says: string escapes first,
    then quoted arguments (\\" \\` \\$ \\\\ inside quotes), "%%" for "%", no other field code."""
    text = _desktop_string(value)
    args: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        cur = []
        if text[i] == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\":
                    assert text[i + 1] in '"`$\\', f"bad escape in {value!r}"
                    i += 1
                cur.append(text[i])
                i += 1
            i += 1
        else:
            while i < len(text) and text[i] != " ":
                assert text[i] not in '"\'\\><~|&;$*?#()`\t\n', f"reserved character unquoted in {value!r}"
                cur.append(text[i])
                i += 1
        arg = "".join(cur)
        assert "%" not in arg.replace("%%", ""), f"a field code in {value!r}"
        args.append(arg.replace("%%", "%"))
    return args


@pytest.mark.parametrize("name", ["a&b", "a|b", "a b", 'a"b', "a'b", "a$HOME", "100%", "a\\b", "a`id`b",
                                  "&|$%\\\"' `x`;#"])
def test_install_with_a_home_of_any_name_writes_a_launcher_that_runs_it_and_uninstall_removes_it(
        tmp_path: Path, name: str) -> None:
    """Issue 18: "&" in HOME garbled Exec= (sed's replacement), "|" broke the sed program and
    left a half install with no manifest. The launcher's Exec=, read back by the spec, is the
    installed command, whatever the folder is called."""
    fake = _fake_checkout(tmp_path)
    home = tmp_path / f"home {name}"
    home.mkdir()
    before = _tree(home)
    proc = _script("install.sh", home, "--source", str(fake))
    assert proc.returncode == 0, proc.stderr
    link = home / ".local" / "bin" / "hearthside"
    desktop = home / ".local" / "share" / "applications" / "hearthside.desktop"
    entries = dict(line.split("=", 1) for line in desktop.read_text().splitlines() if "=" in line)
    args = _exec_args(entries["Exec"])
    assert args == [str(link)]
    assert _desktop_string(entries["TryExec"]) == str(link)
    ran = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert ran.stdout == "hearthside ran\n"
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 and check.stdout == "", check.stdout
    gone = _script("uninstall.sh", home)
    assert gone.returncode == 0, gone.stderr
    assert _tree(home) == before


def test_an_install_that_fails_part_way_leaves_nothing_behind(tmp_path: Path) -> None:
    """The icon folder cannot be made (a file is in the way): the command link and the launcher
    already made are taken back, so nothing is left without a manifest to remove it."""
    fake = _fake_checkout(tmp_path)
    home = tmp_path / "home"
    (home / ".local" / "share" / "icons" / "hicolor").mkdir(parents=True)
    (home / ".local" / "share" / "icons" / "hicolor" / "16x16").write_text("in the way\n")
    before = _tree(home)
    proc = _script("install.sh", home, "--source", str(fake))
    assert proc.returncode != 0
    assert "the install did not finish; what it had made was removed." in proc.stderr
    assert _tree(home) == before
