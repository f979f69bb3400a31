"""A model's reply, which is Markdown, shown as formatted text that can do nothing but be read.

The reply is untrusted: whatever a web page, a file or an MCP server put in front of the model
can come back in it. So it is parsed by ``markdown-it-py`` with raw HTML off, and the token
stream is written out here, by hand, into the small subset of HTML that Qt's rich text knows
(headings, paragraphs, lists, tables, block quotes, ``<pre>``, ``<b>``/``<i>``/``<s>``/
``<code>``, ``<a>``). Every text value is escaped; no tag or attribute the reply wrote can
reach the document. In particular:

* raw HTML (``<img src=file:///etc/passwd>``) is text: the parser never makes an HTML token,
  and one that arrived anyway would be escaped like any other text;
* an image is never an ``<img>``: it becomes its alt text and its real target, as text, so no
  resource (remote, ``file:``, ``data:``) is ever asked for;
* a link is an anchor only for ``https://`` and ``http://`` targets, and its real target (as
  the browser would get it, punycode and percent-escapes included) is printed after its text
  unless the text is that target; any other scheme (``file:``, ``javascript:``, ``mailto:``, a
  custom one) is shown as text. The window opens a link only on a click, and checks the scheme
  again (:func:`openable`);
* bidi controls and zero-width characters in link text, link targets, image alt text and code
  block languages are written as ``\\u202e``-style escapes; in the rest of the text the bidi
  overrides, embeddings and isolates are (they could reverse a target shown after them);
* a code block gets a *Copy* anchor ``hearthside-copy:<prefix><n>``; :attr:`Rendered.codes`
  holds the exact text of each block for the window to put on the clipboard.

Hostile size and depth are bounded: a reply over :data:`MAX_FORMATTED` characters, or nested
deeper than the parser's limit (where markdown-it would silently drop the rest), is shown as
plain text with a one-line note instead, and at most :data:`MAX_SHOWN` characters of it are put
in the view (the whole text stays available to *Copy*).

Why our own renderer and not ``QTextDocument.setMarkdown``: Qt's reader turns ``![x](file:…)``
into an image the document then loads, renders links to any scheme, and has no hook to show a
link's target; here every element is one we chose to emit.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import LiteralString

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..core.termsafe import visible_line
from .safetext import Markup, rich

#: Above this many characters a reply is not parsed: it is shown as plain text, with a note.
#: markdown-it-py reads dense Markdown at about 2 µs a character, so this keeps any reply's
#: formatting near 100 ms (a long answer is 10,000-30,000 characters).
MAX_FORMATTED = 50_000
#: A ``[`` costs markdown-it-py 30-60 µs (each one may open a link label it then looks for the
#: end of): once the paragraphs formatted so far hold this many, the rest keep their text as it
#: is; a reply with more than ``4 *`` this many is shown as plain text without being parsed.
MAX_BRACKETS = 500
#: The backstop for input no cap here foresaw: once formatting a reply's inline text has taken
#: this long, the rest of its paragraphs and cells keep their text as it is (still escaped,
#: still in their blocks), with a note.
INLINE_BUDGET_S = 0.06
#: A paragraph (or table cell) longer than this keeps its text as it is: one paragraph of dense
#: ``*a *a …`` costs markdown-it-py ~2.5 µs a character, and the budget above is only looked at
#: between paragraphs.
MAX_INLINE = 5_000
#: A paragraph that parses into more pieces than this (spans, links, breaks) keeps its text as
#: it is: Qt lays out a line with thousands of format changes slowly (a second for 12,000).
MAX_INLINE_TOKENS = 600
#: Table cells formatted per reply (Qt lays out a table cell in ~80 µs); a table past this
#: total is shown as its Markdown source, in a code block.
MAX_TABLE_CELLS = 800
#: markdown-it-py reads a table row in ~50-100 µs: a reply with more lines holding a ``|`` than
#: this is shown as plain text without being parsed.
MAX_TABLE_LINES = 400
#: At most this many characters of a plain-text reply go into the view (Qt lays out every one).
MAX_SHOWN = 50_000
#: markdown-it's nesting limit (block quotes, list levels, emphasis); past it the parser stops
#: reading the rest of the block, so a reply that reaches it is shown as plain text instead.
MAX_NESTING = 40
#: No lead: the reply starts with its own first word.
NO_LEAD = Markup("")
#: The scheme of the anchor a code block's (or a message's) *Copy* link points to.
COPY_SCHEME = "hearthside-copy"
#: The only schemes a link may open (in the browser, after a click).
OPENABLE = ("https://", "http://")

_PARSER = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING, "breaks": True})
_PARSER.enable(["table", "strikethrough"])
_PARSER.disable("inline")  # run per paragraph by :func:`render`, under INLINE_BUDGET_S

#: A line that opens this many list items or quotes at once (``- - - - … x``): markdown-it
#: takes ~5 µs per marker per level to find it out, and past MAX_NESTING it drops the rest.
_DEEP_LINE_RX = re.compile(r"(?m)^[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+|>[ \t]*)"
                           + f"{{{MAX_NESTING // 2}}}")

#: Bidi embeddings, overrides and isolates: shown as escapes wherever they are in a reply.
_BIDI_RX = re.compile("[\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class Rendered:
    """A reply as the view shows it: ``markup`` (escaped HTML), the exact text of each code
    block in order (``codes[n]`` is what ``hearthside-copy:<prefix><n>`` copies), and ``note``:
    empty, or the one-line reason the reply is shown as plain text."""

    markup: Markup
    codes: tuple[str, ...] = ()
    note: str = ""


def openable(url: str) -> bool:
    """True for the only links Hearthside opens: ``https://`` and ``http://``."""
    return url.strip().lower().startswith(OPENABLE)


