"""The plugin packs window against the real plugin service and real pip (packs built in the test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import packfactory
from manage_helpers import make_bridge, silent_server

OFFLINE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}


@pytest.fixture(scope="module")
def wheels() -> dict[str, Path]:
    return packfactory.wheels()


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in OFFLINE.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def window(qtbot, app_context):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.plugins import PluginsWindow

    with packfactory.restored_imports():
        bridge = make_bridge(app_context)
        w = PluginsWindow(app_context, bridge)
        qtbot.addWidget(w)
        w.show()
        qtbot.waitUntil(lambda: w.reports is not None and w.detail.text() != "Loading the packs…", timeout=30000)
        yield w
        bridge.close()


def _site(app_context) -> set[str]:  # type: ignore[no-untyped-def]
    site = app_context.plugins.env.site_dir
    return {p.name.split("-")[0] for p in site.glob("*.dist-info")} if site.is_dir() else set()


def _rows(w) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return {w.tree.topLevelItem(i).text(0): [w.tree.topLevelItem(i).text(c) for c in range(4)]
            for i in range(w.tree.topLevelItemCount())}


def _install(qtbot, w, spec: str, timeout: int = 180000) -> str:  # type: ignore[no-untyped-def]
    w.install_btn.click()
    w.spec.setText(spec)
    with qtbot.waitSignal(w.finished_action, timeout=timeout) as got:
        w.go_btn.click()
    qtbot.waitUntil(lambda: not w.go_btn.isEnabled() is False, timeout=5000)
    return str(got.args[0])


def test_install_shows_progress_then_lists_the_pack_ok(qtbot, window, wheels, offline, app_context) -> None:  # type: ignore[no-untyped-def]
    w = window
    w.install_btn.click()
    w.spec.setText(str(wheels["hs-good"]))
    seen: list[int] = []
    w.progress.valueChanged.connect(seen.append)
    with qtbot.waitSignal(w.finished_action, timeout=180000) as got:
        w.go_btn.click()
        assert w.progress.isVisible() and w.cancel_btn.isVisible()
    assert got.args == ["install"]
    assert any(0 < v < 100 for v in seen) and w.progress.value() == 100
    assert "Successfully installed hs-good" in w.log.toPlainText()  # pip's log, behind Details
    assert not w.log.isVisible()
    w.details_btn.click()
    assert w.log.isVisible()
    qtbot.waitUntil(lambda: "good" in _rows(w), timeout=30000)
    assert _rows(w)["good"] == ["good", "1.0.0", "installed by you", "ok"]
    w.tree.setCurrentItem(w.tree.findItems("good", __import__("PySide6.QtCore").QtCore.Qt.MatchFlag.MatchExactly)[0])
    assert "GoodTool" in w.detail.text() and "goodserver" in w.detail.text()
    assert "Installed hs-good 1.0.0" in w.message.text()


def test_a_pack_whose_import_fails_is_listed_failed_with_the_reason(qtbot, window, wheels, offline) -> None:  # type: ignore[no-untyped-def]
    w = window
    assert _install(qtbot, w, str(wheels["hs-import-error"])) == "install"
    assert "importerror is installed but failed" in w.message.text()
    qtbot.waitUntil(lambda: "importerror" in _rows(w), timeout=30000)
    assert _rows(w)["importerror"][3] == "failed"
    exactly = __import__("PySide6.QtCore").QtCore.Qt.MatchFlag.MatchExactly
    w.tree.setCurrentItem(w.tree.findItems("importerror", exactly)[0])
    assert "this pack is broken on purpose" in w.detail.text()
    assert "Traceback" not in w.detail.text() + w.message.text()


def test_uninstall_asks_then_removes_and_offers_a_restart(qtbot, window, wheels, offline, app_context) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    w = window
    _install(qtbot, w, str(wheels["hs-good"]))
    qtbot.waitUntil(lambda: "good" in _rows(w), timeout=30000)
    w.tree.setCurrentItem(w.tree.findItems("good", Qt.MatchFlag.MatchExactly)[0])
    assert w.uninstall_btn.isEnabled()
    w.uninstall_btn.click()
    box = w.findChild(QMessageBox)
    assert box is not None and "Remove good" in box.text()
    yes = next(b for b in box.buttons() if b.text() == "Uninstall")
    with qtbot.waitSignal(w.finished_action, timeout=120000) as got:
        yes.click()
    assert got.args == ["uninstall"]
    assert "hs_good" not in _site(app_context)
    assert w.restart_box.isVisible() and "restart" in w.restart_label.text().lower()
    asked: list[bool] = []
    w.restart = lambda: asked.append(True) or True
    w.restart_btn.click()
    assert asked == [True]


def test_disable_then_enable_change_the_block_list(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    w = window
    assert w.tree.topLevelItemCount() >= 1  # the first-party packs
    first = w.selected()
    assert w.toggle_btn.text() == "Disable"
    with qtbot.waitSignal(w.finished_action, timeout=30000):
        w.toggle_btn.click()
    app_context.settings.reload()
    assert first.name in app_context.plugins.blocked()
    assert w.restart_box.isVisible()


def test_a_missing_wheel_file_is_refused_in_the_form(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    w = window
    w.install_btn.click()
    w.spec.setText(str(tmp_path / "nope.whl"))
    w.go_btn.click()
    assert w.message.kind == "error" and "There is no file" in w.message.text()


def test_a_pack_install_that_fails_half_way_shows_pips_error_and_leaves_nothing(  # type: ignore[no-untyped-def]
    qtbot, window, wheels, monkeypatch, app_context, tmp_path
) -> None:
    # hs-half needs hs-good: pip installs hs-good first, then fails writing hs-half (its module
    # folder is taken by a file), so pip itself would leave hs-good behind.
    proj = packfactory.write_project(tmp_path / "src", "hs-half", "half", "VALUE = 1\n", {})
    py = proj / "pyproject.toml"
    py.write_text(py.read_text().replace('dependencies = ["hearthside"]', 'dependencies = ["hearthside", "hs-good"]'))
    packfactory.pip_wheel([proj], tmp_path / "w")
    half = next((tmp_path / "w").glob("hs_half-*.whl"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels["hs-good"].parent))
    app_context.plugins.env.ensure()
    (app_context.plugins.env.site_dir / "hs_half").write_text("in the way\n")
    assert _install(qtbot, window, str(half)) == "install failed"
    assert window.message.kind == "error" and "pip could not install" in window.message.text()
    assert "ERROR" in window.log.toPlainText()
    assert {"hs_good", "hs_half"}.isdisjoint(_site(app_context))
    assert not app_context.paths.installed_packs_file.exists()


def test_cancel_during_an_install_stops_pip_and_installs_nothing(  # type: ignore[no-untyped-def]
    qtbot, window, wheels, monkeypatch, app_context
) -> None:
    w = window
    with silent_server() as index:
        monkeypatch.delenv("PIP_NO_INDEX", raising=False)
        monkeypatch.setenv("PIP_FIND_LINKS", "")
        monkeypatch.setenv("PIP_INDEX_URL", index)  # pip waits on an index that never answers
        w.install_btn.click()
        w.spec.setText("hs-never-there")
        w.go_btn.click()
        qtbot.waitUntil(lambda: "Looking in indexes" in w.log.toPlainText() or "Collecting" in w.log.toPlainText(),
                        timeout=60000)
        with qtbot.waitSignal(w.finished_action, timeout=30000) as got:
            w.cancel_btn.click()
    assert got.args == ["cancelled"]
    assert "cancelled" in w.message.text() and w.message.kind == "info"
    assert not w.cancel_btn.isVisible() and w.go_btn.isEnabled()
    assert _site(app_context) <= {"pip", "setuptools"} or "hs_never_there" not in _site(app_context)


def test_two_installs_at_once_the_second_is_refused_with_the_reason(  # type: ignore[no-untyped-def]
    qtbot, window, wheels, monkeypatch, app_context
) -> None:
    from hearthside.ui.windows.plugins import PluginsWindow

    w = window
    other = PluginsWindow(app_context, make_bridge(app_context))
    qtbot.addWidget(other)
    with silent_server() as index:
        monkeypatch.delenv("PIP_NO_INDEX", raising=False)
        monkeypatch.setenv("PIP_INDEX_URL", index)
        w.install_btn.click()
        w.spec.setText("hs-never-there")
        w.go_btn.click()
        assert not w.go_btn.isEnabled()  # the same window: Install is off while one runs ...
        from PySide6.QtCore import Qt

        qtbot.keyClick(w.spec, Qt.Key.Key_Return)  # ... and Enter is refused with the reason
        assert "already running" in w.message.text()
        qtbot.waitUntil(lambda: "Looking in indexes" in w.log.toPlainText(), timeout=60000)
        other.install_btn.click()
        other.spec.setText(str(wheels["hs-good"]))
        with qtbot.waitSignal(other.finished_action, timeout=30000) as got:
            other.go_btn.click()
        assert got.args == ["install failed"]
        assert "Another pack install or removal is running" in other.message.text()
        with qtbot.waitSignal(w.finished_action, timeout=30000):
            w.cancel_btn.click()
    assert "hs_good" not in _site(app_context)


def test_a_held_back_skill_is_shown_with_its_finding_and_can_be_allowed(  # type: ignore[no-untyped-def]
    qtbot, window, wheels, offline, app_context
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    w = window
    _install(qtbot, w, str(wheels["hs-flagged"]))
    qtbot.waitUntil(lambda: "flagged" in _rows(w), timeout=30000)
    assert _rows(w)["flagged"][3] == "ok, skill held back"
    w.tree.setCurrentItem(w.tree.findItems("flagged", Qt.MatchFlag.MatchExactly)[0])
    assert w.held_box.isVisible()
    allow = next(b for b in w.held_box.findChildren(QPushButton) if b.accessibleName() == "Allow flagged/sneaky")
    with qtbot.waitSignal(w.finished_action, timeout=30000) as got:
        allow.click()
    assert got.args == ["allow"]
    assert app_context.plugins.held_back_skills() == []
    qtbot.waitUntil(lambda: _rows(w).get("flagged", ["", "", "", ""])[3] == "ok", timeout=30000)


def test_the_opt_in_shell_is_off_and_says_so_in_words_for_a_window(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """A fresh install: the shell pack is listed "off" (not "disabled": nobody turned it off),
    and its details say what it does and what Enable does, with no command to type."""
    from PySide6.QtCore import Qt

    w = window
    assert _rows(w)["shell"][3] == "off"
    w.tree.setCurrentItem(w.tree.findItems("shell", Qt.MatchFlag.MatchExactly)[0])
    qtbot.waitUntil(lambda: "Off until you turn it on" in w.detail.text(), timeout=10000)
    text = w.detail.text()
    assert "runs shell commands, in the sandbox" in text and "Enable loads it at the next start." in text
    assert "hearthside plugins enable" not in text and "off: off" not in text.lower()
    assert w.toggle_btn.text() == "Enable"
