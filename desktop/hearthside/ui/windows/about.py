"""*About / Diagnostics*: the version and the doctor's report, in a window people can copy from.

The checks probe Qt in a child process and read files, so they run on a worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ... import __version__
from ..bridge import Bridge
from ..icon import hearth_icon
from ..safetext import PlainLabel, RichLabel, rich

if TYPE_CHECKING:
    from ...app.context import AppContext

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


def report_text(checks: list[Any]) -> str:
    """The doctor's report as ``hearthside doctor`` prints it."""
    lines = []
    for c in checks:
        lines.append(f"[{MARKS.get(c.status, c.status)}] {c.name}: {c.detail}")
        if c.name == "locations" and c.data:
            lines += [f"         {k}: {v}" for k, v in c.data.items()]
    return "\n".join(lines)


class AboutWindow(QWidget):
    def __init__(self, app: AppContext, bridge: Bridge) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.setWindowTitle("About Hearthside")
        self.setWindowIcon(hearth_icon())
        layout = QVBoxLayout(self)
        head = RichLabel(rich("<b>Hearthside {}</b><br>Keeps your AI personas: folders of Markdown "
                              "files you write by hand. Hearthside never writes them.", __version__))
        head.setWordWrap(True)
        layout.addWidget(head)
        layout.addWidget(PlainLabel("Diagnostics (the same as 'hearthside doctor'):"))
        self.report = QPlainTextEdit("Running the checks…")
        self.report.setReadOnly(True)
        self.report.setAccessibleName("Diagnostics report")
        layout.addWidget(self.report)
        row = QHBoxLayout()
        self.copy_btn = QPushButton("Copy report")
        self.copy_btn.clicked.connect(lambda: QApplication.clipboard().setText(self.report.toPlainText()))
        self.again_btn = QPushButton("Run again")
        self.again_btn.clicked.connect(self.run_checks)
        close = QPushButton("Close")
        close.setDefault(True)
        close.clicked.connect(self.close)
        row.addWidget(self.copy_btn)
        row.addWidget(self.again_btn)
        row.addStretch(1)
        row.addWidget(close)
        layout.addLayout(row)
        self.done = 0
        self.resize(640, 460)

    def run_checks(self) -> None:
        from ...app.doctor import run_checks

        self.again_btn.setEnabled(False)
        app = self.app
        self.bridge.call(lambda: run_checks(app), self._show, self._failed)

    def _show(self, checks: list[Any]) -> None:
        self.report.setPlainText(report_text(checks))
        self.again_btn.setEnabled(True)
        self.done += 1

    def _failed(self, exc: BaseException) -> None:
        self.report.setPlainText(f"The checks could not run: {exc}")
        self.again_btn.setEnabled(True)
        self.done += 1