def _text(s: str) -> str:
    """Body text, escaped, with bidi overrides made visible."""
    return html.escape(_BIDI_RX.sub(lambda m: visible_line(m.group(0)), s), quote=False)


def _shown(s: str) -> str:
    """Text that must read as what it is (link text and targets): every invisible character as
    an escape, then escaped."""
    return html.escape(visible_line(s), quote=True)


class _Writer:
    """Collects the HTML of one reply: literal tags Hearthside wrote, and escaped text."""

    def __init__(self, copy_prefix: str, lead: Markup) -> None:
        self.out: list[str] = []
        self.codes: list[str] = []
        self.copy_prefix = copy_prefix
        self.lead = str(lead)
        self.link_text: list[str] | None = None  # the plain text of the link being written
        self.link_target = ""
        self.link_open = False

    def tag(self, t: LiteralString) -> None:
        self.out.append(t)

    def take_lead(self) -> None:
        if self.lead:
            self.out.append(self.lead)
            self.lead = ""

    # --- inline ---------------------------------------------------------------------------
    def inline(self, tokens: Sequence[Token]) -> None:
        for t in tokens:
            kind = t.type
            if kind in ("text", "text_special"):
                self.words(t.content)
            elif kind in ("softbreak", "hardbreak"):
                self.tag("<br>")
            elif kind == "code_inline":
                self.tag("<code>")
                self.words(t.content)
                self.tag("</code>")
            elif kind in _INLINE_TAGS:
                self.tag(_INLINE_TAGS[kind])
            elif kind == "link_open":
                self.start_link(str(t.attrs.get("href", "")))
            elif kind == "link_close":
                self.end_link()
            elif kind == "image":
                self.image(t)
            else:  # html_inline (never made: html is off) or anything new: its text, escaped
                self.words(t.content)

    def words(self, s: str) -> None:
        if self.link_text is not None:
            self.link_text.append(s)
            self.out.append(_shown(s))
        else:
            self.out.append(_text(s))

    def start_link(self, href: str) -> None:
        self.link_text, self.link_target = [], href
        self.link_open = openable(href)
        if self.link_open:
            self.out.append('<a href="' + html.escape(href, quote=True) + '">')

    def end_link(self) -> None:
        text = "".join(self.link_text or [])
        self.link_text = None
        if self.link_open:
            self.tag("</a>")
        if visible_line(text) != visible_line(self.link_target):
            self.out.append(' <span style="color:#666">(' + _shown(self.link_target) + ")</span>")

    def image(self, t: Token) -> None:
        alt = t.content or "image"
        src = str(t.attrs.get("src", ""))
        self.out.append(_shown(alt) + ' <span style="color:#666">(image: ' + _shown(src) + ")</span>")

    # --- blocks ---------------------------------------------------------------------------
    def blocks(self, tokens: Sequence[Token]) -> None:
        for t in tokens:
            kind = t.type
            if kind == "inline":
                self.inline(t.children or [])
            elif kind == "paragraph_open":
                if not t.hidden:
                    self.tag("<p>")
                self.take_lead()
            elif kind == "paragraph_close":
                if not t.hidden:
                    self.tag("</p>")
            elif kind in ("fence", "code_block"):
                self.code(t.content, t.info if kind == "fence" else "")
            elif kind == "big_table":
                self.take_lead_alone()
                self.out.append(rich("<p><i style='color:#666'>{}</i></p>",
                                     "A table too large to format, shown as its text:"))
                self.code(t.content, "")
            elif kind == "heading_open":
                self.take_lead_alone()
                self.tag(_HEADINGS.get(t.tag, "<h6>"))
            elif kind == "heading_close":
                self.tag(_HEADINGS_END.get(t.tag, "</h6>"))
            elif kind == "ordered_list_open":
                self.take_lead_alone()
                start = t.attrs.get("start")
                if isinstance(start, int) and start != 1:
                    self.out.append(f'<ol start="{int(start)}">')
                else:
                    self.tag("<ol>")
            elif kind in ("th_open", "td_open"):
                align = _ALIGN_RX.search(str(t.attrs.get("style", "")))
                self.tag("<th" if kind == "th_open" else "<td")
                if align:
                    self.out.append(f' align="{align.group(1)}"')
                self.tag(">")
            elif kind == "table_open":
                self.take_lead_alone()
                self.tag('<table border="1" cellspacing="0" cellpadding="4" style="border-color:#bbb;margin-top:6px">')
            elif kind in _BLOCK_TAGS:
                if kind.endswith("_open"):
                    self.take_lead_alone()
                self.tag(_BLOCK_TAGS[kind])
            elif t.content:  # html_block (never made) or anything new: its text, escaped
                self.take_lead_alone()
                self.out.append("<p>" + _text(t.content) + "</p>")

    def take_lead_alone(self) -> None:
        """The lead (``juniper:``) on its own line, before a reply that opens with a block."""
        if self.lead:
            self.out.append("<p>" + self.lead + "</p>")
            self.lead = ""

    def code(self, content: str, info: str) -> None:
        self.take_lead_alone()
        text = content.removesuffix("\n")
        n = len(self.codes)
        self.codes.append(text)
        lang = info.strip().split(" ")[0] if info.strip() else ""
        href = html.escape(f"{COPY_SCHEME}:{self.copy_prefix}{n}", quote=True)
        self.out.append('<p style="margin-bottom:0"><a href="' + href + '">Copy code</a>'
                        + (' <span style="color:#666">' + _shown(lang) + "</span>" if lang else "") + "</p>")
        self.out.append('<pre style="background-color:#f3f3f3;margin-top:2px">' + html.escape(text, quote=False)
                        + "</pre>")


