"""A private D-Bus session with an unlocked GNOME Keyring for one pytest-xdist worker.

``scripts/run-tests.sh`` starts one session bus and keyring for the whole run. Tests running in
parallel must not share them: two tests storing ``mcp/notes/header/Authorization`` at the same
moment would read each other's secret, and only one process on a bus can own
``org.freedesktop.Notifications``. So each worker starts its own bus and keyring at start-up and
points ``DBUS_SESSION_BUS_ADDRESS`` at it; the keyring daemon ends with the bus.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from pathlib import Path

PASSWORD = b"hearthside-test"


class PrivateBus:
    """A ``dbus-daemon --session`` and a ``gnome-keyring-daemon`` (secrets only) on it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.bus: subprocess.Popen[bytes] | None = None
        self.keyring: subprocess.Popen[bytes] | None = None
        self.address = ""

    @staticmethod
    def available() -> bool:
        return all(shutil.which(t) for t in ("dbus-daemon", "gnome-keyring-daemon"))

    def start(self, timeout: float = 30) -> str:
        """Start both; return the bus address once the keyring answers on it."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.bus.stdout is not None
        ready, _, _ = select.select([self.bus.stdout], [], [], timeout)
        self.address = self.bus.stdout.readline().decode().strip() if ready else ""
        if not self.address:
            self.stop()
            raise RuntimeError("dbus-daemon did not print its address")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GNOME_KEYRING"))}
        env.update(HOME=str(self.home), DBUS_SESSION_BUS_ADDRESS=self.address)
        self.keyring = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets",
             "--control-directory", str(self.home / "control")],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        assert self.keyring.stdin is not None
        self.keyring.stdin.write(PASSWORD)
        self.keyring.stdin.close()
        self._wait_for_secret_service(env, timeout)
        return self.address

    def _wait_for_secret_service(self, env: dict[str, str], timeout: float) -> None:
        """The keyring takes the name org.freedesktop.secrets a moment after it starts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            probe = subprocess.run(
                ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                 "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"],
                env=env, capture_output=True, text=True, check=False) if shutil.which("dbus-send") else None
            if probe is None or "boolean true" in probe.stdout:
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("gnome-keyring-daemon did not take org.freedesktop.secrets")

    def stop(self) -> None:
        for proc in (self.keyring, self.bus):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.bus is not None and self.bus.stdout is not None:
            self.bus.stdout.close()
