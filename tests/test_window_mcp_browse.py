"""*Browse…* in the MCP servers window against a loopback MCP Registry (v0.1 JSON): search and
page, the selected server's command shown before anything is added, a remote one added and
connected to a real MCP server on 127.0.0.1, and a registry answering 500 in the message line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import widget_texts
from mcp_helpers import HttpServerProcess
from test_mcp_registry import FakeRegistry, registry, settings_for  # noqa: F401 - fixtures
from test_window_mcp import _status_text, window  # noqa: F401 - the fixture

pytestmark = pytest.mark.keyring


def _search(qtbot, w, dlg, text: str) -> None:  # type: ignore[no-untyped-def]
    dlg.query.setText(text)
    with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a.startswith("browse")):
        dlg.search_btn.click()


@pytest.mark.slow
def test_browse_search_page_see_the_command_then_add_a_remote_one(  # type: ignore[no-untyped-def]
    qtbot, window, registry, app_context, tmp_path  # noqa: F811
) -> None:
    from PySide6.QtWidgets import QLineEdit

    w = window
    dlg = w.show_browse()
    _search(qtbot, w, dlg, "weather")
    assert dlg.list.topLevelItemCount() == 2 and dlg.more_btn.isEnabled(), dlg.message.text()
    with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "browse"):
        dlg.more_btn.click()
    assert dlg.list.topLevelItemCount() == 3 and not dlg.more_btn.isEnabled()

    dlg.list.setCurrentItem(dlg.list.topLevelItem(0))  # the npm package
    assert "It runs: npx -y @example/weather-mcp@1.2.3" in dlg.plan_text.text()
    assert dlg.fields["WEATHER_API_KEY"].echoMode() == QLineEdit.EchoMode.Password
    assert dlg.fields["UNITS"].text() == "metric"
    assert not app_context.paths.mcp_file.exists()  # seeing the plan adds nothing

    with HttpServerProcess(secret_dir=tmp_path) as srv:
        registry.servers[2]["server"]["remotes"][0]["url"] = srv.url
        _search(qtbot, w, dlg, "weather-remote")
        dlg.list.setCurrentItem(dlg.list.topLevelItem(0))
        assert f"It runs: streamable HTTP at {srv.url}" in dlg.plan_text.text()
        with qtbot.waitSignal(w.finished_action, timeout=60000, check_params_cb=lambda a: a == "test"):
            dlg.add_btn.click()
        qtbot.waitUntil(lambda: _status_text(w, "weather-remote") == "connected", timeout=30000)
    assert app_context.mcp.get("weather-remote").url == srv.url


def test_a_registry_answering_500_is_one_sentence_in_the_dialog(  # type: ignore[no-untyped-def]
    qtbot, window, settings_for, app_context  # noqa: F811
) -> None:
    reg = FakeRegistry([], "500")
    try:
        settings_for(reg.url)
        w = window
        dlg = w.show_browse()
        _search(qtbot, w, dlg, "x")
        assert "answered HTTP 500" in dlg.message.text()
        assert dlg.list.topLevelItemCount() == 0 and not dlg.add_btn.isEnabled()
        assert any("answered HTTP 500" in t for t in widget_texts(dlg))
    finally:
        reg.close()
    assert not app_context.paths.mcp_file.exists()