_INLINE_TAGS: dict[str, LiteralString] = {
    "strong_open": "<b>", "strong_close": "</b>", "em_open": "<i>", "em_close": "</i>",
    "s_open": "<s>", "s_close": "</s>",
}
_BLOCK_TAGS: dict[str, LiteralString] = {
    "bullet_list_open": "<ul>", "bullet_list_close": "</ul>", "ordered_list_close": "</ol>",
    "list_item_open": "<li>", "list_item_close": "</li>",
    "blockquote_open": '<blockquote style="color:#444">', "blockquote_close": "</blockquote>",
    "hr": "<hr>", "table_close": "</table>", "thead_open": "<thead>", "thead_close": "</thead>",
    "tbody_open": "<tbody>", "tbody_close": "</tbody>", "tr_open": "<tr>", "tr_close": "</tr>",
    "th_close": "</th>", "td_close": "</td>",
}
_HEADINGS: dict[str, LiteralString] = {"h1": "<h2>", "h2": "<h3>", "h3": "<h4>", "h4": "<h5>", "h5": "<h6>"}
_HEADINGS_END: dict[str, LiteralString] = {"h1": "</h2>", "h2": "</h3>", "h3": "</h4>", "h4": "</h5>",
                                           "h5": "</h6>"}
_ALIGN_RX = re.compile(r"text-align:(left|right|center)")


