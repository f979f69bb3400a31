"""Plugin API 1.2's safe fetch and fence helper, through ``hearthside.plugin`` as a pack sees them.

The feeds and websearch packs test the fetch through their tools; these tests hold the exported
names to their documented behaviour directly, against a real HTTP server on 127.0.0.1: what is
read, every refusal (the address, each redirect hop, the redirect count, the size cap, the one
deadline, an error status), that no cookie is kept between hops, and that importing the plugin
API does not load httpx2 (only the first fetch does).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import hearthside.plugin as api
import pytest

SEEN_COOKIES: list[str] = []


class Site(BaseHTTPRequestHandler):
    """A small web site whose paths each show one behaviour."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        path = self.path
        if path == "/page":
            self._send(200, "café".encode("latin-1"), {"Content-Type": "text/plain; charset=latin-1",
                                                       "ETag": '"v1"'})
        elif path == "/hop":  # a relative redirect on this computer, which is followed
            self._send(302, headers={"Location": "/page"})
        elif path == "/cookie":
            self._send(302, headers={"Location": "/check-cookie", "Set-Cookie": "sid=s3cret; Path=/"})
        elif path == "/check-cookie":
            SEEN_COOKIES.append(self.headers.get("Cookie", ""))
            self._send(200, b"ok")
        elif path.startswith("/to/"):
            target = {"private": "https://192.168.0.1/admin", "file": "file:///etc/passwd",
                      "plain": "http://example.org/", "metadata": "http://169.254.169.254/latest",
                      "mapped": "https://[::ffff:10.0.0.1]/"}[path[4:]]
            self._send(302, headers={"Location": target})
        elif path.startswith("/loop/"):
            n = int(path[6:])
            self._send(302, headers={"Location": f"http://127.0.0.1:{port}/loop/{n + 1}"})
        elif path == "/big":
            self._send(200, b"x" * 5000)
        elif path == "/notmod":
            self._send(304)
        elif path == "/gone":
            self._send(404, b"no")
        elif path == "/trickle":  # one byte a while, for ever: only the total deadline ends it
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        else:
            self._send(404)


@pytest.fixture
def site() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_a_page_on_this_computer_is_read_with_its_headers_after_a_redirect(site: str) -> None:
    got = api.safe_get(f"{site}/hop", headers={"Accept": "text/plain"})
    assert isinstance(got, api.Fetched)
    assert got.url == f"{site}/page" and got.status == 200 and not got.not_modified
    assert got.body == "café".encode("latin-1") and got.charset() == "latin-1"
    assert got.headers["etag"] == '"v1"'


def test_a_304_is_not_modified_and_an_error_status_is_one_sentence(site: str) -> None:
    assert api.safe_get(f"{site}/notmod").not_modified
    with pytest.raises(api.FetchError) as exc:
        api.safe_get(f"{site}/gone?token=s3cret")
    assert str(exc.value) == f"{site}/gone answered HTTP 404 (not found)"  # the query is not shown


@pytest.mark.parametrize(("hop", "target"), [
    ("private", "https://192.168.0.1/admin"), ("file", "file:///etc/passwd"),
    ("plain", "http://example.org/"), ("metadata", "http://169.254.169.254/latest"),
    ("mapped", "https://[::ffff:10.0.0.1]/"),
])
def test_every_redirect_hop_is_checked_by_the_same_rule(site: str, hop: str, target: str) -> None:
    with pytest.raises(api.FetchRefused) as exc:
        api.safe_get(f"{site}/to/{hop}")
    assert str(exc.value).startswith(f"{site}/to/{hop} redirected to {target}, which is not read (")


def test_more_redirects_than_the_limit_are_refused(site: str) -> None:
    with pytest.raises(api.FetchError) as exc:
        api.safe_get(f"{site}/loop/0")
    assert str(exc.value) == f"{site}/loop/0 redirected more than {api.MAX_REDIRECTS} times"


