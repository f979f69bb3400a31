"""The review window's *Specialists' changes* tab against a real ForkService: real forks of a
real workspace folder, applied and discarded through the bridge."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from ui_helpers import make_bridge

WAIT = 10_000


@pytest.fixture
def bridge(qtbot, app_context):  # type: ignore[no-untyped-def]
    yield from make_bridge(app_context)


def ready_fork(app, isolated_home: Path) -> tuple[str, Path, Path]:  # type: ignore[no-untyped-def]
    root = isolated_home / "work"
    root.mkdir(exist_ok=True)
    (root / "notes.md").write_text("one\ntwo\n")
    (root / "old.txt").write_text("bye\n")
    app.settings.set("files.workspace", str(root))
    fork = app.forks.create("juniper", "Tidy the notes")
    child = Path(app.forks.root_of(fork))
    (child / "notes.md").write_text("one\nTWO!\n")
    (child / "old.txt").unlink()
    (child / "plan.md").write_text("a plan\n")
    fid = app.forks.fork_id(fork)
    app.forks.finished(fid, "I tidied the notes and wrote a plan.")
    return fid, root, child


@pytest.fixture
def window(qtbot, app_context, bridge, isolated_home):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.review import ReviewWindow

    fid, root, child = ready_fork(app_context, isolated_home)
    w = ReviewWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    w.show_forks()
    qtbot.waitUntil(lambda: w.forks_panel.review is not None, timeout=WAIT)
    w.fork = (fid, root, child)  # type: ignore[attr-defined]
    return w


def test_a_pending_fork_shows_its_files_and_their_diffs(window) -> None:  # type: ignore[no-untyped-def]
    p = window.forks_panel
    assert window.tabs.tabText(1) == "Specialists' changes (1)"
    assert p.list.count() == 1 and p.list.item(0).text().startswith("Tidy the notes\njuniper")
    assert "1 added, 1 changed, 1 removed" in p.title.text()
    assert p.summary.text() == "I tidied the notes and wrote a plan."
    html = p.diff.toHtml()
    for text in ("Added · plan.md", "Changed · notes.md", "Removed · old.txt", "TWO", "#e6ffec", "#ffebe9"):
        assert text in html, text
    assert p.apply_button.isEnabled() and p.discard_button.isEnabled()


def test_apply_writes_the_workspace_and_empties_the_list(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    p = window.forks_panel
    _fid, root, child = window.fork
    with qtbot.waitSignal(p.applied, timeout=WAIT):
        p.apply_button.click()
    qtbot.waitUntil(lambda: p.review is None and p.list.count() == 0, timeout=WAIT)
    assert (root / "notes.md").read_text() == "one\nTWO!\n" and (root / "plan.md").exists()
    assert not (root / "old.txt").exists() and not child.exists()
    assert p.status.text().startswith("Applied: ")
    assert window.tabs.tabText(1) == "Specialists' changes"


def test_a_conflict_keeps_the_fork_and_names_the_file(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    p = window.forks_panel
    _fid, root, child = window.fork
    (root / "notes.md").write_text("the user changed this meanwhile, longer\n")
    p.apply_button.click()
    qtbot.waitUntil(lambda: "Not applied" in p.status.text(), timeout=WAIT)
    assert "notes.md" in p.status.text() and "kept" in p.status.text()
    qtbot.waitUntil(lambda: p.review is not None and p.list.count() == 1, timeout=WAIT)
    assert (root / "notes.md").read_text() == "the user changed this meanwhile, longer\n"
    assert child.is_dir() and (root / "old.txt").exists()


def test_discard_asks_then_throws_the_fork_away(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    p = window.forks_panel
    _fid, root, child = window.fork
    p.discard_button.click()
    box = p.confirm_box
    assert box is not None and box.isVisible()
    box.button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: p.review is None and "Discarded" in p.status.text(), timeout=WAIT)
    assert not child.exists() and (root / "notes.md").read_text() == "one\ntwo\n"


def test_a_fork_applied_elsewhere_meanwhile_leaves_the_list(qtbot, window, app_context) -> None:  # type: ignore[no-untyped-def]
    p = window.forks_panel
    fid, _root, _child = window.fork
    app_context.forks.apply(fid)  # e.g. `hearthside forks apply` in a terminal
    p.apply_button.click()
    qtbot.waitUntil(lambda: "already applied" in p.status.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: p.review is None and p.list.count() == 0, timeout=WAIT)
