"""Headless mode and desktop notifications over a real D-Bus session bus."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from fakemodel import FakeModel, wait_for
from hearthside.app.notify import DesktopNotifier, FanoutNotifier, LogNotifier, NotificationHistory
from notifyserver import NotificationServer
from personas import make_persona

needs_bus = pytest.mark.skipif(not os.environ.get("DBUS_SESSION_BUS_ADDRESS"),
                               reason="needs the D-Bus session that scripts/run-tests.sh starts")


@needs_bus
def test_the_desktop_notifier_reaches_the_notification_service() -> None:
    with NotificationServer() as srv:
        assert DesktopNotifier().notify("juniper", "Your 3pm sync is soon")
        assert wait_for(lambda: srv.received, 5)
    assert srv.received == [{"app": "Hearthside", "summary": "juniper", "body": "Your 3pm sync is soon"}]


def test_without_a_notification_service_the_desktop_notifier_says_no(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    n = DesktopNotifier(timeout=1)
    assert n.notify("juniper", "text") is False and n.last_error
    assert FanoutNotifier([n, LogNotifier()]).notify("juniper", "text") is True


def test_the_history_is_bounded_and_keeps_the_newest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = NotificationHistory(tmp_path / "state" / "notifications.jsonl", max_entries=5)
    for i in range(12):
        h.append("juniper", f"alert {i}", "notified")
    got = h.entries()
    assert [e.text for e in got] == [f"alert {i}" for i in range(7, 12)]
    assert all(e.persona == "juniper" and e.status == "notified" and e.time for e in got)
    with open(h.path, "a") as fh:
        fh.write("{not json\n")
    assert len(h.entries()) == 5  # a damaged line is skipped, not fatal


@needs_bus
def test_headless_mode_runs_heartbeats_notifies_and_stops_on_sigterm(app_context) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    app_context.settings.set("personas", {"juniper": {"heartbeat_interval_minutes": 1}})
    with NotificationServer() as srv, FakeModel(default={"text": "Your 3pm sync starts soon."}) as fm:
        env = dict(os.environ, **fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback",
                   HEARTHSIDE_HEARTBEAT_MINUTE_SECONDS="0.6")  # a 1-minute interval ticks in 0.6 s
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "--headless"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(lambda: srv.received, 60), "no desktop notification arrived"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == 0, err
    assert srv.received[0]["summary"] == "juniper" and "3pm sync" in srv.received[0]["body"]
    entries = app_context.notifications.entries()
    assert entries and entries[0].status == "notified" and "3pm sync" in entries[0].text
    assert "running headless" in out


HOSTILE = ('Done & dusted. <a href="https://evil.example/x">click</a> '
           '<img src="file:///home/me/.ssh/id_ed25519"> <b>bold</b>')


@needs_bus
@pytest.mark.parametrize("caps", [("body", "body-markup"), None])
def test_markup_in_a_notification_body_arrives_escaped(caps) -> None:  # type: ignore[no-untyped-def]
    """A server that renders body markup (or cannot say whether it does) gets the text escaped:
    no link, image or bold is rendered, a bare & stays an &. On the old code it arrived raw."""
    with NotificationServer(capabilities=caps) as srv:
        assert DesktopNotifier().notify("juniper", HOSTILE)
        assert wait_for(lambda: srv.received, 5)
    body = srv.received[0]["body"]
    assert body == ("Done &amp; dusted. &lt;a href=\"https://evil.example/x\"&gt;click&lt;/a&gt; "
                    "&lt;img src=\"file:///home/me/.ssh/id_ed25519\"&gt; &lt;b&gt;bold&lt;/b&gt;")
    assert "<" not in body and ">" not in body


@needs_bus
def test_a_server_without_body_markup_gets_plain_text() -> None:
    with NotificationServer(capabilities=("body",)) as srv:
        assert DesktopNotifier().notify("juniper", HOSTILE)
        assert wait_for(lambda: srv.received, 5)
    assert srv.received[0]["body"] == HOSTILE  # shown as text by such a server, never rendered


@needs_bus
def test_the_length_cut_never_splits_an_entity() -> None:
    from hearthside.adapters.notifications import BODY_LIMIT

    with NotificationServer() as srv:
        for shift in range(5):  # the cut falls at every offset inside "&amp;"
            assert DesktopNotifier().notify("juniper", "x" * (BODY_LIMIT - 3 - shift) + "&" * 10)
        assert wait_for(lambda: len(srv.received) == 5, 5)
    for got in srv.received:
        body = got["body"]
        assert len(body) <= BODY_LIMIT
        assert body.lstrip("x").replace("&amp;", "") == ""  # only whole entities after the x's
