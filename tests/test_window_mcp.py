"""The MCP servers window against the real MCP service, real GNOME Keyring and real MCP servers on
127.0.0.1: add with a header secret, the secret nowhere in the window nor on disk, import with
a preview, a 401 server, bad import files and a keyring that cannot store."""

from __future__ import annotations

import json
import logging
import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import make_bridge, widget_texts
from mcp_helpers import HttpServerProcess
from test_no_copy import forms

pytestmark = pytest.mark.keyring
NO_BUS = "unix:path=/nonexistent/hearthside-test-bus"


@pytest.fixture
def window(qtbot, app_context):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.mcp import McpWindow

    bridge = make_bridge(app_context)
    app_context.mcp.on_status = bridge.mcp_status.emit  # as the lifecycle does in the app
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.detail.text() != "Reading the servers…", timeout=20000)
    yield w
    app_context.runtime.run(app_context.mcp.close(), timeout=30)
    bridge.close()
    _forget_secrets(app_context)


def _forget_secrets(app) -> None:  # type: ignore[no-untyped-def]
    """The test keyring lives for the whole session: leave nothing in it for later tests."""
    import contextlib

    from hearthside.core.secrets import SecretStoreError

    for cfg in app.mcp.load().servers:
        for ref in cfg.secret_refs().values():
            key = cfg.keyring_key(ref)
            with contextlib.suppress(SecretStoreError):
                if key is not None:
                    app.secrets.delete(key)


def _fill_http(dlg, name: str, url: str, key: str, value: str) -> None:  # type: ignore[no-untyped-def]
    dlg.name.setText(name)
    dlg.kind.setCurrentIndex(0)
    dlg.url.setText(url)
    dlg.secret_key.setText(key)
    dlg.secret_value.setText(value)


def _status_text(w, name: str) -> str:  # type: ignore[no-untyped-def]
    for i in range(w.tree.topLevelItemCount()):
        it = w.tree.topLevelItem(i)
        if it.text(0) == name:
            return it.text(3)
    return ""


def test_add_http_server_with_a_header_secret_connects_and_the_secret_is_nowhere(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, secret_service, tmp_path, isolated_home
) -> None:
    from hearthside.app.logs import setup_logging

    setup_logging(app_context, level=logging.DEBUG, stderr=False)
    token = f"Bearer ui/{uuid.uuid4().hex}+T=="
    w = window
    with HttpServerProcess(tools=3, require_header=("Authorization", token), secret_dir=tmp_path) as srv:
        dlg = w.show_add()
        _fill_http(dlg, "alpha", srv.url, "Authorization", token)
        assert dlg.secret_value.echoMode().name == "Password"
        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            dlg.save_btn.click()
        qtbot.waitUntil(lambda: _status_text(w, "alpha") == "connected", timeout=30000)
        assert "alpha is connected, 9 tool(s)" in w.message.text()  # 6 built in + 3 extra
        assert "Secret Authorization: set (in the keyring)" in w.detail.text()
        assert dlg.secret_value.text() == ""
        texts = widget_texts(w) + widget_texts(dlg)
        assert texts, "the walk found no text, so it would prove nothing"
        assert any("alpha" in t for t in texts)
        for form in forms(token):
            assert not [t for t in texts if form in t], form
        # replace the secret with a wrong one: the server refuses it -> failed, "authentication"
        sd = w.show_secret()
        sd.value.setText("Bearer wrong-" + uuid.uuid4().hex)
        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            sd.save_btn.click()
        assert "authentication" in w.message.text() and "Replace secret" in w.message.text()
        assert _status_text(w, "alpha") == "failed"
        assert "authentication" in w.detail.text() and "Replace secret" in w.detail.text()
    app_context.runtime.run(app_context.mcp.close(), timeout=30)
    for h in logging.getLogger().handlers:
        h.flush()
    files = [p for p in isolated_home.rglob("*") if p.is_file() and not p.is_symlink()]
    logs = [p for p in files if "log" in p.parts]
    assert logs and any("alpha" in p.read_text(errors="replace") for p in logs)
    hits = [(form, str(p)) for p in files for form in forms(token) if form.encode() in p.read_bytes()]
    assert hits == []


