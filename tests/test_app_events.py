"""The app/ui seam (issue 19): a real :class:`Lifecycle` over real services tells a front end
everything through one typed :class:`AppEvents`, and the bridge's callbacks are typed.

The front end here records what it is told; the services are the real ones (a persona folder,
the watcher, the heartbeat with a loopback model, real MCP servers on 127.0.0.1).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from drift_helpers import atomic_save
from fakemodel import FakeModel
from hearthside.app.alerts import Alert, Notice, make_notice
from hearthside.app.drift_types import DriftEvent
from hearthside.app.events import AppEvents
from hearthside.app.headless import HeadlessEvents
from hearthside.app.heartbeat import HeartbeatOutcome
from hearthside.app.lifecycle import Lifecycle
from hearthside.app.notify import LogNotifier
from hearthside.core.mcpconfig import ServerStatus
from mcp_helpers import HttpServerProcess, free_port
from personas import make_persona, use_model

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ("on_drift", "on_outcome", "on_mcp_status", "show", "on_error")


class Recording:
    """A front end that records every event it is told, with the thread it arrived on."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object, str]] = []
        self._lock = threading.Lock()

    def _add(self, kind: str, value: object) -> None:
        with self._lock:
            self.calls.append((kind, value, threading.current_thread().name))

    def on_drift(self, event: DriftEvent) -> None:
        self._add("on_drift", event)

    def on_outcome(self, outcome: HeartbeatOutcome) -> None:
        self._add("on_outcome", outcome)

    def on_mcp_status(self, status: ServerStatus) -> None:
        self._add("on_mcp_status", status)

    def show(self, notice: Notice) -> None:
        self._add("show", notice)

    def on_error(self, message: str) -> None:
        self._add("on_error", message)

    def of(self, kind: str) -> list[Any]:
        with self._lock:
            return [v for k, v, _t in self.calls if k == kind]

    def threads(self) -> set[str]:
        with self._lock:
            return {t for _k, _v, t in self.calls}


def wait_for(cond: Callable[[], object], timeout: float = 60.0) -> None:
    """Wait on a condition (never on the machine's speed); fail with what was asked."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


@pytest.fixture
def lifecycle(app_context):  # type: ignore[no-untyped-def]
    made: list[Lifecycle] = []

    def make(events: AppEvents) -> Lifecycle:
        life = Lifecycle(app_context, events)
        made.append(life)
        return life

    yield make
    for life in made:
        life.stop()


# --- who satisfies the protocol --------------------------------------------------------------

def _same_signature(impl: object) -> bool:
    for name in EVENTS:
        want = list(inspect.signature(getattr(AppEvents, name)).parameters)[1:]  # without self
        if list(inspect.signature(getattr(impl, name)).parameters) != want:
            return False
    return True


def test_the_tray_shell_and_the_headless_front_end_are_app_events(app_context, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Both front ends are AppEvents (mypy checks the same where they build their Lifecycle:
    ``Lifecycle(app, self)`` in ui/app.py, ``Lifecycle(app, HeadlessEvents())`` in headless.py)."""
    from hearthside.ui.app import Shell

    shell = Shell(app_context)
    try:
        headless = HeadlessEvents(LogNotifier())
        for front_end in (shell, headless, Recording()):
            assert isinstance(front_end, AppEvents)
            assert _same_signature(front_end)
        assert shell.lifecycle.events is shell

        class Partial:  # the check can fail: a front end that forgot one event is not one
            def on_drift(self, event: DriftEvent) -> None: ...
            def show(self, notice: Notice) -> None: ...

        assert not isinstance(Partial(), AppEvents)
    finally:
        shell.bridge.close()


