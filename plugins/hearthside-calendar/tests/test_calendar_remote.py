"""hearthside-calendar: subscriptions from a real HTTP server on 127.0.0.1, CalDAV from a real Radicale.

The server answers with an ETag and honours If-None-Match (a 304 reuses the cached copy),
and can be slow, missing, redirect elsewhere or send too much. The subscription's address and
the CalDAV password live in the (test session's) keyring; no file the pack writes holds them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hearthside_calendar import cache, store
from hearthside_calendar.agenda import Agenda
from hearthside_calendar.fetch import FetchError, fetch_ics
from hearthside_calendar.service import CalendarService
from hearthside_calendar.sources import SourceError, parse_source

FIX = Path(__file__).parent / "fixtures"
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
ICS = (FIX / "google.ics").read_bytes()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        srv: Any = self.server
        srv.hits.append((self.path, self.headers.get("If-None-Match", "")))
        if self.path.startswith("/slow"):
            srv.release.wait(30)
        if self.path.startswith("/missing"):
            self.send_response(404)
            self.end_headers()
            return
        if self.path.startswith("/to-private"):
            self.send_response(302)
            self.send_header("Location", "https://10.0.0.1/cal.ics")
            self.end_headers()
            return
        if self.path.startswith("/to-file"):
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()
            return
        if self.path.startswith("/hop"):
            self.send_response(301)
            self.send_header("Location", "/secret-token-abc/basic.ics")
            self.end_headers()
            return
        if self.path.startswith("/huge"):
            self.send_response(200)
            self.end_headers()
            chunk = b"X" * 65536
            try:
                for _ in range(40 * 16):
                    self.wfile.write(chunk)
            except OSError:
                pass
            return
        if self.headers.get("If-None-Match") == '"v1"':
            self.send_response(304)
            self.send_header("ETag", '"v1"')
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/calendar")
        self.send_header("ETag", '"v1"')
        self.send_header("Content-Length", str(len(ICS)))
        self.end_headers()
        self.wfile.write(ICS)


@pytest.fixture
def server() -> Iterator[Any]:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.hits, srv.release = [], threading.Event()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.release.set()
    srv.shutdown()


def test_a_subscription_is_fetched_cached_and_revalidated_with_its_etag(server: Any, isolated_home: Path) -> None:
    url = f"{server.base}/secret-token-abc/basic.ics"
    entry = store.add("Work", url)
    svc = CalendarService(refresh_after=0)
    out = Agenda(svc, now=lambda: NOW).agenda(dt.timezone(dt.timedelta(hours=-5)))
    assert "Tue 01 Dec 14:00–15:00  Quarterly review  (https://meet.example/abc)  [Work]" in out
    assert server.hits == [("/secret-token-abc/basic.ics", "")]
    assert cache.load_meta(entry.id).etag == '"v1"'
    first = cache.body_stamp(entry.id)
    out2 = Agenda(svc, now=lambda: NOW).agenda(dt.UTC)
    assert server.hits[-1] == ("/secret-token-abc/basic.ics", '"v1"')  # asked again, answered 304
    assert "Quarterly review" in out2
    assert cache.body_stamp(entry.id) == first  # the copy was reused, not rewritten
    # the secret address is in the keyring only: not in the config, the cache or anything written
    for path in isolated_home.rglob("*"):
        if path.is_file():
            assert b"secret-token-abc" not in path.read_bytes(), path


def test_a_slow_server_gets_three_seconds_then_the_copy_is_used_and_its_age_said(server: Any) -> None:
    entry = store.add("Slow", f"{server.base}/slow/cal.ics")
    cache.save_body(entry.id, ICS)
    cache.save_meta(entry.id, cache.CacheMeta(fetched_at=time.time() - 2 * 3600 - 60, tried_at=time.time() - 3600))
    svc = CalendarService(refresh_after=60)
    start = time.monotonic()
    out = Agenda(svc, now=lambda: NOW).agenda(dt.UTC)
    waited = time.monotonic() - start
    assert waited < 25  # not the server's 30 s
    assert "Slow: from a copy 2 hours old; the calendar did not answer." in out
    assert "Quarterly review" in out


@pytest.mark.parametrize(("path", "said"), [
    ("/missing/cal.ics", "127.0.0.1 has no calendar at that address (HTTP 404)"),
    ("/to-private/cal.ics", ("the calendar's server redirected to 10.0.0.1, an address on this computer or a "
                             "private network, which is refused")),
    ("/to-file/cal.ics", "the calendar's server redirected to a file: address, which is refused"),
    ("/huge/cal.ics", "the calendar at 127.0.0.1 is larger than 10 MB; it was not read"),
])
def test_bad_servers_are_one_sentence_and_other_calendars_still_work(server: Any, tmp_path: Path, path: str,
                                                                    said: str) -> None:
    good = tmp_path / "home.ics"
    good.write_bytes((FIX / "apple.ics").read_bytes())
    store.add("Home", str(good))
    store.add("Bad", server.base + path)
    out = Agenda(CalendarService(), now=lambda: dt.datetime(2026, 10, 25, 8, 0, tzinfo=dt.UTC)).agenda(dt.UTC)
    assert f"Bad: {said}." in out
    assert "Morning run (floating)  [Home]" in out


def test_redirects_on_this_computer_are_followed_and_rechecked(server: Any) -> None:
    got = fetch_ics(f"{server.base}/hop/cal.ics")
    assert got.body == ICS and got.etag == '"v1"'
    with pytest.raises(FetchError, match="redirected to 10.0.0.1"):
        fetch_ics(f"{server.base}/to-private/x.ics")


@pytest.mark.parametrize(("source", "why"), [
    ("http://example.com/cal.ics", "plain http:// is allowed only to this computer"),
    ("http://localhost:8080/cal.ics", "plain http:// is allowed only to this computer"),
    ("ftp://example.com/cal.ics", "ftp:// addresses are not calendars"),
    ("https://bob:pw@example.com/cal.ics", "put the user name in --user"),
    ("caldav://example.com/dav/", "a CalDAV calendar needs a user name"),
])
def test_sources_that_are_refused(source: str, why: str) -> None:
    with pytest.raises(SourceError, match=why):
        parse_source(source)


def test_webcal_and_caldav_addresses_become_https() -> None:
    assert parse_source("webcal://example.com/a.ics").location == "https://example.com/a.ics"
    src = parse_source("caldav://dav.example.com/cal/", user="ada")
    assert (src.kind, src.location) == ("caldav", "https://dav.example.com/cal/")
    assert parse_source("http://127.0.0.1:5232/ada/cal/", user="ada").kind == "caldav"


# --- CalDAV against a real Radicale ------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[str]:
    users = tmp_path / "users"
    users.write_text("ada:correct horse\n")
    port = _free_port()
    cfg = tmp_path / "radicale.conf"
    cfg.write_text(f"""[server]