def test_a_401_server_is_shown_failed_with_authentication_and_the_fix(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, secret_service, tmp_path
) -> None:
    w = window
    with HttpServerProcess(require_header=("Authorization", "Bearer right"), secret_dir=tmp_path) as srv:
        dlg = w.show_add()
        _fill_http(dlg, "guarded", srv.url, "Authorization", "Bearer not-the-right-one")
        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            dlg.save_btn.click()
        assert _status_text(w, "guarded") == "failed"
        assert "authentication failed (HTTP 401)" in w.detail.text()
        assert "Choose Replace secret" in w.detail.text()


def test_import_a_claude_desktop_file_shows_a_preview_then_imports(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, secret_service, tmp_path
) -> None:
    from hearthside.adapters.secrets import KeyringSecretStore

    token = f"ghp_{uuid.uuid4().hex}"
    f = tmp_path / "claude_desktop_config.json"
    f.write_text(json.dumps({"mcpServers": {
        "files": {"command": sys.executable, "args": ["-m", "nothing"], "env": {"GITHUB_TOKEN": token}},
        "remote": {"url": "https://mcp.example.org/mcp"},
    }}))
    w = window
    with qtbot.waitSignal(w.finished_action, timeout=20000) as got:
        w.preview_file(str(f))
    assert got.args == ["preview"]
    dlg = w.dialog
    text = dlg.text.text()
    assert "files" in text and "remote" in text and "files GITHUB_TOKEN" in text
    assert "move into the keyring" in text and token not in " ".join(widget_texts(dlg))
    assert app_context.mcp.load().servers == ()  # a preview writes nothing
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "import"):
        dlg.import_btn.click()
    assert {s.name for s in app_context.mcp.load().servers} == {"files", "remote"}
    assert "Imported 2 server(s)" in w.message.text() and "1 secret(s) moved" in w.message.text()
    assert token not in app_context.paths.mcp_file.read_text()
    files = app_context.mcp.get("files")
    assert KeyringSecretStore().get(files.keyring_key(files.secret_refs()["GITHUB_TOKEN"])) == token
    qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 2, timeout=10000)


@pytest.mark.parametrize("kind", ["malformed", "huge", "fifo"])
def test_a_bad_import_file_shows_the_reason_and_imports_nothing(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, tmp_path, kind
) -> None:
    f = tmp_path / "mcp.json"
    if kind == "malformed":
        f.write_text('{"mcpServers": {"a": {"command": "x"} "b": {}}}')
    elif kind == "huge":
        f.write_bytes(b'{"mcpServers": {}, "pad": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    else:
        os.mkfifo(f)
    w = window
    with qtbot.waitSignal(w.finished_action, timeout=20000) as got:
        w.preview_file(str(f))
    assert got.args == ["failed"]
    assert w.message.kind == "error"
    reason = {"malformed": "", "huge": "larger than", "fifo": "not a regular file"}[kind]
    assert reason in w.message.text() and str(f) in w.message.text()
    assert w.dialog is None
    assert not app_context.paths.mcp_file.exists()


def test_an_absent_keyring_stores_nothing_and_the_form_keeps_all_but_the_secret(  # type: ignore[no-untyped-def]
    qtbot, app_context, monkeypatch
) -> None:
    from hearthside.ui.windows.mcp import McpWindow

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
    bridge = make_bridge(app_context)
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    secret = f"Bearer nokeyring-{uuid.uuid4().hex}"
    dlg = w.show_add()
    _fill_http(dlg, "lonely", "https://mcp.example.org/mcp", "Authorization", secret)
    with qtbot.waitSignal(w.finished_action, timeout=30000) as got:
        dlg.save_btn.click()
    assert got.args == ["add failed"]
    assert "Nothing was saved" in dlg.message.text() and "keyring" in dlg.message.text().lower()
    assert dlg.isVisible() and dlg.name.text() == "lonely" and dlg.url.text() == "https://mcp.example.org/mcp"
    assert dlg.secret_value.text() == ""
    assert not app_context.paths.mcp_file.exists() or "lonely" not in app_context.paths.mcp_file.read_text()
    assert all(secret not in t for t in widget_texts(dlg) + widget_texts(w))
    bridge.close()


def test_a_secret_typed_as_a_plain_header_is_refused_in_the_form(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    dlg = window.show_add()
    dlg.name.setText("x")
    dlg.url.setText("https://mcp.example.org/mcp")
    dlg.headers.setPlainText("Authorization: Bearer abc")
    dlg.save_btn.click()
    assert dlg.message.kind == "error" and "looks like a secret" in dlg.message.text()


def test_disable_enable_and_remove_with_confirmation(qtbot, window, app_context, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QMessageBox

    w = window
    f = tmp_path / "mcp.json"
    f.write_text(json.dumps({"mcpServers": {"tools": {"command": sys.executable, "args": ["-m", "nothing"]}}}))
    with qtbot.waitSignal(w.finished_action, timeout=20000):
        w.preview_file(str(f))
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "import"):
        w.dialog.import_btn.click()
    qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 1 and w.selected() is not None, timeout=10000)
    assert w.toggle_btn.text() == "Disable"
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "toggle"):
        w.toggle_btn.click()
    assert app_context.mcp.get("tools").enabled is False
    qtbot.waitUntil(lambda: _status_text(w, "tools") == "disabled", timeout=10000)
    assert w.toggle_btn.text() == "Enable"
    w.remove_btn.click()
    box = w.findChild(QMessageBox)
    assert box is not None and "Remove tools" in box.text()
    assert app_context.mcp.load().get("tools") is not None  # nothing before the answer
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "remove"):
        next(b for b in box.buttons() if b.text() == "Remove").click()
    assert app_context.mcp.load().get("tools") is None
    qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 0, timeout=10000)
    assert "No MCP servers yet" in w.detail.text()


