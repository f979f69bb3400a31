"""The MCP window's *Sign in…* against a real server protected by the ``mcp`` SDK's own OAuth on
127.0.0.1, the real keyring and Qt offscreen: the button appears for a server that asks for a
sign-in, the "browser" (the window's opener, here this test's HTTP client) follows the address,
the address is shown as selectable text too, and the server connects afterwards."""

from __future__ import annotations

import sys
import threading
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import make_bridge
from test_mcp_oauth import OAuthServer

pytestmark = pytest.mark.keyring


def test_sign_in_button_signs_in_through_the_browser_and_connects(  # type: ignore[no-untyped-def]
    qtbot, app_context, secret_service, tmp_path
) -> None:
    from hearthside.core.errors import ErrorKind
    from hearthside.core.mcpconfig import server_from_entry
    from hearthside.ui.windows.mcp import McpWindow

    srv = OAuthServer(tmp_path)
    bridge = make_bridge(app_context)
    app_context.mcp.on_status = bridge.mcp_status.emit
    try:
        cfg, _, _ = server_from_entry("notes", {"type": "http", "url": srv.url, "timeout": 20}, source="user")
        app_context.mcp.add(cfg)
        w = McpWindow(app_context, bridge)
        qtbot.addWidget(w)
        w.show()
        qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 1, timeout=20000)
        w.tree.setCurrentItem(w.tree.topLevelItem(0))
        assert w.signin_btn.isHidden()

        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            w.test_selected()
        assert w.statuses["notes"].kind is ErrorKind.SIGN_IN_NEEDED
        assert "Sign in…" in w.detail.text()
        assert not w.signin_btn.isHidden()
        qtbot.waitUntil(lambda: w.tree.topLevelItem(0).text(3) == "needs sign-in", timeout=10000)

        visited: list[str] = []

        def browser(url) -> bool:  # type: ignore[no-untyped-def]
            visited.append(url.toString())
            return True

        w.opener = browser
        with qtbot.waitSignal(w.finished_action, timeout=60000, check_params_cb=lambda a: a == "test"):
            w.signin_btn.click()
            # the address is shown as selectable text as well, while the sign-in waits
            qtbot.waitUntil(lambda: bool(visited) and w.signin_url.isVisible(), timeout=30000)
            assert w.signin_url.text() == visited[0] and w.signin_url.isReadOnly()
            threading.Thread(target=lambda: urllib.request.urlopen(visited[0], timeout=60).read(),
                             daemon=True).start()
        assert visited and visited[0].startswith(f"http://127.0.0.1:{srv.port}/authorize?")
        assert w.signin_url.isHidden()  # shown while waiting, gone once signed in
        qtbot.waitUntil(lambda: w.statuses["notes"].state == "connected", timeout=30000)
        assert w.signin_btn.isHidden()
        assert app_context.mcp.auth_state(app_context.mcp.get("notes")) == "signed in"
    finally:
        app_context.runtime.run(app_context.mcp.close(), timeout=30)
        app_context.mcp.remove("notes")
        bridge.close()
        srv.stop()