def test_no_cookie_is_kept_from_one_hop_to_the_next(site: str) -> None:
    SEEN_COOKIES.clear()
    assert api.safe_get(f"{site}/cookie").body == b"ok"
    assert SEEN_COOKIES == [""]


def test_a_body_over_the_cap_is_refused_while_it_streams(site: str) -> None:
    assert len(api.safe_get(f"{site}/big", max_bytes=5000).body) == 5000
    with pytest.raises(api.FetchError) as exc:
        api.safe_get(f"{site}/big", max_bytes=2048)
    assert str(exc.value) == f"{site}/big sent more than 2 KiB, more than is read"


def test_one_deadline_covers_a_server_that_never_stops_trickling(site: str) -> None:
    with pytest.raises(api.FetchError) as exc:
        api.safe_get(f"{site}/trickle", timeout=1.0)
    assert str(exc.value) == f"{site}/trickle did not answer within 1 s"


@pytest.mark.parametrize(("url", "why"), [
    ("", "the address is empty"),
    ("http://example.org/feed", "uses plain http://"),
    ("http://localhost/feed", "uses plain http://"),
    ("https://10.1.2.3/", "private or local-network address"),
    ("https://[fe80::1]/", "private or local-network address"),
    ("ftp://example.org/f", "is not a web address"),
    ("https://user:pw@example.org/f", "has a user name or password in it"),
    ("https://exa mple.org:99999/", "is not a valid web address"),
])
def test_an_address_that_may_not_be_read_is_refused_before_any_connection(url: str, why: str) -> None:
    for call in (api.check_web_url, api.safe_get):
        with pytest.raises(api.FetchRefused) as exc:
            call(url)
        assert why in str(exc.value)
        assert "pw" not in str(exc.value)


def test_shown_url_hides_the_query_the_password_and_control_characters() -> None:
    assert api.shown_url("https://u:pw@example.org:8443/f?token=s3cret#x") == "https://example.org:8443/f"
    assert api.shown_url("https://[::1]/a\x1bb") == "https://[::1]/a?b"
    assert len(api.shown_url("https://example.org/" + "a" * 500)) == 120


def test_the_safe_client_follows_no_redirect_and_keeps_no_cookie(site: str) -> None:
    with api.safe_client(5.0) as http:
        resp = http.get(f"{site}/cookie")
        assert resp.status_code == 302  # a redirect is an answer, not a new request
        assert http.get(f"{site}/check-cookie").text == "ok"
    assert SEEN_COOKIES[-1] == ""


def test_importing_the_plugin_api_does_not_load_httpx2_and_the_first_fetch_does() -> None:
    code = ("import sys, hearthside.plugin as api\n"
            "print('httpx2' in sys.modules, 'httpcore2' in sys.modules)\n"
            "api.safe_client(1.0).close()\n"
            "print('httpx2' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


def test_untrusted_line_makes_one_escaped_capped_line() -> None:
    text = 'a\nb\rc\u2028d\u2029e\x00f</fence>"'
    assert api.untrusted_line(text, 100) == "a b c d e f&lt;/fence&gt;&quot;"
    assert api.untrusted_line("x" * 10, 4) == "xxxx…"
    assert api.untrusted_line(None, 5) == "" and api.untrusted_line(12, 5) == "12"


@pytest.mark.parametrize("pack", ["hearthside_feeds", "hearthside_websearch"])
def test_a_pack_that_needs_1_2_says_so_on_an_older_hearthside(pack: str) -> None:
    code = ("import hearthside.plugin as api\n"
            "api.PLUGIN_API_VERSION = '1.1'\n"
            f"import {pack}.plugin\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert out.returncode != 0
    name = pack.replace("_", "-")
    assert (f"ImportError: {name} needs plugin API 1.2 or a later 1.x; this Hearthside has 1.1"
            in out.stderr.splitlines()[-1])
    assert api.PLUGIN_API_VERSION == "1.2"
