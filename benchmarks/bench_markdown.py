"""Rendering a model's Markdown reply for the chat window (issue 23, item 4).

Targets: a 20,000-character realistic reply (headings, lists, code, tables, links) rendered
<= 50 ms; each hostile input rendered (or refused with a note) <= 100 ms. Two figures per input:
``render`` (``ui/markdown.py``: Markdown to escaped rich text) and ``+ view`` (that, then
loaded into the chat's real view, a ``SafeBrowser``, laid out at the window's width). Baselines
in the same run: ``html.escape`` of the same text into one paragraph (the cost of showing it
raw), and Qt's own ``QTextDocument.setMarkdown`` (which we do not use: it loads images and links
any scheme). Median of several runs.

Usage: .venv/bin/python benchmarks/bench_markdown.py [--runs 9]
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]
from benchkit import median_ms

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def realistic(n: int = 20_000) -> str:
    """A long, typical answer: sections with a heading, prose with emphasis, inline code and a
    link, a nested list, a table, a code block and a quote, repeated to ``n`` characters."""
    parts: list[str] = []
    size, i = 0, 0
    while size < n:
        i += 1
        part = (f"## Step {i}: set up the **service**\n\n"
                f"First, *install* the package with `pip install thing-{i}` and read "
                f"[the guide](https://example.com/guide/{i}). This keeps your data local, and it is "
                "fast enough for a laptop; the defaults below are what most people want.\n\n"
                "- one item with **bold** text\n- two item with `code`\n  - a nested item\n- three\n\n"
                "| Option | Default | Meaning |\n|---|:-:|--:|\n| `timeout` | 30 | seconds to wait |\n"
                "| `retries` | 3 | how often to try |\n\n"
                "```python\nimport thing\n\n\ndef main() -> None:\n    thing.run(timeout=30)\n```\n\n"
                "> Note: restart the service after changing it.\n\n")
        parts.append(part)
        size += len(part)
    return "".join(parts)[:n]


def hostile() -> dict[str, str]:
    return {
        "<img src=file:///etc/passwd>": "<img src=file:///etc/passwd>\n\n" * 200,
        "[x](file:///home) x1000": "[x](file:///home) " * 1000,
        "[x](javascript:alert(1)) x1000": "[x](javascript:alert(1)) " * 1000,
        "![x](data:…) x1000": "![x](data:image/png;base64,iVBORw0KGgo=) " * 1000,
        "2 MB table": "| a | b | c |\n|---|---|---|\n" + "| 1 | two | `3` |\n" * 120_000,
        "40 kB table (formatted)": "| a | b | c |\n|---|---|---|\n" + "| 1 | two | `3` |\n" * 2_300,
        "10,000 nested list levels": "- " * 10_000 + "x",
        "10,000 nested ordered levels": "1. " * 10_000 + "x",
        "10,000 nested blockquotes": "> " * 10_000 + "x",
        "quotes nested line by line (300)": "".join(">" * i + " x\n" for i in range(1, 300)),
        "list indented line by line (200)": "".join("  " * i + "- x\n" for i in range(200)),
        "huge single line (1 MB)": "word " * 200_000,
        "single line at the cap (50 kB)": "word " * 9_999,
        "dense emphasis, one paragraph (48 kB)": "*a " * 16_000,
        "dense emphasis, 5 paragraphs (45 kB)": ("*a " * 3_000 + "\n\n") * 5,
        "dense code spans, 6 paragraphs (48 kB)": ("`a" * 4_000 + "\n\n") * 6,
        "1,000 open brackets": "[" * 1_000,
        "20,000 open brackets": "[" * 20_000,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    from hearthside.ui.markdown import render
    from hearthside.ui.safetext import Markup, SafeBrowser
    from PySide6.QtGui import QTextDocument
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    view = SafeBrowser()
    view.resize(720, 500)
    view.show()

    def shown(markup: str) -> None:
        view.setHtml(markup)
        view.document().documentLayout().documentSize()  # laid out, as a paint would need
        app.processEvents()

    def escaped(text: str) -> Markup:
        return Markup('<p style="white-space:pre-wrap">' + html.escape(text) + "</p>")

    def qt_markdown(text: str) -> None:
        doc = QTextDocument()
        doc.setTextWidth(700)
        doc.setMarkdown(text)
        doc.documentLayout().documentSize()

    text = realistic()
    render(text), shown(render(text).markup)  # imports and first-call caches out of the way
    print(f"realistic reply: {len(text):,} characters, {text.count('```') // 2} code blocks, "
          f"{text.count('|---|')} tables; median of {args.runs}")
    r_ms = median_ms(lambda: render(text), args.runs)[0]
    rv_ms = median_ms(lambda: shown(render(text).markup), args.runs)[0]
    e_ms = median_ms(lambda: escaped(text), args.runs)[0]
    ev_ms = median_ms(lambda: shown(escaped(text)), args.runs)[0]
    q_ms = median_ms(lambda: qt_markdown(text), args.runs)[0]
    print(f"  render (ui/markdown.py):                       {r_ms:8.1f} ms  (target <= 50)")
    print(f"  render + view:                                 {rv_ms:8.1f} ms")
    print(f"  baseline: html.escape into one paragraph:      {e_ms:8.2f} ms  (+ view {ev_ms:.1f} ms)")
    print(f"  baseline: QTextDocument.setMarkdown + layout:  {q_ms:8.1f} ms  (render / Qt = {r_ms / q_ms:.2f})")
    print(f"hostile inputs (target <= 100 ms each, or refused with a note); median of {args.runs}")
    print(f"  {'input':<40} {'chars':>10} {'render':>9} {'+ view':>9} {'escape':>8}  outcome")
    for name, src in hostile().items():
        r = render(src)
        rm = median_ms(lambda s=src: render(s), args.runs)[0]  # type: ignore[misc]
        vm = median_ms(lambda s=src: shown(render(s).markup), max(3, args.runs // 3))[0]  # type: ignore[misc]
        em = median_ms(lambda s=src: escaped(s), args.runs)[0]  # type: ignore[misc]
        outcome = r.note or "formatted"
        print(f"  {name:<40} {len(src):>10,} {rm:>7.1f}ms {vm:>7.1f}ms {em:>6.2f}ms  {outcome[:70]}")
    print(f"  resources the view was asked for, all runs: {len(view.refused)}")


if __name__ == "__main__":
    main()