hosts = 127.0.0.1:{port}
[auth]
type = htpasswd
htpasswd_filename = {users}
htpasswd_encryption = plain
[storage]
filesystem_folder = {tmp_path / 'collections'}
[logging]
level = warning
""")
    proc = subprocess.Popen([sys.executable, "-m", "radicale", "--config", str(cfg)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read() if proc.stderr else b""
                    raise RuntimeError("Radicale did not start: " + err.decode())
                time.sleep(0.1)
        auth = ("ada", "correct horse")
        cal = f"{base}/ada/work/"
        r = httpx.request("MKCALENDAR", cal, auth=auth)
        assert r.status_code == 201, r.text
        text = (FIX / "google.ics").read_bytes().decode("utf-8")
        # Radicale keeps one event (UID) per resource: the stand-up series (3 VEVENTs) and the review
        head, _, rest = text.partition("BEGIN:VEVENT")
        tz_part = head.split("X-WR-TIMEZONE:America/New_York\r\n", 1)[1]
        events = ("BEGIN:VEVENT" + rest).rsplit("END:VCALENDAR", 1)[0]
        blocks = ["BEGIN:VEVENT" + b for b in events.split("BEGIN:VEVENT") if b]
        by_uid: dict[str, list[str]] = {}
        for b in blocks:
            uid = b.split("UID:", 1)[1].split("\r\n", 1)[0]
            by_uid.setdefault(uid, []).append(b)
        for uid, parts in by_uid.items():
            body = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + tz_part + "".join(parts)
                    + "END:VCALENDAR\r\n")
            r = httpx.put(f"{cal}{uid.split('@')[0]}.ics", content=body.encode(), auth=auth,
                          headers={"Content-Type": "text/calendar"})
            assert r.status_code in (201, 204), r.text
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _caldav_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def test_a_caldav_account_on_radicale_is_read_with_the_password_from_the_keyring(radicale: str,
                                                                                isolated_home: Path) -> None:
    entry = store.add("Team", f"{radicale}/ada/work/", user="ada", password="correct horse")
    svc = CalendarService()
    # the fetch asks the server for a window around now; the fixture's events are in late 2026
    [view] = svc.snapshot(wait=30)
    assert view.parsed is not None, view.notes
    out = Agenda(svc, now=lambda: dt.datetime(2026, 11, 9, 12, tzinfo=dt.UTC)).agenda(
        dt.timezone(dt.timedelta(hours=-5)), "2026-11-09", "2026-11-13")
    assert "Tue 10 Nov 10:00–10:30  Team stand-up (moved)  (Room 4, Building B)  [Team]" in out
    assert "Thu 12 Nov" not in out  # the cancelled instance
    for path in isolated_home.rglob("*"):
        if path.is_file():
            assert b"correct horse" not in path.read_bytes(), path
    assert json.loads((isolated_home / ".local/share/hearthside/pack-data/calendar/config.json").read_text())[
        "calendars"][0]["user"] == "ada"
    del entry


def test_a_caldav_account_whose_root_is_given_finds_its_calendars(radicale: str) -> None:
    store.add("Root", f"{radicale}/ada/", user="ada", password="correct horse")
    [view] = CalendarService().snapshot(wait=30)
    assert view.parsed is not None, view.notes
    assert view.parsed.events >= 3  # the stand-up series: its rule and two changed instances


def test_a_wrong_caldav_password_is_one_sentence(radicale: str, tmp_path: Path) -> None:
    good = tmp_path / "home.ics"
    good.write_bytes((FIX / "apple.ics").read_bytes())
    store.add("Home", str(good))
    store.add("Team", f"{radicale}/ada/work/", user="ada", password="wrong")
    out = Agenda(CalendarService(wait=30), now=lambda: dt.datetime(2026, 10, 25, 8, tzinfo=dt.UTC)).agenda(dt.UTC)
    assert ("Team: 127.0.0.1 refused the user name or password (HTTP 401); set them again with "
            "`hearthside calendar add` or in the Calendars settings.") in out
    assert "Morning run (floating)  [Home]" in out


def test_caldav_500_is_one_sentence() -> None:
    class Broken(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_PROPFIND(self) -> None:
            self.send_response(500)
            self.end_headers()

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        store.add("Broken", f"http://127.0.0.1:{srv.server_address[1]}/dav/", user="ada", password="pw")
        out = Agenda(CalendarService(wait=30), now=lambda: NOW).agenda(dt.UTC)
        assert "Broken: 127.0.0.1 had an internal error (HTTP 500); it may work later." in out
    finally:
        srv.shutdown()


def test_the_cache_files_are_private(server: Any) -> None:
    entry = store.add("Work", f"{server.base}/cal.ics")
    CalendarService().snapshot(wait=30)
    assert os.stat(cache.body_path(entry.id)).st_mode & 0o777 == 0o600
