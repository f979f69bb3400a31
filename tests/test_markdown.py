"""Issue 23, item 4: a model's Markdown reply rendered as formatted text that can only be read.

Each rule of ``ui/markdown.py`` against the rendered markup *and* against the document Qt
builds from it (a real :class:`SafeBrowser`): what is formatted, what stays text, which links
are anchors and what they show, and that hostile size and depth end quickly as plain text
with a note, losing nothing.
"""

from __future__ import annotations

import html.parser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ui_helpers import anchors, fragments

pytestmark = pytest.mark.timeout(120, method="thread")


def doc_of(markup: str, qtbot: Any) -> Any:
    from hearthside.ui.safetext import SafeBrowser

    view = SafeBrowser()
    qtbot.addWidget(view)
    view.setHtml(markup)
    return view


def test_headings_lists_emphasis_tables_quotes_and_code_are_formatted(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render
    from PySide6.QtGui import QTextTable

    src = ("# Plan\n\nSome **bold**, *italic*, ~~gone~~ and `code`.\n\n- one\n- two\n  1. inner\n\n"
           "| Name | Size |\n|:--|--:|\n| a | 10 |\n\n> quoted\n\n```python\ndef f():\n    return 1\n```\n")
    r = render(src)
    assert r.note == "" and r.codes == ("def f():\n    return 1",)
    view = doc_of(r.markup, qtbot)
    frags = {t: (cf, b) for t, cf, b in fragments(view)}
    assert frags["Plan"][1].blockFormat().headingLevel() > 0
    assert frags["bold"][0].fontWeight() >= 700 and frags["italic"][0].fontItalic()
    assert frags["gone"][0].fontStrikeOut()
    assert frags["code"][0].fontFamilies() == ["monospace"]
    assert frags["one"][1].textList() is not None and frags["inner"][1].textList() is not None
    assert frags["inner"][1].textList() is not frags["one"][1].textList()  # nested, numbered
    tables = [f for f in view.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 1 and (tables[0].rows(), tables[0].columns()) == (2, 2)
    assert frags["quoted"][1].blockFormat().leftMargin() > 0 or frags["quoted"][1].blockFormat().indent() > 0
    code_cf, code_block = frags["def f():"]
    assert code_cf.fontFamilies() == ["monospace"] and code_block.blockFormat().nonBreakableLines()
    assert ("Copy code", "hearthside-copy:0") in anchors(view)
    assert "    return 1" in view.toPlainText()  # indentation kept exactly
    assert view.refused == []


def test_raw_html_is_text_and_no_image_is_ever_an_image(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render

    src = ('<img src=file:///etc/passwd>\n\nInline <b>bold?</b> <script>alert(1)</script>\n\n'
           '![secret](file:///home/ada/.ssh/id_rsa) ![pixel](data:image/png;base64,iVBORw0KGgo=) '
           '![remote](https://tracker.example/p.gif "t")\n\n<div style="color:red">styled</div>\n')
    r = render(src)
    assert "<img" not in r.markup and "<script" not in r.markup and "<div" not in r.markup
    view = doc_of(r.markup, qtbot)
    text = view.toPlainText()
    assert "<img src=file:///etc/passwd>" in text and "<b>bold?</b>" in text and "<script>alert(1)</script>" in text
    assert "![secret](file:///home/ada/.ssh/id_rsa)" in text  # not even parsed as an image: as written
    assert "pixel (image: data:image/png;base64,iVBORw0KGgo=)" in text
    assert "remote (image: https://tracker.example/p.gif)" in text
    assert view.refused == [] and anchors(view) == []  # nothing asked for, nothing to click


@pytest.mark.parametrize("link", ["[x](file:///home)", "[x](javascript:alert(1))", "[x](JavaScript:alert(1))",
                                  "[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](mailto:ada@example.org)",
                                  "[x](hearthside-copy:m0)", "[x](ftp://example.org/a)", "[x](vscode://file/etc)",
                                  "<file:///etc/passwd>", "[x](//evil.example/a)", "[x](/etc/passwd)"])
def test_a_link_that_is_not_http_is_text(qtbot, link: str) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render

    view = doc_of(render(f"see {link} here").markup, qtbot)
    assert anchors(view) == []
    text = view.toPlainText()
    assert text.startswith("see ") and text.endswith(" here")
    target = link.split("(", 1)[1][:-1] if "(" in link else link[1:-1]
    assert target.split(":")[-1][:6] in text  # the target is on screen, as text


def test_a_link_shows_its_real_target_and_only_http_s_are_anchors(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render

    src = ("[your bank](https://evil.example/login) and [https://good.example/](https://evil.example/) "
           "and <https://plain.example/a> and [ünï](http://example.org/ü) and [xn](https://аpple.example/)")
    view = doc_of(render(src).markup, qtbot)
    text = view.toPlainText()
    assert "your bank (https://evil.example/login)" in text
    assert "https://good.example/ (https://evil.example/)" in text  # a link text that fakes a target
    assert "https://plain.example/a" in text and "https://plain.example/a (" not in text  # said once
    assert "ünï (http://example.org/%C3%BC)" in text  # what the browser will really get
    assert "(https://xn--pple-43d.example/)" in text  # a look-alike host as its punycode
    assert anchors(view) == [("your bank", "https://evil.example/login"),
                             ("https://good.example/", "https://evil.example/"),
                             ("https://plain.example/a", "https://plain.example/a"),
                             ("ünï", "http://example.org/%C3%BC"), ("xn", "https://xn--pple-43d.example/")]


def test_bidi_and_zero_width_tricks_in_links_are_made_visible(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render

    src = ("[moc.elgoog\u202e](https://evil.example/) [pay\u200bpal](https://evil.example/\u200b) "
           "text \u202ereversed\u202c after ![a\u2066b](https://x.example/i.png)")
    text = doc_of(render(src).markup, qtbot).toPlainText()
    assert "moc.elgoog\\u202e (https://evil.example/)" in text
    assert "pay\\u200bpal (https://evil.example/%E2%80%8B)" in text
    assert "\\u202ereversed\\u202c" in text and "a\\u2066b" in text
    assert not any(ch in text for ch in "\u202e\u202c\u2066\u200b")


def test_hostile_size_and_depth_are_shown_as_plain_text_with_a_note_and_nothing_lost(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui import markdown as md

    table = "| a | b |\n|---|---|\n" + "| <b>1</b> | 2 |\n" * 110_000  # 2 MB
    cases = {
        "table": (table, "too long to format"),
        "list": ("- " * 10_000 + "x", "nested too deeply"),
        "ordered": ("1. " * 10_000 + "x", "nested too deeply"),
        "quote": ("> " * 10_000 + "x", "nested too deeply"),
        "quote lines": ("".join(">" * i + " x\n" for i in range(1, 60)), "nested too deeply"),
        "line": ("word" * 300_000, "too long to format"),
        "brackets": ("[" * 5_000, "too many [ brackets"),
    }
    for name, (src, why) in cases.items():
        r = md.render(src)
        assert why in r.note, name
        view = doc_of(r.markup, qtbot)
        text = view.toPlainText()
        assert text.startswith(r.note), name
        shown = src[:md.MAX_SHOWN]
        assert shown.rstrip("\n").replace("\n", "\u2029")[-200:] in text.replace("\n", "\u2029"), name
        if len(src) > md.MAX_SHOWN:
            assert f"of {len(src):,} characters are shown; Copy copies them all" in r.note
        assert view.refused == [] and anchors(view) == [], name
    assert "<b>1</b>" in md.render(table).markup.replace("&lt;", "<").replace("&gt;", ">")


def test_nesting_within_the_limit_is_formatted(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render

    nested = "".join("  " * i + f"- level {i}\n" for i in range(8))
    r = render(nested + "\n> > > three quotes deep\n")
    assert r.note == ""
    view = doc_of(r.markup, qtbot)
    assert "level 7" in view.toPlainText() and "three quotes deep" in view.toPlainText()


def test_a_long_paragraph_and_a_spent_budget_keep_their_text(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The backstops: a paragraph over MAX_INLINE, or every paragraph once the time budget is
    spent or too many brackets were seen, is its text as written (escaped), still in its block."""
    from hearthside.ui import markdown as md

    long_par = "*a " * 4_000
    r = md.render(f"# Title\n\n{long_par}\n\n**short**")
    view = doc_of(r.markup, qtbot)
    assert long_par.strip() in view.toPlainText() and "**short**" not in view.toPlainText()  # only it
    assert r.note == "Part of this reply is too complex to format; it is shown as text."
    monkeypatch.setattr(md, "INLINE_BUDGET_S", -1.0)
    r = md.render("# Head <b>\n\n**bold** [x](https://a.example/)\n\n| c |\n|---|\n| `d` |\n")
    assert r.note == "Part of this reply is too complex to format; it is shown as text."
    text = doc_of(r.markup, qtbot).toPlainText()
    assert "Head <b>" in text and "**bold** [x](https://a.example/)" in text and "`d`" in text
    monkeypatch.setattr(md, "INLINE_BUDGET_S", 10.0)
    many = "[a](https://a.example/) " * 100
    r = md.render("\n\n".join([many] * 6) + "\n\n**after**")  # 600 brackets: the 6th paragraph is over
    assert r.note.startswith("Part of this reply") and "**after**" in doc_of(r.markup, qtbot).toPlainText()
    assert r.markup.count("<a href") == 500  # the paragraphs under the limit are formatted


def test_the_lead_opens_the_first_paragraph_or_stands_alone(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.markdown import render
    from hearthside.ui.safetext import rich

    lead = rich("<b>{}:</b> ", "ju<i>niper")
    assert doc_of(render("Hello there", lead=lead).markup, qtbot).toPlainText() == "ju<i>niper: Hello there"
    assert doc_of(render("- a\n- b", lead=lead).markup, qtbot).toPlainText().startswith("ju<i>niper: \n")
    assert doc_of(render("", lead=lead).markup, qtbot).toPlainText() == "ju<i>niper: "


# --- any input: only the tags and attributes the renderer writes ----------------------------------

ALLOWED_TAGS = {"p", "br", "b", "i", "s", "code", "pre", "a", "span", "h2", "h3", "h4", "h5", "h6", "ul", "ol",
                "li", "blockquote", "hr", "table", "thead", "tbody", "tr", "th", "td"}


STYLES = ("color:#666", "color:#444", "margin-bottom:0", "white-space:pre-wrap",
          "background-color:#f3f3f3;margin-top:2px", "border-color:#bbb;margin-top:6px")


class TagCheck(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.bad.append(tag)
        for k, v in attrs:
            v = v or ""
            ok = ((k == "href" and tag == "a" and v.startswith(("https://", "http://", "hearthside-copy:")))
                  or (k == "style" and v in STYLES)
                  or (k == "align" and v in ("left", "right", "center"))
                  or (k == "start" and v.isdigit())
                  or (tag == "table" and k in ("border", "cellspacing", "cellpadding")))
            if not ok:
                self.bad.append(f"{tag} {k}={v!r}")


MD_CHARS = st.sampled_from(list("ab <>&\"'`*_~[]()!#>-|:\n\\/=.1") + ["https://", "file:", "javascript:", "<img ",
                                                                         "\u202e", "```", "    ", "&lt;", "&#x3C;"])


@settings(max_examples=300, deadline=None)
@given(st.lists(MD_CHARS, max_size=80).map("".join))
def test_any_reply_becomes_only_the_tags_the_renderer_writes(src: str) -> None:
    from hearthside.ui.markdown import render

    check = TagCheck()
    check.feed(render(src).markup)
    check.close()
    assert check.bad == [], src