def test_the_shell_hands_every_event_to_the_qt_thread_as_a_typed_signal(app_context, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Called on a service thread, the shell only emits; the values arrive on the Qt thread."""
    from hearthside.ui.app import Shell

    shell = Shell(app_context)
    b = shell.bridge
    got: list[tuple[str, object, bool]] = []
    main = threading.current_thread()
    for name, sig in (("drift", b.drift_event), ("outcome", b.heartbeat_outcome), ("mcp", b.mcp_status),
                      ("notice", b.notification), ("error", b.service_error)):
        sig.connect(lambda v, n=name: got.append((n, v, threading.current_thread() is main)))
    ev = DriftEvent("Kip", "SOUL.md", "/p/Kip/SOUL.md", "drifted", "+1 -1 lines")
    out = HeartbeatOutcome("Kip", "failed", "the model did not answer")
    st = ServerStatus("files", "failed", "connection refused")
    notice = make_notice([Alert("checkin", "Kip", "Water the basil.")])

    def from_a_service_thread() -> None:
        shell.on_drift(ev)
        shell.on_outcome(out)
        shell.on_mcp_status(st)
        shell.show(notice)
        shell.on_error("the disk fell off")

    t = threading.Thread(target=from_a_service_thread)
    t.start()
    t.join()
    try:
        qtbot.waitUntil(lambda: len(got) == 5, timeout=10_000)
        assert got == [("drift", ev, True), ("outcome", out, True), ("mcp", st, True),
                       ("notice", notice, True), ("error", "the disk fell off", True)]
        qtbot.waitUntil(lambda: "mcp files" in shell.errors and bool(shell.notices), timeout=10_000)
        assert shell.notices[-1] is notice
    finally:
        shell.quitting = True
        b.close()


# --- what a real lifecycle tells the front end ---------------------------------------------

def test_a_hand_edit_and_a_check_in_reach_the_front_end_through_a_real_lifecycle(  # type: ignore[no-untyped-def]
        app_context, lifecycle, monkeypatch) -> None:
    folder = make_persona(app_context, "Kip")
    # only the check-in asked for below: a persona that never checked in would check in at start
    app_context.settings.set("personas", {"Kip": {"heartbeat_interval_minutes": 0}})
    rec = Recording()
    with FakeModel(default={"text": "Your 3pm sync starts in ten minutes."}) as fm:
        use_model(monkeypatch, fm)
        life = lifecycle(rec)
        assert life.start() == []
        atomic_save(folder / "SOUL.md", "Warm, curious and a little loud.")
        wait_for(lambda: any(e.file == "SOUL.md" and e.state == "drifted" for e in rec.of("on_drift")))
        wait_for(lambda: any(a.kind == "drift" for n in rec.of("show") for a in n.alerts))
        out = life.check_in_now("Kip").result(60)
        wait_for(lambda: rec.of("on_outcome"))
        wait_for(lambda: any(a.kind == "checkin" for n in rec.of("show") for a in n.alerts))
    [drift] = [e for e in rec.of("on_drift") if e.file == "SOUL.md"]
    assert isinstance(drift, DriftEvent) and (drift.persona, drift.state) == ("Kip", "drifted")
    assert rec.of("on_outcome") == [out]
    assert isinstance(out, HeartbeatOutcome) and (out.persona, out.status) == ("Kip", "notified")
    notices = rec.of("show")
    assert all(isinstance(n, Notice) for n in notices)
    checkin = next(n for n in notices if n.kind == "checkin")
    assert checkin.title == "Kip" and "3pm sync" in checkin.body
    drift_notice = next(n for n in notices if n.kind == "drift")
    assert drift_notice.alerts[0].path == str(folder / "SOUL.md")
    history = [(e.persona, e.status) for e in app_context.notifications.entries()]
    assert ("Kip", "notified") in history  # the drift notice is in the history before it is shown
    assert rec.of("on_error") == []
    assert threading.main_thread().name not in rec.threads()  # every event came on a service thread
    assert life.stop() == []


def test_mcp_states_and_background_errors_reach_the_front_end(app_context, lifecycle) -> None:  # type: ignore[no-untyped-def]
    import json

    rec = Recording()
    closed = f"http://127.0.0.1:{free_port()}/mcp"  # nobody listens there
    with HttpServerProcess(tools=2) as srv:
        app_context.paths.mcp_file.parent.mkdir(parents=True, exist_ok=True)
        app_context.paths.mcp_file.write_text(json.dumps({"version": 1, "servers": {
            "notes": {"type": "http", "url": srv.url}, "gone": {"type": "http", "url": closed}}}))
        life = lifecycle(rec)
        life.start()
        wait_for(lambda: any(s.name == "notes" and s.state == "connected" for s in rec.of("on_mcp_status")))
        wait_for(lambda: any(s.name == "gone" and s.state == "failed" for s in rec.of("on_mcp_status")))

        def boom() -> None:
            raise RuntimeError("the disk fell off")

        app_context.runtime.loop.call_soon_threadsafe(boom)
        wait_for(lambda: rec.of("on_error"))
        statuses = rec.of("on_mcp_status")
        assert all(isinstance(s, ServerStatus) for s in statuses)
        assert next(s for s in statuses if s.name == "notes" and s.state == "connected").tools > 0
        assert "could not connect" in next(s for s in statuses if s.name == "gone").reason
        assert any("the disk fell off" in m for m in rec.of("on_error")), rec.of("on_error")
        assert life.stop() == []
    assert not app_context.runtime.loop.is_running()


def test_stopping_builds_no_service_that_was_never_used(app_context) -> None:  # type: ignore[no-untyped-def]
    life = Lifecycle(app_context, Recording())
    assert life.stop() == []
    assert not any(app_context.built(n) for n in ("plugins", "runtime", "heartbeat", "drift", "mcp"))
    with pytest.raises(ValueError, match="not a service"):
        app_context.built("hearbeat")


# --- desktop notices are an app service -------------------------------------------------------

def test_desktop_notices_tell_subscribers_which_notice_was_clicked() -> None:
    from hearthside.app.notify import DesktopNotices
    from notifyserver import NotificationServer

    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        pytest.skip("needs the D-Bus session that scripts/run-tests.sh starts")
    clicked: list[Notice] = []
    with NotificationServer() as srv:
        service = DesktopNotices()
        unsubscribe = service.subscribe(clicked.append)
        assert service.start()
        try:
            notice = make_notice([Alert("checkin", "Kip", "Water the basil.")])
            nid = service.show(notice).result(10)
            assert service.shown() == [notice]
            srv.click(nid + 1000)  # someone else's notification: nobody hears of it
            srv.click(nid)
            wait_for(lambda: clicked, 10)
            assert clicked == [notice]
            unsubscribe()
            srv.click(nid)
            time.sleep(0.3)  # nothing should arrive; the listener polls every 0.1 s
            assert clicked == [notice]
        finally:
            service.stop()


# --- the bridge's callbacks have types --------------------------------------------------------

def test_a_bridge_callback_that_expects_another_type_is_a_type_error(tmp_path: Path) -> None:
    """``Bridge.call``/``call_async``/``post`` are generic: mypy refuses a ``done`` whose argument
    is not what the work returns, and accepts the matching one."""
    from test_lint import _mypy_cache

    snippet = tmp_path / "uses_bridge.py"
    snippet.write_text(
        "from hearthside.ui.bridge import Bridge\n\n\n"
        "def wants_text(value: str) -> None: ...\n\n\n"
        "async def answer() -> int:\n    return 42\n\n\n"
        "def use(bridge: Bridge) -> None:\n"
        "    bridge.call(lambda: 'fine', wants_text)\n"
        "    bridge.call(lambda: 42, wants_text)  # line 13\n"
        "    bridge.call_async(answer, wants_text)  # line 14\n"
        "    bridge.post(wants_text, 42)  # line 15\n")
    env = {**os.environ, "MYPYPATH": str(ROOT / "desktop")}
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir",
                          _mypy_cache(), str(snippet)], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=False, timeout=600)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert sorted({int(line.split(":")[1]) for line in errors}) == [13, 14, 15], out.stdout + out.stderr
