"""*Start at login*: one switch, per platform the desktop's own mechanism.

Linux: a ``.desktop`` file in ``$XDG_CONFIG_HOME/autostart/``; macOS: a LaunchAgent plist in
``~/Library/LaunchAgents``; Windows: a small ``.cmd`` in the Startup folder. The file's
existence *is* the setting: nothing else remembers it, so Hearthside can never turn it back on
by itself. Only :meth:`Autostart.set` (the user's click) writes or removes it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ..adapters.atomicfile import write_atomic

ENTRY_NAME = "hearthside"


def launch_command() -> list[str]:
    """How to start the tray: the installed console script, else this Python with ``-m``."""
    script = shutil.which("hearthside")
    return [script] if script else [sys.executable, "-m", "hearthside"]


def _quote(arg: str) -> str:
    """Quote one Exec argument per the desktop entry spec."""
    if not any(c in arg for c in " \t\n\"'\\><~|&;$*?#()`"):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return f'"{escaped}"'


class Autostart:
    """Reads and flips the start-at-login switch for ``platform`` (``sys.platform`` by default)."""

    def __init__(self, platform: str | None = None, home: Path | None = None) -> None:
        self.platform = platform or sys.platform
        self.home = home or Path.home()

    @property
    def path(self) -> Path:
        if self.platform == "darwin":
            return self.home / "Library" / "LaunchAgents" / "org.hearthside.tray.plist"
        if self.platform.startswith("win"):
            appdata = Path(os.environ.get("APPDATA") or self.home / "AppData" / "Roaming")
            return appdata / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup" / "Hearthside.cmd"
        config = Path(os.environ.get("XDG_CONFIG_HOME") or self.home / ".config")
        return config / "autostart" / f"{ENTRY_NAME}.desktop"

    def enabled(self) -> bool:
        return self.path.is_file()

    def content(self) -> str:
        cmd = launch_command()
        if self.platform == "darwin":
            args = "".join(f"    <string>{a}</string>\n" for a in cmd)
            return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
                    '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
                    '<plist version="1.0"><dict>\n  <key>Label</key><string>org.hearthside.tray</string>\n'
                    f"  <key>ProgramArguments</key><array>\n{args}  </array>\n"
                    "  <key>RunAtLoad</key><true/>\n</dict></plist>\n")
        if self.platform.startswith("win"):
            return "@echo off\r\nstart \"\" " + " ".join(f'"{a}"' for a in cmd) + "\r\n"
        return ("[Desktop Entry]\nType=Application\nName=Hearthside\n"
                "Comment=Your personas, in the tray\n"
                f"Exec={' '.join(_quote(a) for a in cmd)}\nIcon=hearthside\nTerminal=false\n"
                "X-GNOME-Autostart-enabled=true\n")

    def set(self, on: bool) -> None:
        """Turn start at login on (write the entry) or off (remove it)."""
        if on:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, self.content())
        else:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
