"""The first tray: offscreen (no tray → the small window) and on a real X server with a tray."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdesktop import desktop_with_tray, icon_pixels, missing_tools


def test_missing_added_folder_is_shown_disabled(qtbot, app_context, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController

    app_context.settings.set("persona_folders.paths", [str(tmp_path / "gone")])
    shell = Shell(app_context, opener=lambda p: True)
    ctl = TrayController(shell)
    shell.refresh()
    qtbot.waitUntil(lambda: shell.rows_loaded, timeout=10_000)
    sub = next(a.menu() for a in ctl.menu.actions() if a.text().startswith("gone"))
    assert "folder missing" in sub.title()
    chat = next(a for a in sub.actions() if a.text() == "Chat…")
    assert not chat.isEnabled()
    assert next(a for a in sub.actions() if a.text() == "Open folder").isEnabled()
    shell.bridge.close()


def test_no_display_gives_a_sentence_not_an_abort(run_cli) -> None:  # type: ignore[no-untyped-def]
    out = run_cli(env={"QT_QPA_PLATFORM": "", "DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert out.returncode == 1
    assert "no graphical display" in out.stderr and "--headless" in out.stderr


# --- a real tray: Xvfb + trayer (an XEmbed tray host), screenshot checked for the icon ----

@pytest.fixture
def xserver_with_tray() -> Iterator[dict[str, str]]:
    missing = missing_tools("Xvfb", "trayer", "import")
    if missing:
        pytest.skip(f"{missing[0]} is not installed (make test installs it)")
    with desktop_with_tray() as display:
        yield dict(os.environ, **display)


def test_tray_icon_appears_in_a_real_system_tray(xserver_with_tray, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = xserver_with_tray
    before = tmp_path / "before.png"
    subprocess.run(["import", "-window", "root", str(before)], env=env, check=True, timeout=30)
    app = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        shot = tmp_path / "tray.png"
        pixels = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and pixels < 100:
            time.sleep(0.5)
            assert app.poll() is None, app.communicate()[1]
            subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=30)
            pixels = icon_pixels(shot)
        assert icon_pixels(before) == 0
        assert pixels >= 100, "the tray icon did not appear in the tray"
    finally:
        app.terminate()
        app.wait(15)


def _light_pixels(png: Path) -> int:
    """Pixels lighter than 85% grey: a Qt menu on Xvfb's black screen is mostly these."""
    out = subprocess.run(["convert", str(png), "-colorspace", "gray", "-threshold", "85%", "-format",
                          "%[fx:mean*w*h]", "info:"], capture_output=True, text=True, check=True)
    return int(float(out.stdout.strip()))


def _icon_box(png: Path) -> tuple[int, int, int, int]:
    """(width, height, x, y) of the box holding the icon's colour in a screenshot."""
    out = subprocess.run(["convert", str(png), "-fill", "white", "-fuzz", "6%", "-opaque", "#7a2e12",
                          "-fill", "black", "+opaque", "white", "-trim", "-format", "%w %h %X %Y", "info:"],
                         capture_output=True, text=True, check=True)
    w, h, x, y = out.stdout.split()
    return int(w), int(h), int(x), int(y)


def test_tray_menu_quit_ends_the_app(xserver_with_tray, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Right-click the real tray icon, pick the last entry (Quit) with the keyboard: the app exits 0."""
    if not shutil.which("xdotool"):
        pytest.skip("xdotool is not installed (make test installs it)")
    env = xserver_with_tray
    # A persona exists, so no welcome window opens over the screen: this test is about the menu.
    persona = Path(env["XDG_CONFIG_HOME"]) / "hearthside" / "personas" / "Kip"
    persona.mkdir(parents=True)
    (persona / "SOUL.md").write_text("Kip is kind.\n")
    app = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        shot = tmp_path / "tray.png"
        deadline = time.monotonic() + 30
        while True:
            assert app.poll() is None, app.communicate()[1]
            subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=30)
            if icon_pixels(shot) >= 100:
                break
            assert time.monotonic() < deadline, "the tray icon did not appear in the tray"
            time.sleep(0.5)
        w, h, x, y = _icon_box(shot)
        subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "3"],
                       env=env, check=True, timeout=30)
        menu_shot = tmp_path / "menu.png"
        deadline = time.monotonic() + 30
        while True:  # key presses before the menu maps would go nowhere
            subprocess.run(["import", "-window", "root", str(menu_shot)], env=env, check=True, timeout=30)
            if _light_pixels(menu_shot) >= 2000:
                break
            assert time.monotonic() < deadline, "the tray menu did not open"
            time.sleep(0.3)
        subprocess.run(["xdotool", "key", "Up", "Return"], env=env, check=True, timeout=30)
        assert app.wait(30) == 0
    finally:
        if app.poll() is None:
            app.terminate()
            app.wait(15)


def test_persona_names_are_shown_safely_in_the_menu_and_the_window(qtbot, app_context, app_paths) -> None:  # type: ignore[no-untyped-def]
    """Issue 18, hole 9: ``&`` is not a mnemonic, a right-to-left override or a newline in a folder
    name is shown as an escape (one entry, read as written)."""
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import MainWindow, TrayController

    names = {"Tom & Jerry": "Tom && Jerry", "evil\u202egpj.exe": "evil\\u202egpj.exe",
             "two\nlines": "two\\x0alines", "<img src=x>": "<img src=x>"}
    for n in names:
        (app_paths.personas_dir / n).mkdir(parents=True)
    shell = Shell(app_context, opener=lambda p: True)
    ctl = TrayController(shell)
    shell.refresh()
    qtbot.waitUntil(lambda: shell.rows_loaded and len(shell.rows) == len(names), timeout=10_000)
    ctl.rebuild_menu()
    titles = [a.menu().title() for a in ctl.menu.actions() if a.menu() is not None]
    assert sorted(titles) == sorted(names.values())
    for t in titles:
        assert "\n" not in t and "\u202e" not in t
        assert t.replace("&&", "").count("&") == 0  # no single & left to become a mnemonic
    win = MainWindow(shell)
    qtbot.addWidget(win)
    win.refresh()
    rows = [win.list.item(i).text() for i in range(win.list.count())]
    assert len(rows) == len(names) and all("\n" not in r and "\u202e" not in r for r in rows)
    shell.quitting = True  # closing the window at teardown is not a quit
    shell.bridge.close()


def test_the_status_line_shows_the_real_next_check_in_for_set_times_too() -> None:
    """Issue 20: a persona with only set times (heartbeat_at, no interval) has a next check-in;
    the menu says when, not "check-ins off"."""
    from datetime import UTC, datetime

    from hearthside.app.lifecycle import PersonaRow
    from hearthside.ui.tray import status_line

    at = datetime(2026, 12, 1, 13, 30, tzinfo=UTC)
    local = at.astimezone().strftime("%H:%M")
    set_times = PersonaRow("Kip", "/p/Kip", True, False, 0, at, 0)
    assert status_line(set_times).startswith(f"next check-in {local}")
    off = PersonaRow("Kip", "/p/Kip", True, False, 0, None, 0)
    assert status_line(off).startswith("check-ins off")
    every = PersonaRow("Kip", "/p/Kip", True, False, 30, at, 2)
    assert status_line(every) == f"next check-in {local} · 2 change(s) to review"
