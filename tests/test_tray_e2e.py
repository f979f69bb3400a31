"""End to end on a real X server with a real system tray (Xvfb + trayer) and the loopback model.

The app runs as a person starts it (``python -m hearthside``). A check-in whose reply is an
alert lands in the notification history; a hand edit of SOUL.md (an atomic save, as editors
do) puts a badge on the icon and a notification in the history within a second; the tray
menu opens and its *Notifications…* entry shows the history window; *Quit* ends the app with
exit code 0. Screenshots are kept as PNGs in ``test-output/tray/`` (or
``$HEARTHSIDE_TEST_OUTPUT``) for a person to look at.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from drift_helpers import atomic_save
from fakemodel import FakeModel, wait_for
from personas import make_persona
from test_tray import _icon_box
from xdesktop import desktop_with_tray, icon_pixels, missing_tools

ROOT = Path(__file__).resolve().parents[1]
ALERT = "The 3pm sync with Ana starts in ten minutes."
WIDTH, HEIGHT = 1024, 700


def output_dir() -> Path:
    out = Path(os.environ.get("HEARTHSIDE_TEST_OUTPUT") or ROOT / "test-output" / "tray")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def desktop() -> Iterator[dict[str, str]]:
    missing = missing_tools("Xvfb", "trayer", "import", "xdotool", "convert")
    if missing:
        pytest.skip(f"{missing[0]} is not installed (make test installs it)")
    # A light desktop background, so windows and the menu are easy to see in the screenshots.
    with desktop_with_tray(WIDTH, HEIGHT, background="#3b4252") as display:
        yield dict(os.environ, **display)


def shoot(env: dict[str, str], name: str) -> Path:
    path = output_dir() / name
    subprocess.run(["import", "-window", "root", str(path)], env=env, check=True, timeout=30)
    return path


def badge_pixels(png: Path, box: tuple[int, int, int, int]) -> int:
    """Pixels of the review badge's red (#e0245e) inside the icon's box."""
    w, h, x, y = box
    out = subprocess.run(["convert", str(png), "-crop", f"{w + 8}x{h + 8}+{max(0, x - 4)}+{max(0, y - 4)}",
                          "+repage", "-fuzz", "8%", "-fill", "#00ff00", "-opaque", "#e0245e", "-fuzz", "0",
                          "-fill", "black", "+opaque", "#00ff00", "-fill", "white", "-opaque", "#00ff00",
                          "-format", "%[fx:mean*w*h]", "info:"],
                         capture_output=True, text=True, check=True)
    return int(float(out.stdout.strip()))


def crop_icon(png: Path, box: tuple[int, int, int, int], name: str) -> Path:
    """The tray corner of a screenshot, enlarged 4x, for the docs."""
    w, h, x, y = box
    out = output_dir() / name
    subprocess.run(["convert", str(png), "-crop", f"{w + 40}x{h + 16}+{max(0, x - 20)}+{max(0, y - 8)}",
                    "+repage", "-filter", "point", "-resize", "400%", str(out)], check=True)
    return out


def xkey(env: dict[str, str], *keys: str) -> None:
    subprocess.run(["xdotool", "key", "--delay", "120", *keys], env=env, check=True, timeout=30)


def window_visible(env: dict[str, str], title: str) -> bool:
    got = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", title], env=env,
                         capture_output=True, text=True, check=False)
    return bool(got.stdout.strip())


def open_menu(env: dict[str, str], box: tuple[int, int, int, int]) -> None:
    w, h, x, y = box
    subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "3"],
                   env=env, check=True, timeout=30)
    opened = wait_for(lambda: window_visible(env, "Hearthside menu"), 15, 0.2)
    if not opened:
        shoot(env, "menu-did-not-open.png")
        tree = subprocess.run(["xwininfo", "-root", "-tree"], env=env, capture_output=True, text=True, check=False)
        raise AssertionError(f"the tray menu did not open:\n{tree.stdout[-2000:]}")


def test_a_person_sees_check_ins_and_hand_edits_in_the_tray(desktop, app_context) -> None:  # type: ignore[no-untyped-def]
    env = desktop
    folder = make_persona(app_context, "juniper")
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 1}})
    with FakeModel(default={"text": ALERT}) as fm:
        # the shortest interval allowed is one minute; here a minute lasts 3 s
        env = dict(env, **fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback", HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS="3")
        app = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            # The icon appears in the tray.
            shot = output_dir() / "start.png"
            assert wait_for(lambda: app.poll() is None and shoot(env, "start.png") and icon_pixels(shot) >= 100,
                            60, 0.5), "the tray icon did not appear"
            box = _icon_box(shot)
            assert badge_pixels(shot, box) == 0

            # A check-in whose reply is an alert: a notification in the history.
            assert wait_for(lambda: any(e.status == "notified" and e.text == ALERT
                                        for e in app_context.notifications.entries()), 60, 0.2), \
                "no check-in notification in the history"
            time.sleep(1.0)
            shoot(env, "check-in-balloon.png")

            # A hand edit of SOUL.md (atomic save): a badge on the icon and a notification. How
            # fast is measured in benchmarks/bench_tray.py; a test asserts that they come.
            before = len(app_context.notifications.entries())
            atomic_save(folder / "SOUL.md", "Warm, curious, and fond of terrible puns.\n")
            badge_shot = output_dir() / "icon-badge.png"
            assert wait_for(lambda: badge_pixels(shoot(env, "icon-badge.png"), box) >= 6, 30, 0.05), \
                "no badge on the icon"
            assert wait_for(lambda: len(app_context.notifications.entries()) > before, 30, 0.05), \
                "no notification of the hand edit in the history"
            drift = [e for e in app_context.notifications.entries() if "SOUL.md" in e.text]
            assert drift and drift[-1].persona == "juniper" and "Edited by hand" in drift[-1].text
            crop_icon(badge_shot, box, "icon-badge-zoom.png")
            time.sleep(11)  # the balloon (10 s) overlaps the icon; a click on it would open the review

            # The tray menu, open.
            open_menu(env, box)
            time.sleep(0.5)
            shoot(env, "tray-menu.png")
            xkey(env, "Down", "Right")  # the persona's submenu: status line and actions
            time.sleep(0.8)
            shoot(env, "persona-submenu.png")
            # Back to juniper ▸, then New persona…, Review changes (1)…, Notifications…
            xkey(env, "Left", "Down", "Down", "Down", "Return")
            assert wait_for(lambda: window_visible(env, "Hearthside — Notifications"), 15, 0.2), \
                "the Notifications window did not open"
            time.sleep(1.0)
            shoot(env, "notifications.png")
            subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Hearthside — Notifications",
                            "windowclose"], env=env, check=False, timeout=30)

            # Quit from the menu ends the app, exit code 0.
            quit_from_menu(env, app, box)
        finally:
            stop(app)
            _out, err = app.communicate()
    assert "Traceback" not in err, err


def xtype(env: dict[str, str], text: str) -> None:
    subprocess.run(["xdotool", "type", "--delay", "40", text], env=env, check=True, timeout=60)


def open_chat_from_menu(env: dict[str, str], box: tuple[int, int, int, int]) -> None:
    """The tray menu, the persona's submenu, *Chat…* (its first entry one can choose)."""
    open_menu(env, box)
    xkey(env, "Down", "Right", "Return")
    if not wait_for(lambda: window_visible(env, "Chat with juniper"), 20, 0.2):
        shoot(env, "chat-did-not-open.png")
        raise AssertionError("the chat window did not open from the tray menu")
    time.sleep(1.0)  # the session opens and the sidebar lists the conversations


