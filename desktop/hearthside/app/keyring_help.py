"""What to install or unlock when there is no usable Secret Service, said for the user's desktop.

``doctor`` and the first-run window show this text, so it lives apart from both. It only reads
the environment (``XDG_CURRENT_DESKTOP``, ``DESKTOP_SESSION``, ``PATH``) and never starts
anything: starting a keyring daemon behind the user's back would create a keyring they never
unlock.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping

_GNOME = ("gnome", "unity", "cinnamon", "budgie", "pantheon", "pop", "ubuntu")
_KDE = ("kde", "plasma")


def desktop_name(env: Mapping[str, str] | None = None) -> str:
    """``gnome``, ``kde`` or ``other``, from ``XDG_CURRENT_DESKTOP`` (``DESKTOP_SESSION`` as fallback)."""
    env = os.environ if env is None else env
    raw = (env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or "").lower()
    parts = [p for p in raw.replace(";", ":").split(":") if p]
    if any(p.startswith(_KDE) for p in parts):
        return "kde"
    if any(p.startswith(_GNOME) for p in parts):
        return "gnome"
    return "other"


def secret_service_advice(
    env: Mapping[str, str] | None = None, which: Callable[[str], str | None] = shutil.which
) -> str:
    """One or two sentences: what to install or start for this desktop so secrets can be kept.

    ``which`` is injectable so a test can describe a machine with or without each program.
    """
    if sys.platform == "darwin":
        return "Hearthside uses the macOS Keychain; log in to your Mac user session and try again."
    if sys.platform == "win32":
        return "Hearthside uses the Windows Credential Manager; log in to your Windows session and try again."
    env = os.environ if env is None else env
    if not env.get("DBUS_SESSION_BUS_ADDRESS") and not os.path.exists(f"/run/user/{os.getuid()}/bus"):
        return ("There is no D-Bus session (a desktop login provides one); start Hearthside from your "
                "desktop session, or run it under `dbus-run-session` with a keyring daemon started.")
    desktop = desktop_name(env)
    have_gnome = which("gnome-keyring-daemon") is not None
    have_kwallet = any(which(p) for p in ("kwalletd6", "kwalletd5", "ksecretd"))
    have_keepassxc = which("keepassxc") is not None
    if have_keepassxc:
        keepass = ("KeePassXC is installed: turn on Tools > Settings > Secret Service Integration, "
                   "and keep your database unlocked.")
    else:
        keepass = ("On any desktop, KeePassXC can serve secrets instead: install it "
                   "(`sudo apt install keepassxc`) and turn on its Secret Service Integration.")
    if desktop == "kde":
        if have_kwallet:
            first = ("KDE Plasma: enable the wallet in System Settings > KDE Wallet (Plasma 6 serves "
                     "the Secret Service itself; on Plasma 5 install `gnome-keyring` as well), then log "
                     "out and in.")
        else:
            first = ("KDE Plasma: install KWallet (`sudo apt install kwalletmanager`) and enable it in "
                     "System Settings > KDE Wallet, then log out and in.")
    elif desktop == "gnome":
        if have_gnome:
            first = ("GNOME Keyring is installed but not answering: log out and in, and unlock the "
                     "\"Login\" keyring in Passwords and Keys (seahorse) if it is locked.")
        else:
            first = "GNOME: install GNOME Keyring (`sudo apt install gnome-keyring`), then log out and in."
    else:
        if have_gnome:
            first = ("GNOME Keyring is installed but not running: start it with your session (Xfce: "
                     "Session and Startup > Advanced > Launch GNOME services on startup), then log out and in.")
        else:
            first = ("Install GNOME Keyring (`sudo apt install gnome-keyring`) and start it with your session "
                     "(Xfce: Session and Startup > Advanced > Launch GNOME services on startup), then log out and in.")
    return f"{first} {keepass}"
