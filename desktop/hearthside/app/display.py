"""Is there a screen for Qt? One answer for the tray's start-up and the doctor.

Qt aborts the whole process when its platform plugin finds no display, so both ask first. On
Linux without ``QT_QPA_PLATFORM`` (which picks a platform explicitly, e.g. ``offscreen``), a
display means ``DISPLAY`` (X11) or ``WAYLAND_DISPLAY``; other systems always have one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

#: The environment variables that decide it (the doctor caches its Qt probe by their values).
DISPLAY_VARS = ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")


def has_display(env: Mapping[str, str] | None = None, platform: str | None = None) -> bool:
    """True when Qt can try to show something here."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def display_problem(env: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """A sentence when there is no screen to use (Qt would abort the process), else ""."""
    if has_display(env, platform):
        return ""
    return (
        "There is no graphical display here (DISPLAY and WAYLAND_DISPLAY are unset). "
        "Run 'hearthside --headless' to keep watching and checking in without a window."
    )
