"""PySide6 6.12.0 drops a reference to ``None`` on every Qt call that returns nothing (on Python
3.11, where None is not immortal): after a few thousand ``setText`` / ``processEvents`` calls the
interpreter aborts with "deallocating None". The UI test suite crashed that way; a running tray
would too. pyproject.toml keeps PySide6 below 6.12; this test fails on a PySide6 with the bug."""

from __future__ import annotations

import sys


def test_qt_void_calls_do_not_drop_references_to_none(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QApplication, QLabel

    label = QLabel()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(500):
        label.setText("x")
        QApplication.processEvents()
    assert sys.getrefcount(None) - before > -50  # 6.12.0: about -1000