def start_tray(env: dict[str, str], name: str) -> tuple[subprocess.Popen[str], tuple[int, int, int, int]]:
    app = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    shot = output_dir() / name
    assert wait_for(lambda: app.poll() is None and shoot(env, name) and icon_pixels(shot) >= 100, 60, 0.5), \
        "the tray icon did not appear"
    time.sleep(4.0)  # the menu says "Starting…" until the personas are read
    return app, _icon_box(shot)


def quit_from_menu(env: dict[str, str], app: subprocess.Popen[str], box: tuple[int, int, int, int]) -> None:
    """*Quit* (the menu's last entry) ends the app with exit code 0."""
    open_menu(env, box)
    xkey(env, "Up", "Return")
    assert app.wait(15) == 0


def stop(app: subprocess.Popen[str]) -> None:
    """End the app if it still runs (a test that failed before its *Quit*)."""
    if app.poll() is None:
        app.terminate()
        app.wait(15)


def quit_tray(env: dict[str, str], app: subprocess.Popen[str], box: tuple[int, int, int, int]) -> str:
    try:
        quit_from_menu(env, app, box)
    finally:
        stop(app)
    _out, err = app.communicate()
    return err


def test_a_chat_is_kept_across_a_restart_and_continues_with_the_earlier_messages(  # type: ignore[no-untyped-def]
        desktop, app_context) -> None:
    """Chat from the tray, quit, start again: the conversation is in the sidebar, and continuing it
    sends the earlier messages to the model."""
    from personas import just_checked_in

    make_persona(app_context, "juniper")
    just_checked_in(app_context)  # no check-in at start: the model hears only the chat
    with FakeModel([{"text": "Miso is a **lovely** name for a cat."}, {"text": "Your cat is called Miso."}],
                   default={"text": "HEARTBEAT_OK"}) as fm:
        env = dict(desktop, **fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback")
        app, box = start_tray(env, "kept-start.png")
        try:
            open_chat_from_menu(env, box)
            xtype(env, "My cat is called Miso")
            xkey(env, "ctrl+Return")
            assert wait_for(lambda: [m.messages for m in app_context.conversations.list("juniper")] == [2], 30, 0.2), \
                "the conversation was not kept"
            time.sleep(1.0)
            shoot(env, "kept-first-chat.png")
        finally:
            err = quit_tray(env, app, box)
        assert "Traceback" not in err, err

        app, box = start_tray(env, "kept-restart.png")
        try:
            open_chat_from_menu(env, box)
            shoot(env, "kept-sidebar-after-restart.png")
            wid = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "Chat with juniper"], env=env,
                                 capture_output=True, text=True, check=True).stdout.split()[0]
            # the sidebar's first row (its title line), below the search box
            subprocess.run(["xdotool", "mousemove", "--window", wid, "120", "80", "click", "1"], env=env,
                           check=True, timeout=30)
            time.sleep(1.5)  # the conversation is shown and the session continues it
            xtype(env, "What is my cat called?")
            xkey(env, "ctrl+Return")
            assert wait_for(lambda: len(fm.requests) >= 2, 30, 0.2), "the continued message did not reach the model"
            time.sleep(1.0)
            shoot(env, "kept-continued.png")
        finally:
            err = quit_tray(env, app, box)
        assert "Traceback" not in err, err
    sent = [m for m in fm.requests[-1]["messages"] if m["role"] != "system"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == "My cat is called Miso" and "lovely" in sent[1]["content"]
    convs = app_context.conversations.list("juniper")
    assert len(convs) == 1 and convs[0].messages == 4 and convs[0].title == "My cat is called Miso"
