"""The desktop notifications listener when the session bus goes away (logout, a bus that ends).

A real ``dbus-daemon`` of the test's own is stopped under a running listener: the listener must
end quietly, say why, and fail every notice that waits, instead of dying with a traceback and
leaving callers waiting for an id that can never come."""

from __future__ import annotations

import select
import shutil
import subprocess
import time

import pytest
from hearthside.adapters.notifications import ClickableNotifications


@pytest.mark.skipif(not shutil.which("dbus-daemon"), reason="needs dbus-daemon")
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_the_listener_ends_quietly_when_the_bus_goes_away(monkeypatch: pytest.MonkeyPatch) -> None:
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert bus.stdout is not None
        ready, _, _ = select.select([bus.stdout], [], [], 30)
        address = bus.stdout.readline().decode().strip() if ready else ""
        assert address, "dbus-daemon did not print its address"
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        notices = ClickableNotifications(on_click=lambda _nid: None, timeout=2.0)
        assert notices.start(), notices.error
        bus.terminate()
        bus.wait(10)
        deadline = time.monotonic() + 20
        while notices._thread is not None and notices._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert notices._thread is not None and not notices._thread.is_alive()
        assert "bus closed" in notices.error
        fut = notices.notify("Juniper", "a check-in")
        with pytest.raises(RuntimeError, match="bus closed"):
            fut.result(timeout=1)
        notices.stop()
    finally:
        if bus.poll() is None:
            bus.kill()
            bus.wait()
