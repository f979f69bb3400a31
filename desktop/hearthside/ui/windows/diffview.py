"""The numbered, coloured diff lines both review tabs draw (persona-file drift and forks)."""

from __future__ import annotations

from ...app import review as review_app
from ..safetext import Markup, rich

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
