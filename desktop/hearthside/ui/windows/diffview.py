"""What both review tabs (persona-file drift and forks) draw alike: the numbered, coloured diff
lines, and the layout around them (a list on the left; a title, notes and the diff on the right;
a row of buttons and a status line below), so the two tabs look and read the same."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QBoxLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ...app import review as review_app
from ..safetext import Markup, PlainLabel, RichLabel, SafeBrowser, rich

L = TypeVar("L", bound=QLabel)

_ROW_STYLE = {"add": "background:#e6ffec;color:#05400f", "remove": "background:#ffebe9;color:#6e0b0b",
              "hunk": "color:#555;background:#eef3fa", "context": ""}
_SIGN = {"add": "+", "remove": "−", "hunk": "", "context": " "}


def diff_rows_html(rows: tuple[review_app.DiffRow, ...]) -> Markup:
    """Diff rows (persona-file drift or a fork's file) as numbered, coloured lines."""
    if not rows:
        return rich("<p><i>No line differences to show.</i></p>")
    width = max(len(str(n)) for r in rows for n in (r.old_no, r.new_no, 1) if n is not None)
    out = []
    for i, r in enumerate(rows):
        if r.kind == "hunk":
            if i == 0:
                continue  # a gap marker only between two parts of the file
            out.append(rich("<pre style='margin:0;{}'>{}⋯</pre>", _ROW_STYLE["hunk"], " " * (2 * width + 2)))
            continue
        old = "" if r.old_no is None else str(r.old_no)
        new = "" if r.new_no is None else str(r.new_no)
        nums = rich("<span style='color:#777'>{} {}</span>", f"{old:>{width}}", f"{new:>{width}}")
        out.append(rich("<pre style='margin:0;{}'>{} {} {}</pre>", _ROW_STYLE[r.kind], nums, _SIGN[r.kind], r.text))
    return Markup("").join(out)


def selectable(label: L, name: str | None = None) -> L:
    """A wrapped label whose text the person can select (and copy), named for screen readers."""
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if name is not None:
        label.setAccessibleName(name)
    return label


class ListAndDiff(QSplitter):
    """The list of things waiting (left) and the one selected (right): its title, the widgets
    the tab puts between the title and the diff, the diff, and the widgets below it."""

    def __init__(self, list_name: str, title_name: str, diff_name: str, between: Sequence[QWidget],
                 after: Sequence[QWidget] = (), sizes: tuple[int, int] = (280, 620)) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self.list = QListWidget()
        self.list.setAccessibleName(list_name)
        self.list.setWordWrap(True)
        self.list.setSpacing(2)
        self.addWidget(self.list)
        right = QWidget()
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        self.title = selectable(RichLabel(), title_name)
        column.addWidget(self.title)
        for w in between:
            column.addWidget(w)
        self.diff = SafeBrowser()
        self.diff.setAccessibleName(diff_name)
        self.diff.setOpenLinks(False)
        column.addWidget(self.diff, 3)
        for w in after:
            column.addWidget(w)
        self.addWidget(right)
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 3)
        self.setSizes(list(sizes))

    def refill(self, items: Iterable[QListWidgetItem], row: int) -> None:
        """Replace the list's rows and select ``row`` without a selection signal (no re-read)."""
        self.list.blockSignals(True)
        self.list.clear()
        for it in items:
            self.list.addItem(it)
        self.list.setCurrentRow(row)
        self.list.blockSignals(False)


def buttons_and_status(root: QBoxLayout, buttons: Sequence[QPushButton]) -> PlainLabel:
    """A row of ``buttons`` (named by their text, without the "…") and, below it, the status line."""
    row = QHBoxLayout()
    for b in buttons:
        b.setAccessibleName(b.text().rstrip("…"))
        row.addWidget(b)
    row.addStretch(1)
    root.addLayout(row)
    status = selectable(PlainLabel(), "Status")
    root.addWidget(status)
    return status
