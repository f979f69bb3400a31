"""A real X desktop for tests and benchmarks: Xvfb with trayer as the system tray (XEmbed).

One place for what the tray tests, the end-to-end test, the bundle test and the tray and bundle
benchmarks all need: Xvfb on a display it picks itself, a tray host, a wait until Qt itself
sees that tray, and a clean stop. Also the screenshot check for the tray icon's colour.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: What Qt does in the app: is there a system tray on this display?
TRAY_PROBE = ("import sys; from PySide6.QtWidgets import QApplication, QSystemTrayIcon; "
              "app = QApplication(sys.argv[:1]); sys.exit(0 if QSystemTrayIcon.isSystemTrayAvailable() else 3)")


def missing_tools(*tools: str) -> list[str]:
    """The command-line tools of ``tools`` that are not installed (``make test`` installs them)."""
    return [t for t in tools if not shutil.which(t)]


def start_xvfb(width: int = 640, height: int = 480, timeout: float = 60) -> tuple[subprocess.Popen[bytes], int]:
    """Start Xvfb on a display it picks itself (``-displayfd``): no race for a number with
    other X servers, and the number arrives only once the server accepts connections."""
    r, w = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", f"{width}x{height}x24", "-nolisten",
                             "tcp"], pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    got = b""
    deadline = time.monotonic() + timeout
    try:
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(r, 16) if ready else b""
            if not chunk:
                stop(xvfb)
                raise AssertionError(f"Xvfb did not report a display within {timeout:.0f} s")
            got += chunk
    finally:
        os.close(r)
    return xvfb, int(got)


def start_trayer(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """trayer at the top right, opaque and dark so the icon stands out in screenshots."""
    return subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "request",
                             "--height", "32", "--transparent", "false", "--tint", "0x333333"],
                            env=dict(os.environ, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_tray(env: dict[str, str], tray: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Wait until Qt itself sees trayer's tray, as the app will: a loaded machine may take a while."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert tray.poll() is None, "trayer exited"
        probe = subprocess.run([sys.executable, "-c", TRAY_PROBE], env=dict(os.environ, **env),
                               capture_output=True, timeout=60, check=False)
        if probe.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"trayer's system tray did not appear within {timeout:.0f} s")


def stop(*procs: subprocess.Popen[bytes]) -> None:
    """Terminate each process, killing it if it does not exit within 10 s."""
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


@contextmanager
def desktop_with_tray(width: int = 640, height: int = 480, background: str = "") -> Iterator[dict[str, str]]:
    """Xvfb + trayer, ready when Qt sees the tray; yields ``{"DISPLAY", "QT_QPA_PLATFORM"}``."""
    xvfb, n = start_xvfb(width, height)
    env = {"DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
    tray = start_trayer(env)
    try:
        if background and shutil.which("xsetroot"):
            subprocess.run(["xsetroot", "-solid", background], env=dict(os.environ, **env), check=False,
                           capture_output=True)
        wait_for_tray(env, tray)
        yield env
    finally:
        stop(tray, xvfb)


def icon_pixels(png: Path) -> int:
    """Count pixels of the tray icon's rounded-square colour (#7a2e12) in a screenshot."""
    out = subprocess.run(["convert", str(png), "-fill", "white", "-fuzz", "6%", "-opaque",
                          "#7a2e12", "-fill", "black", "+opaque", "white", "-format",
                          "%[fx:mean*w*h]", "info:"], capture_output=True, text=True, check=True)
    return int(float(out.stdout.strip()))
