"""A pack's settings form on its page of the Plugins window (plugin API 1.1, SettingsForm).

A real pack (tests/cmdpacks.py's ``agenda``, built and pip-installed into the test's packs venv)
registers a form; the window draws it, the pack's callbacks run on a worker thread, the password
goes to the keyring through the pack and never into a file or back into the window.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QPushButton, QWidget

sys.path.insert(0, str(Path(__file__).parent))
import cmdpacks
import packfactory
from manage_helpers import make_bridge, widget_texts

pytestmark = pytest.mark.keyring


@pytest.fixture
def window(qtbot, app_context, isolated_home):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.plugins import PluginsWindow

    cmdpacks.install_cmd_packs(isolated_home / ".local" / "share", "hs-agenda", "hs-cmdbroken")
    with packfactory.restored_imports():
        bridge = make_bridge(app_context)
        w = PluginsWindow(app_context, bridge)
        qtbot.addWidget(w)
        w.show()
        qtbot.waitUntil(lambda: w.tree.topLevelItemCount() > 0, timeout=60000)
        yield w
        bridge.close()


def _select(qtbot, w, name: str) -> None:  # type: ignore[no-untyped-def]
    w.tree.setCurrentItem(w.tree.findItems(name, Qt.MatchFlag.MatchExactly)[0])


def _find(w: QWidget, cls: type, name: str):  # type: ignore[no-untyped-def]
    hits = [c for c in w.findChildren(cls) if c.accessibleName() == name]
    assert len(hits) == 1, (name, [c.accessibleName() for c in w.findChildren(cls)])
    return hits[0]


def _everything(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.is_symlink())


def test_the_packs_form_adds_lists_and_removes_with_the_password_in_the_keyring_only(  # type: ignore[no-untyped-def]
        qtbot, window, secret_service, isolated_home: Path) -> None:
    import hearthside.plugin as api

    w = window
    _select(qtbot, w, "agenda")
    qtbot.waitUntil(lambda: len(w.pack_settings.forms) == 1, timeout=30000)
    form = w.pack_settings.forms[0]
    assert form.title() == "Calendars" and w.pack_settings.isVisible()
    assert "Commands: agenda" in w.detail.text() and "Settings: Calendars" in w.detail.text()
    help_text = _find(w, QWidget, "Calendars help")
    assert help_text.text() == "Calendars you already have: an ICS address or a CalDAV account."
    password = _find(w, QLineEdit, "Calendars Password")
    assert password.echoMode() == QLineEdit.EchoMode.Password and password.text() == ""
    assert _find(w, QComboBox, "Calendars Kind").count() == 2
    assert isinstance(_find(w, QCheckBox, "Calendars Primary calendar"), QCheckBox)
    qtbot.waitUntil(lambda: "Nothing is set up yet." in widget_texts(form), timeout=30000)

    submit = _find(w, QPushButton, "Calendars Add calendar")
    submit.click()  # the required name is missing: said in the form, the pack is not called
    assert form.message.text() == "Fill in Name."

    name, secret = "work", f"pw-{uuid.uuid4().hex}"
    _find(w, QLineEdit, "Calendars Name").setText(name)
    _find(w, QLineEdit, "Calendars Address").setText("file:///etc/passwd")
    password.setText(secret)
    submit.click()
    assert password.text() == ""  # the secret left the widget with the call
    qtbot.waitUntil(lambda: form.message.text() == "Only https:// addresses are taken.", timeout=30000)

    password.setText(secret)
    _find(w, QLineEdit, "Calendars Address").setText("https://example.org/work.ics")
    submit.click()
    qtbot.waitUntil(lambda: form.message.text() == "Saved.", timeout=30000)
    qtbot.waitUntil(lambda: "work: https://example.org/work.ics" in widget_texts(form), timeout=30000)
    thread = (isolated_home / ".cache" / "hearthside" / "agenda" / "submit-thread").read_text()
    assert thread.startswith("hearthside-ui-work"), thread  # a worker thread, never the Qt thread
    assert api.pack_secrets("agenda").get("caldav/work") == secret
    assert secret.encode() not in _everything(isolated_home)
    assert all(secret not in t for t in widget_texts(w))
    assert _find(w, QLineEdit, "Calendars Name").text() == ""

    _find(w, QPushButton, "Remove work").click()
    qtbot.waitUntil(lambda: form.message.text() == "Removed.", timeout=30000)
    qtbot.waitUntil(lambda: "Nothing is set up yet." in widget_texts(form), timeout=30000)
    assert api.pack_secrets("agenda").get("caldav/work") is None


def test_a_failed_pack_shows_no_forms(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    w = window
    _select(qtbot, w, "agenda")
    qtbot.waitUntil(lambda: len(w.pack_settings.forms) == 1, timeout=30000)
    _select(qtbot, w, "cmdbroken")
    assert w.pack_settings.forms == [] and not w.pack_settings.isVisible()
    assert "RuntimeError: the calendar library is missing" in w.detail.text()
