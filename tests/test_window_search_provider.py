"""The Settings window's *Web search* section: the providers the real first-party packs
registered (searxng, brave, tavily), the choice saved to ``search.provider``, and a provider's
API key handed to the websearch pack's own form, into the real keyring — then a real search
through the chosen provider against a fake Brave API on 127.0.0.1 that checks the key header."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import tomllib
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import make_bridge

WAIT = 30_000
KEY = "BSA-test-key-0123456789abcdef"


class FakeBrave(BaseHTTPRequestHandler):
    """Brave's real shape: GET /res/v1/web/search?q=..., the key in X-Subscription-Token."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        srv: Any = self.server
        url = urllib.parse.urlsplit(self.path)
        srv.keys.append(self.headers.get("X-Subscription-Token", ""))
        if self.headers.get("X-Subscription-Token") != KEY:
            body, code = json.dumps({"type": "ErrorResponse", "error": {"status": 401}}).encode(), 401
        else:
            q = dict(urllib.parse.parse_qsl(url.query))["q"]
            results = [{"title": f"About {q}", "url": "https://brave.example/a", "description": "a hearth"}]
            body, code = json.dumps({"type": "search", "web": {"results": results}}).encode(), 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def brave() -> Iterator[Any]:
    srv: Any = ThreadingHTTPServer(("127.0.0.1", 0), FakeBrave)
    srv.daemon_threads, srv.keys = True, []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.endpoint = f"http://127.0.0.1:{srv.server_address[1]}/res/v1/web/search"
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def window(qtbot, app_context):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.settings import SettingsWindow

    bridge = make_bridge(app_context)
    w = SettingsWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    box = w.search_box
    qtbot.waitUntil(lambda: box.state is not None, timeout=60_000)  # the packs load on a worker
    yield w
    bridge.close()


def _act(qtbot, box, action) -> str:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(box.done, timeout=WAIT) as got:
        action()
    return str(got.args[0])


def _saved(app_context) -> Any:  # type: ignore[no-untyped-def]
    p = app_context.paths.settings_file
    return tomllib.loads(p.read_text()).get("search", {}).get("provider") if p.exists() else None


def _select(box, name: str) -> None:  # type: ignore[no-untyped-def]
    box.provider.setCurrentIndex(box.provider.findText(name))


def test_the_registered_providers_are_offered_and_the_first_is_in_use(window) -> None:  # type: ignore[no-untyped-def]
    box = window.search_box
    names = [box.provider.itemText(i) for i in range(box.provider.count())]
    assert sorted(names) == ["brave", "searxng", "tavily"]
    assert box.provider.currentText() == names[0]
    assert f"Searches go to {names[0]} (the first one offered; none is chosen yet)." in box.status.text()


def test_choosing_a_provider_that_needs_a_key_says_so_and_the_key_goes_to_the_keyring_only(  # type: ignore[no-untyped-def]
        qtbot, window, app_context, secret_service, brave, isolated_home) -> None:
    from hearthside.core.search import SearchQuery
    from hearthside.plugin import pack_secrets

    app_context.settings.set("search.brave.endpoint", brave.endpoint)
    box = window.search_box
    _select(box, "brave")
    assert "brave needs an API key and has none yet" in box.status.text()
    assert box.key.isVisible() and box.key.echoMode() == box.key.EchoMode.Password
    assert _act(qtbot, box, box.use_btn.click) == "chosen"
    assert _saved(app_context) == "brave"
    assert "Web searches now go to brave." in box.message.text()
    assert "Searches go to brave." in box.status.text() and "has none yet" in box.status.text()

    box.key.setText(KEY)
    assert _act(qtbot, box, box.key_btn.click) == "key saved"
    assert box.key.text() == "" and "The brave API key is in the keyring." in box.message.text()
    assert "Brave Search: key set; paste a new key below to replace it." in box.status.text()
    assert pack_secrets("websearch").get("brave") == KEY  # through the pack's own form
    for f in (p for p in isolated_home.rglob("*") if p.is_file() and not p.is_symlink()):
        assert KEY.encode() not in f.read_bytes(), f  # settings.toml, logs, the pack's files
    # a real search through the provider in use now, with the key from the keyring
    provider = app_context.plugins.search_provider()
    assert provider is not None and provider.name == "brave"
    results = asyncio.run(provider.search(SearchQuery("hearth", 3)))
    assert [r.title for r in results] == ["About hearth"] and brave.keys == [KEY]


def test_a_provider_without_a_key_has_no_key_field(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    box = window.search_box
    _select(box, "searxng")
    assert not box.key.isVisible() and "API key" not in box.status.text()
    assert _act(qtbot, box, box.use_btn.click) == "chosen"
    assert _saved(app_context) == "searxng"


def test_an_empty_key_is_refused_and_nothing_is_stored(qtbot, window, secret_service) -> None:  # type: ignore[no-untyped-def]
    from hearthside.plugin import pack_secrets

    box = window.search_box
    _select(box, "tavily")
    box.key.setText("   ")
    assert _act(qtbot, box, box.key_btn.click) == "failed"
    assert box.message.text() == "Paste the API key first; nothing was stored."
    assert pack_secrets("websearch").get("tavily") is None


def test_a_saved_provider_no_pack_offers_is_named_and_can_be_replaced(  # type: ignore[no-untyped-def]
        qtbot, app_context, isolated_home) -> None:
    from hearthside.ui.windows.settings import SettingsWindow

    app_context.settings.set("search.provider", "bing")
    bridge = make_bridge(app_context)
    try:
        w = SettingsWindow(app_context, bridge)
        qtbot.addWidget(w)
        box = w.search_box
        qtbot.waitUntil(lambda: box.state is not None, timeout=60_000)
        assert ("search.provider is 'bing', which no pack offers: web search is off until you choose a provider "
                "here.") in box.status.text()
        _select(box, "tavily")
        assert _act(qtbot, box, box.use_btn.click) == "chosen"
        assert _saved(app_context) == "tavily" and "bing" not in box.status.text()
    finally:
        bridge.close()


def test_a_blocked_pack_takes_its_providers_away(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.settings import SettingsWindow

    app_context.settings.set("plugins.blocked", ["websearch", "searxng"])
    bridge = make_bridge(app_context)
    try:
        w = SettingsWindow(app_context, bridge)
        qtbot.addWidget(w)
        box = w.search_box
        qtbot.waitUntil(lambda: box.state is not None, timeout=60_000)
        assert box.provider.count() == 0 and not box.use_btn.isEnabled()
        assert box.status.text() == "No pack offers a web search: install or enable one in the Plugins window."
    finally:
        bridge.close()
