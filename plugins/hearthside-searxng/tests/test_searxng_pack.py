"""hearthside-searxng against a loopback HTTP server that speaks SearXNG's JSON format."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hearthside.core.hosttools import make_web_search
from hearthside.core.search import SearchQuery, SearchUnavailable
from hearthside.core.tools import ToolEnv
from hearthside.pluginhost.host import PackHost, ReadOnlySettings, discover
from hearthside_searxng.provider import SearxngProvider


class FakeSearxng(BaseHTTPRequestHandler):
    """Answers /search?format=json like SearXNG does; mode switches come from the server."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server: Any = self.server
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        server.requests.append((url.path, params))
        if server.mode == "forbidden" or params.get("format") != "json":
            self.send_response(403)
            self.end_headers()
            self.wfile.write(b"Forbidden")
            return
        if server.mode == "html":
            body = b"<html>not json</html>"
        else:
            results = [{"url": f"https://site{i}.example/page", "title": f"Result {i} for {params['q']}",
                        "content": f"About {params['q']} <b>{i}</b>", "engine": "duckduckgo",
                        "publishedDate": f"2026-01-0{i % 9 + 1}" if i % 2 else None}
                       for i in range(30)]
            results.insert(3, {"title": "no url"})
            body = json.dumps({"query": params["q"], "number_of_results": 30, "results": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def searxng() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), FakeSearxng)
    server.requests, server.mode = [], "ok"
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/searx/"
    yield server
    server.shutdown()
    server.server_close()
    t.join(5)


def settings_for(url: str) -> ReadOnlySettings:
    return ReadOnlySettings(lambda k, d=None: {"searxng.url": url, "searxng.timeout": 5}.get(k, d))


def test_the_pack_registers_the_searxng_provider() -> None:
    host = PackHost()
    [report] = host.load(discover(only_dists=["hearthside-searxng"]))
    assert report.status == "ok" and report.contributes["providers"] == ["searxng"]


def test_search_maps_results_and_passes_site_and_freshness(searxng: Any) -> None:
    p = SearxngProvider(settings_for(searxng.url))
    results = asyncio.run(p.search(SearchQuery("hearth", 7, "example.org", "week")))
    assert len(results) == 7
    assert results[0].title == "Result 0 for hearth site:example.org"
    assert results[1].url == "https://site1.example/page" and results[1].source == "duckduckgo"
    assert results[1].date == "2026-01-02" and results[0].date == ""
    path, params = searxng.requests[0]
    assert path == "/searx/search"
    assert params == {"q": "hearth site:example.org", "format": "json", "pageno": "1", "time_range": "week"}


def test_web_search_tool_fences_searxng_results(searxng: Any) -> None:
    tool = make_web_search(SearxngProvider(settings_for(searxng.url)))
    out = asyncio.run(tool.execute({"query": "cats"}, ToolEnv()))
    assert not out.is_error
    assert out.content.count("<result ") == 5
    assert "&lt;b&gt;" in out.content and "<b>" not in out.content


def test_missing_url_says_which_setting_to_set() -> None:
    p = SearxngProvider(ReadOnlySettings(lambda k, d=None: d))
    with pytest.raises(SearchUnavailable, match="searxng.url"):
        asyncio.run(p.search(SearchQuery("q")))


def test_a_bad_url_is_reported() -> None:
    p = SearxngProvider(url="file:///etc/passwd")
    with pytest.raises(SearchUnavailable, match="not an http"):
        asyncio.run(p.search(SearchQuery("q")))


def test_json_disabled_on_the_instance_explains_the_fix(searxng: Any) -> None:
    searxng.mode = "forbidden"
    with pytest.raises(SearchUnavailable, match="search.formats"):
        asyncio.run(SearxngProvider(url=searxng.url).search(SearchQuery("q")))


def test_a_non_json_answer_and_an_unreachable_server_are_errors(searxng: Any) -> None:
    searxng.mode = "html"
    with pytest.raises(RuntimeError, match="did not answer with JSON"):
        asyncio.run(SearxngProvider(url=searxng.url).search(SearchQuery("q")))
    with pytest.raises(RuntimeError, match="cannot reach SearXNG"):
        asyncio.run(SearxngProvider(url="http://127.0.0.1:9/", timeout=5).search(SearchQuery("q")))