def test_a_secret_argument_is_shown_masked_in_the_preview_and_the_details(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, secret_service, tmp_path
) -> None:
    """A stdio server whose argument moved to the keyring (a SecretRef, not text) is shown
    masked: joining the command line used to raise TypeError in the preview and the details."""
    token = f"ghp_{uuid.uuid4().hex}"
    f = tmp_path / "claude_desktop_config.json"
    f.write_text(json.dumps({"mcpServers": {
        "pg": {"command": sys.executable, "args": ["-m", "nothing", "--token", token]},
    }}))
    w = window
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "preview"):
        w.preview_file(str(f))
    assert token not in " ".join(widget_texts(w.dialog))
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "import"):
        w.dialog.import_btn.click()
    qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 1, timeout=10000)
    w.tree.setCurrentItem(w.tree.topLevelItem(0))
    qtbot.waitUntil(lambda: "pg" in w.detail.text(), timeout=10000)
    assert "********" in w.detail.text() and token not in " ".join(widget_texts(w))


def test_left_out_tools_are_listed_with_their_reasons() -> None:
    """Skipped tools are (tool, reason) pairs; joining them as strings used to raise TypeError."""
    from hearthside.ui.windows.mcp import _skipped

    assert _skipped((("bad tool", "name too long"), ("x", "no schema"))) == \
        "bad tool (name too long), x (no schema)"


def test_a_broken_mcp_json_is_shown_with_its_place_left_alone_and_start_over_keeps_it(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, tmp_path
) -> None:
    """Issue 19 item 7: the window says where mcp.json is wrong, changes nothing (an import is
    refused), and *Start over* keeps the file as a backup and begins with no servers."""
    from PySide6.QtWidgets import QMessageBox
    from test_mcp_cli import TRAILING_COMMA

    w = window
    path = app_context.paths.mcp_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(TRAILING_COMMA)
    with qtbot.waitSignal(w.loaded, timeout=20000):
        w.reload()
    assert "line 3, column 1" in w.message.text() and "Start over" in w.message.text()
    assert "hearthside" not in w.message.text()  # the window's way out is its button, not a command
    assert w.start_over_btn.isVisible() and not w.add_btn.isEnabled() and not w.import_btn.isEnabled()
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": {"other": {"command": "y"}}}))
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "failed"):
        w.import_file(str(host))
    assert "line 3, column 1" in w.message.text() and "nothing was changed" in w.message.text()
    assert path.read_bytes() == TRAILING_COMMA and not list(path.parent.glob("mcp.json.broken-*"))

    w.start_over_btn.click()
    box = w.findChild(QMessageBox)
    assert box is not None and path.read_bytes() == TRAILING_COMMA  # nothing before the answer
    with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "start over"):
        next(b for b in box.buttons() if b.text() == "Start over").click()
    [backup] = list(path.parent.glob("mcp.json.broken-*"))
    assert backup.read_bytes() == TRAILING_COMMA and str(backup) in w.message.text()
    qtbot.waitUntil(lambda: not w.start_over_btn.isVisible() and w.add_btn.isEnabled(), timeout=10000)
    assert json.loads(path.read_text())["servers"] == {}