def plain(text: str, note: str, lead: Markup = NO_LEAD) -> Rendered:
    """``text`` as plain text (line breaks kept), at most :data:`MAX_SHOWN` characters of it,
    under a one-line ``note`` saying why it is not formatted."""
    shown = text[:MAX_SHOWN]
    if len(text) > MAX_SHOWN:
        note += f" The first {MAX_SHOWN:,} of {len(text):,} characters are shown; Copy copies them all."
    body = html.escape(_BIDI_RX.sub(lambda m: visible_line(m.group(0)), shown), quote=False)
    return Rendered(rich("<p>{}<i style='color:#666'>{}</i></p>", lead, note)
                    + Markup('<p style="white-space:pre-wrap">' + body + "</p>"), (), note)


def render(text: str, copy_prefix: str = "", lead: Markup = NO_LEAD) -> Rendered:
    """``text`` (a model's Markdown) as escaped rich text; ``lead`` (Hearthside's own markup,
    such as ``<b>juniper:</b>``) opens the first paragraph; code block *Copy* anchors are
    ``hearthside-copy:<copy_prefix><n>``."""
    if len(text) > MAX_FORMATTED:
        return plain(text, f"This reply is too long to format ({len(text):,} characters); "
                     "it is shown as plain text.", lead)
    if text.count("[") > 4 * MAX_BRACKETS:
        return plain(text, "This reply has too many [ brackets to format; it is shown as plain text.", lead)
    if text.count("|") > MAX_TABLE_LINES and _table_lines(text) > MAX_TABLE_LINES:
        return plain(text, "This reply has a table too large to format; it is shown as plain text.", lead)
    deep = "This reply is nested too deeply to format; it is shown as plain text."
    if _DEEP_LINE_RX.search(text):
        return plain(text, deep, lead)
    env: dict[str, object] = {}
    tokens = _PARSER.parse(text, env)
    if any(t.level >= MAX_NESTING - 1 for t in tokens):
        return plain(text, deep, lead)
    tokens = _big_tables_as_source(tokens, text)
    late = _inline(tokens, env)
    w = _Writer(copy_prefix, lead)
    w.blocks(tokens)
    w.take_lead_alone()
    note = "Part of this reply is too complex to format; it is shown as text." if late else ""
    if note:
        w.out.append(rich("<p><i style='color:#666'>{}</i></p>", note))
    # The one place this module makes Markup: every piece above is a literal tag or escaped text.
    return Rendered(Markup("".join(w.out)), tuple(w.codes), note)


def _table_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if "|" in line)


def _inline(tokens: Sequence[Token], env: dict[str, object]) -> bool:
    """Parse each block's inline text (links, emphasis, code spans) while the limits hold: the
    time budget, the brackets seen so far; a block longer than MAX_INLINE, or that parses into
    more than MAX_INLINE_TOKENS pieces, keeps its text too. True when a limit was reached."""
    deadline = time.monotonic() + INLINE_BUDGET_S
    brackets = 0
    late = limited = False
    for t in tokens:
        if t.type != "inline":
            continue
        brackets += t.content.count("[")
        if not late and (brackets > MAX_BRACKETS or time.monotonic() > deadline):
            late = True  # from here on, every block keeps its text
        children = None
        if not late and len(t.content) <= MAX_INLINE:
            children = _PARSER.inline.parse(t.content, _PARSER, env, [])
            if len(children) > MAX_INLINE_TOKENS:
                children = None
        if children is None:
            limited = True
            children = [Token("text", "", 0, content=t.content)]
        t.children = children
    return limited


def _big_tables_as_source(tokens: list[Token], text: str) -> list[Token]:
    """Tables past MAX_TABLE_CELLS (counted over the reply) as a code block of their source."""
    cells, out, i = 0, [], 0
    lines: list[str] | None = None
    while i < len(tokens):
        t = tokens[i]
        if t.type != "table_open":
            out.append(t)
            i += 1
            continue
        end = i
        while tokens[end].type != "table_close":
            end += 1
        cells += sum(1 for x in tokens[i:end] if x.type in ("td_open", "th_open"))
        if cells <= MAX_TABLE_CELLS or t.map is None:
            out.extend(tokens[i:end + 1])
        else:
            lines = text.split("\n") if lines is None else lines
            src = "\n".join(lines[t.map[0]:t.map[1]])
            out.append(Token("big_table", "", 0, content=src))
        i = end + 1
    return out


__all__ = ["COPY_SCHEME", "MAX_FORMATTED", "MAX_NESTING", "MAX_SHOWN", "NO_LEAD", "Rendered", "openable", "plain",
           "render"]
