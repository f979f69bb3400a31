"""A check-in that reads the persona's feeds: the fake model calls the feeds pack's feeds_new
(a read-only pack tool, so it runs unattended), alerts with the new post's title, and the next
check-in hears nothing new and stays silent."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakemodel import FakeModel
from hearthside.app.heartbeat import HeartbeatService
from hearthside.app.notify import LogNotifier
from personas import FILES, make_persona, use_model

RSS = (b'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Lisbon cycling</title>'
       b"<item><title>New bike lane on Avenida da Liberdade</title><guid>lane-1</guid>"
       b"<link>https://cycling.example/lane-1</link><pubDate>Mon, 30 Nov 2026 08:00:00 GMT</pubDate>"
       b"</item></channel></rss>")


class Feed(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(RSS)))
        self.end_headers()
        self.wfile.write(RSS)


@pytest.fixture
def feed_url() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Feed)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/feed.xml"
    srv.shutdown()
    srv.server_close()
    t.join(5)


def tool_output(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")


def alert_from_feed(body: dict[str, Any]) -> dict[str, Any]:
    out = tool_output(body)
    if "nothing new" in out:
        return {"text": "HEARTBEAT_OK"}
    title = next(line.removeprefix("title: ") for line in out.splitlines() if line.startswith("title: "))
    return {"text": f"New on your cycling blog: {title}"}


def test_a_check_in_calls_feeds_new_and_alerts_once_with_the_new_post(  # type: ignore[no-untyped-def]
        app_context, monkeypatch, feed_url) -> None:
    from hearthside_feeds import store

    make_persona(app_context, files={**FILES, "HEARTBEAT.md": "- Tell me about new posts on the blogs I follow.\n"})
    store.add(feed_url, "juniper")
    call = {"tool_calls": [("feeds_new", json.dumps({"since": "30d"}))]}
    with FakeModel([call, alert_from_feed, call, alert_from_feed]) as fm:
        use_model(monkeypatch, fm)
        svc = HeartbeatService(app_context, notifier=LogNotifier(), history=app_context.notifications)
        first = asyncio.run(asyncio.wait_for(svc.run("juniper"), 60))
        second = asyncio.run(asyncio.wait_for(svc.run("juniper"), 60))
        offered = {t["function"]["name"] for t in fm.requests[0].get("tools", [])}
        outputs = [tool_output(fm.requests[1]), tool_output(fm.requests[3])]
    assert "feeds_new" in offered
    assert first.status == "notified" and "New bike lane on Avenida da Liberdade" in first.text
    assert "untrusted" in outputs[0] and "nothing new" in outputs[1]
    assert second.status == "silent"
    persona_files = {p.name for p in (app_context.paths.personas_dir / "juniper").rglob("*")}
    assert persona_files == set(FILES)  # the seen record is in the pack's data folder, not here
