"""*Install bundle…* and drag-and-drop in the MCP servers window: a real ``.mcpb`` built here, its
settings asked in a form (the sensitive one in a password field), installed, connected and the
secret nowhere in the window; a file that is not a bundle is refused in the message line."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import widget_texts
from test_mcpb import PY_SERVER, build, py_manifest, venv_path
from test_window_mcp import _status_text, window  # noqa: F401 - the fixture

pytestmark = pytest.mark.keyring


def _drop(w, path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.NoButton,
                    Qt.KeyboardModifier.NoModifier)
    w.dropEvent(ev)


@pytest.mark.slow
def test_a_dropped_bundle_asks_its_settings_installs_and_connects(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, secret_service, tmp_path, monkeypatch  # noqa: F811
) -> None:
    from PySide6.QtWidgets import QLineEdit

    monkeypatch.setenv("PATH", venv_path()["PATH"])
    key = f"sk-window-{uuid.uuid4().hex}"
    hostile = '<img src="http://127.0.0.1:9/x.png"><b>bold</b>'
    bundle = build(tmp_path / "greeter.mcpb", py_manifest(description=hostile), {"server/main.py": PY_SERVER})
    w = window
    assert w.acceptDrops()
    with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "bundle"):
        _drop(w, bundle)
    dlg = w.dialog
    secret = dlg.fields["api_key"]
    assert isinstance(secret, QLineEdit) and secret.echoMode() == QLineEdit.EchoMode.Password
    assert dlg.fields["greeting"].text() == "hello"  # the manifest's default
    assert any(t == hostile for t in widget_texts(dlg))  # the manifest's text is shown as text
    secret.setText(key)
    dlg.fields["greeting"].setText("howdy")
    with qtbot.waitSignal(w.finished_action, timeout=60000, check_params_cb=lambda a: a == "test"):
        dlg.install_btn.click()
    qtbot.waitUntil(lambda: _status_text(w, "greeter") == "connected", timeout=30000)
    assert secret.text() == ""
    cfg = app_context.mcp.get("greeter")
    assert cfg.env["GREETING"] == "howdy" and key not in app_context.paths.mcp_file.read_text()
    assert app_context.secrets.get(cfg.keyring_key(cfg.secret_refs()["API_KEY"])) == key
    assert not [t for t in widget_texts(w) + widget_texts(dlg) if key in t]
    app_context.mcp.remove("greeter")
    assert not (app_context.paths.data_dir / "mcp-bundles" / "greeter").exists()


def test_a_file_that_is_not_a_bundle_is_refused_in_the_message_line(  # type: ignore[no-untyped-def]
    qtbot, window, app_context, tmp_path  # noqa: F811
) -> None:
    bad = tmp_path / "fake.mcpb"
    bad.write_bytes(os.urandom(256))
    w = window
    with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "failed"):
        w.open_bundle(str(bad))
    assert "fake.mcpb is not an MCP bundle (it is not a zip file)" in w.message.text()
    assert app_context.mcp.load().servers == ()
