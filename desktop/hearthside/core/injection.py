"""The one injection scan every caller uses (contract section 4).

The soul is rejected on a hit; persona files, pack skills and model-written memory show the
hit to the user. Keeping a single function means the rules cannot drift between callers.

Two halves, both on the same text:

- **Markers** are matched on a *normalised copy*: each character compatibility-normalised
  (NFKC, so fullwidth ``ｓｙｓｔｅｍ`` is ``system``), every default-ignorable character removed
  (so ``sys\\u200btem:`` is ``system:``), every Unicode line break turned into ``\\n`` (so a CR,
  U+2028 or NEL starts a line). A piecewise map takes offsets back to the original text, so a
  finding quotes what the person wrote, at the line and column where they wrote it.
- **Invisible characters** are judged on the original text, in context: zero-width joiners are
  ordinary in Persian, Indic scripts and emoji, LRM/RLM in right-to-left lines; elsewhere they
  can hide a marker from a human reviewer, so they are flagged.

Speed: the common cases never build a map. ASCII text and text that is already NFKC with no
ignorable characters is scanned as is; the marker regexes run over ASCII-lowered UTF-8 bytes
(``bytes.lower`` folds exactly the ASCII letters, which is ``re.I | re.A`` without per-character
case folding). :func:`scan_reference` is the literal, character-by-character definition; a
property test keeps the two equal.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

#: The markers, in the order they are tried; the first hit wins.
INJECTION_PATTERNS: tuple[str, ...] = (
    r"ignore\s+(all\s+)?(the\s+|your\s+)?(previous|prior|above|preceding)\s+instructions",
    r"disregard\s+(all\s+)?(the\s+)?(previous|prior|above|your|preceding)",
    r"forget\s+(all\s+)?(the\s+)?(previous|prior|above|your)\s+instructions",
    r"override\s+(your|the)\s+(system|previous|prior)\s+(prompt|instructions)",
    r"(^|\n)\s*system\s*:",
    r"(^|\n)\s*assistant\s*:",
    r"you\s+are\s+now\s+(a|an|the)\b",
    r"\bnew\s+(system\s+)?(prompt|instructions)\s*:",
    r"<\|\s*(im_start|im_end|system|assistant|user|endoftext)\s*\|>",
)

_COMPILED = tuple(re.compile(p, re.IGNORECASE | re.ASCII) for p in INJECTION_PATTERNS)

# --- normalisation -------------------------------------------------------------------------

#: Unicode line breaks other than ``\n`` (CR LF becomes two ``\n``: every pattern treats a run of
#: line breaks like one, so this keeps the copy the same length and the match the same).
LINE_BREAKS = "\r\x0b\x0c\x85\u2028\u2029"
_LINE_SPLIT = re.compile("\r\n|[\n\r\x0b\x0c\x85\u2028\u2029]")

#: Default_Ignorable_Code_Point (Unicode 14): removed from the normalised copy, so no
#: invisible character can split a marker.
IGNORABLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_IGNORABLE = re.compile(f"[{IGNORABLE_CLASS}]")


#: Where characters with a decomposition live: the unified ideographs, Hangul syllables and
#: CJK extensions B-F have none, so skipping them keeps the table build short.
_DECOMPOSING_SPANS = ((0x80, 0x3400), (0x4DC0, 0x4E00), (0xA000, 0xAC00), (0xD7A4, 0x20000), (0x2F800, 0x2FA20))


@lru_cache(maxsize=1)
def _unstable() -> re.Pattern[str]:
    """Characters NFKC changes, plus the ignorable ones: built once, on first non-NFKC text.

    Only characters with a decomposition can change (no character past U+2FA1D has one), so
    this is ~15 ms once rather than a table kept in the source.
    """
    cps = [i for lo, hi in _DECOMPOSING_SPANS for i in range(lo, hi)
           if unicodedata.decomposition(chr(i)) and unicodedata.normalize("NFKC", chr(i)) != chr(i)]
    ranges: list[list[int]] = []
    for cp in cps:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    cls = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                  for a, b in ranges)
    return re.compile(f"[{cls}{IGNORABLE_CLASS}]")


@lru_cache(maxsize=4096)
def _norm_char(c: str) -> str:
    """The contract's normalisation of one character (line breaks are translated after)."""
    if _IGNORABLE.match(c):
        return ""
    return unicodedata.normalize("NFKC", c)


def _norm_match(m: re.Match[str]) -> str:
    return _norm_char(m.group())


class _Map:
    """Normalised offset -> original offset, piecewise: identity between changed characters.

    Built only when a marker is found (the copy itself is made by one ``re.sub``)."""

    __slots__ = ("ident", "norm", "orig")

    def __init__(self, text: str, rx: re.Pattern[str]) -> None:
        self.norm: list[int] = [0]
        self.orig: list[int] = [0]
        self.ident: list[bool] = [True]
        shift = 0  # normalised index minus original index, so far
        for hit in rx.finditer(text):
            i = hit.start()
            n = len(_norm_char(hit.group()))
            self.norm += (i + shift, i + shift + n)
            self.orig += (i, i + 1)
            self.ident += (False, True)
            shift += n - 1

    def __call__(self, i: int) -> int:
        k = bisect_right(self.norm, i) - 1
        return self.orig[k] + (i - self.norm[k]) if self.ident[k] else self.orig[k]


_OTHER_BREAKS = re.compile(f"[{LINE_BREAKS}]")


def _breaks_to_newline(text: str) -> str:
    """Every line break as ``\\n``, one for one (``re.sub`` is C speed; ``str.translate`` with
    a dict is a Python lookup per character)."""
    return _OTHER_BREAKS.sub("\n", text) if _OTHER_BREAKS.search(text) else text


def normalise(text: str) -> tuple[str, Callable[[int], int] | None]:
    """The normalised copy and a function taking its offsets back to ``text`` (None when
    offsets are unchanged). The function is built on first use."""
    return _normalise(text, not text.isascii() and _IGNORABLE.search(text) is not None)


def _normalise(text: str, has_ignorable: bool) -> tuple[str, Callable[[int], int] | None]:
    stable = text.isascii() or unicodedata.is_normalized("NFKC", text)
    if stable and not has_ignorable:
        return _breaks_to_newline(text), None
    rx = _IGNORABLE if stable else _unstable()
    built: list[_Map] = []

    def cmap(i: int) -> int:
        if not built:
            built.append(_Map(text, rx))
        return built[0](i)

    return _breaks_to_newline(rx.sub(_norm_match, text)), cmap


def normalise_reference(text: str) -> tuple[str, list[int]]:
    """Literal definition: each character normalised on its own, with its original offset."""
    out: list[str] = []
    where: list[int] = []
    for i, c in enumerate(text):
        rep = "\n" if c in LINE_BREAKS else _norm_char(c)
        out.append(rep)
        where.extend([i] * len(rep))
    return "".join(out), where


# --- markers over ASCII-lowered bytes ------------------------------------------------------

_FAST: tuple[re.Pattern[bytes] | None, ...] = tuple(
    None if p.startswith("(^|\\n)") else re.compile(p.removeprefix("\\b").encode())
    for p in INJECTION_PATTERNS
)
#: Patterns whose leading ``\b`` is checked by hand so the search can start from a literal.
_LEADING_B = frozenset(i for i, p in enumerate(INJECTION_PATTERNS) if p.startswith("\\b"))
_LINE_WORD = {4: re.compile(rb"system[ \t\n\r\f\v]*:"), 5: re.compile(rb"assistant[ \t\n\r\f\v]*:")}
_WS = b" \t\n\r\f\v"


def _is_word_byte(b: int) -> bool:
    return b == 0x5F or 0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A or 0x41 <= b <= 0x5A


def _line_start_match(low: bytes, rx: re.Pattern[bytes]) -> tuple[int, int] | None:
    """Leftmost match of ``(^|\\n)\\s*WORD\\s*:`` in ``low``, found via the literal word.

    Python's regex engine tries the leading alternation at every offset; searching for the
    word first and checking the whitespace run before it finds the same leftmost match.
    """
    for m in rx.finditer(low):
        i = j = m.start()
        while j > 0 and low[j - 1] in _WS:
            j -= 1
        if j == 0:
            return 0, m.end()
        nl = low[j:i].find(b"\n")
        if nl >= 0:
            return j + nl, m.end()
    return None


def _marker_spans(data: bytes, first_only: bool) -> list[tuple[int, int]]:
    """(byte start, byte end) of each marker's first hit in UTF-8 ``data``, in contract order."""
    low = data.lower()
    out: list[tuple[int, int]] = []
    for idx, rx in enumerate(_FAST):
        span: tuple[int, int] | None = None
        if rx is None:
            span = _line_start_match(low, _LINE_WORD[idx])
        elif idx in _LEADING_B:
            for m in rx.finditer(low):
                if m.start() == 0 or not _is_word_byte(low[m.start() - 1]):
                    span = (m.start(), m.end())
                    break
        else:
            found = rx.search(low)
            span = (found.start(), found.end()) if found else None
        if span is not None:
            out.append(span)
            if first_only:
                break
    return out


# --- invisible characters, judged in context -----------------------------------------------

#: Always flagged (U+FEFF only past offset 0; tag characters only outside an emoji tag sequence).
ALWAYS_FLAGGED_CLASS = (
    "\u00ad\u034f\u115f\u1160\u180e\u200b\u202a-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff"
    "\uffa0\U000e0000-\U000e007f"
)
_CANDIDATE = re.compile(f"[{ALWAYS_FLAGGED_CLASS}\u200c-\u200f]")
#: A flag such as Scotland's: black flag, 2-7 tag letters/digits, cancel tag (UTS #51).
_EMOJI_TAG_SEQ = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f")
_RTL_CANDIDATE = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\U00010800-\U00010fff\U0001e800-\U0001efff]"
)
#: Latin, Common-ish and Inherited ranges: a ZWNJ/ZWJ beside these hides, it does not spell.
_LATIN_RANGES = (
    (0x0000, 0x036F), (0x1AB0, 0x1AFF), (0x1D00, 0x1EFF), (0x2070, 0x214F), (0x2C60, 0x2C7F),
    (0xA720, 0xA7FF), (0xAB30, 0xAB6F), (0xFB00, 0xFB06), (0xFE20, 0xFE2F), (0xFF00, 0xFF60),
    (0x10780, 0x107BF), (0x1DF00, 0x1DFFF),
)
#: What may sit between an emoji and a following ZWJ: variation selectors, skin-tone
#: modifiers, the keycap mark, tag characters.
_EMOJI_TRAIL = re.compile("[\ufe00-\ufe0f\u20e3\U0001f3fb-\U0001f3ff\U000e0020-\U000e007f]")


def _non_latin_letter_or_mark(c: str) -> bool:
    cp = ord(c)
    if unicodedata.category(c)[0] not in "LM":
        return False
    return not any(a <= cp <= b for a, b in _LATIN_RANGES)


#: Where the joiner prefilter looks for non-Latin letters: every script that joins letters with
#: ZWNJ/ZWJ lives here. Han, Hangul syllables and the astral planes are left out to keep the
#: build short; a joiner beside them is simply checked in Python (same answer, a little slower).
_JOINING_SCRIPT_SPANS = ((0x370, 0x3400), (0xA000, 0xAC00), (0xD7B0, 0xE000), (0xF900, 0x10000))


@lru_cache(maxsize=1)
def _suspects() -> re.Pattern[str]:
    """Candidates in text that holds joiners: every listed character except a ZWNJ/ZWJ with a
    letter or mark of a joining script on both sides (the common, legitimate case, left to the
    regex engine so a Persian or Hindi book costs no Python per joiner). A prefilter only: each
    candidate is still judged by :func:`_invisible_ok`. Built once, on the first joiner."""
    latin = re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _LATIN_RANGES) + "]")
    cps = [cp for lo, hi in _JOINING_SCRIPT_SPANS for cp in range(lo, hi)
           if unicodedata.category(chr(cp))[0] in "LM" and not latin.match(chr(cp))]
    ranges: list[list[int]] = []
    for cp in cps:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    nl = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    j = "[\u200c\u200d]"  # the joiner is matched first, then its two neighbours are looked at
    return re.compile(f"[{ALWAYS_FLAGGED_CLASS}\u200e\u200f]|{j}(?:(?<![{nl}]{j})|(?![{nl}]))")


def _is_emoji(c: str) -> bool:
    return unicodedata.category(c) == "So" or 0x1F3FB <= ord(c) <= 0x1F3FF


def _joiner_ok(text: str, i: int) -> bool:
    """ZWNJ/ZWJ at ``i``: between non-Latin letters/marks, or (ZWJ) inside an emoji sequence."""
    left = text[i - 1] if i > 0 else ""
    right = text[i + 1] if i + 1 < len(text) else ""
    if left and right and _non_latin_letter_or_mark(left) and _non_latin_letter_or_mark(right):
        return True
    if text[i] != "\u200d" or not right or not _is_emoji(right):
        return False
    j = i - 1
    while j >= 0 and _EMOJI_TRAIL.match(text[j]):
        j -= 1
    return j >= 0 and _is_emoji(text[j])


class _Lines:
    """Line starts of a text, found once (only when a finding or an LRM/RLM needs them)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None
        self._ends: list[int] = []

    def _index(self) -> list[int]:
        if self._starts is None:
            starts, ends = [0], []
            for m in _LINE_SPLIT.finditer(self.text):
                ends.append(m.start())
                starts.append(m.end())
            ends.append(len(self.text))
            self._starts, self._ends = starts, ends
        return self._starts

    def locate(self, i: int) -> tuple[int, int, int]:
        """0-based line number, start and end (before the break) of the line holding ``i``.

        An offset on a line break belongs to the line the break ends.
        """
        starts = self._index()
        k = bisect_right(starts, i) - 1
        return k, starts[k], self._ends[k]


def _has_rtl(line: str) -> bool:
    return any(unicodedata.bidirectional(m.group()) in ("R", "AL") for m in _RTL_CANDIDATE.finditer(line))


def _invisible_ok(text: str, i: int, tag_spans: list[tuple[int, int]], lines: _Lines,
                  rtl_lines: dict[int, bool]) -> bool:
    """Whether the invisible character at ``i`` is legitimate in its context."""
    c = text[i]
    if c == "\ufeff":
        return i == 0
    if "\U000e0000" <= c <= "\U000e007f":
        return any(a <= i < b for a, b in tag_spans)
    if c in "\u200c\u200d":
        return _joiner_ok(text, i)
    if c in "\u200e\u200f":
        _, start, end = lines.locate(i)
        if start not in rtl_lines:
            rtl_lines[start] = _has_rtl(text[start:end])
        return rtl_lines[start]
    return False


def _invisible_offsets(text: str, first_only: bool) -> list[int]:
    tag_spans: list[tuple[int, int]] = []
    if "\U0001f3f4" in text:
        tag_spans = [m.span() for m in _EMOJI_TAG_SEQ.finditer(text)]
    lines = _Lines(text)
    rtl_lines: dict[int, bool] = {}
    out: list[int] = []
    rx = _suspects() if ("\u200c" in text or "\u200d" in text) else _CANDIDATE
    for m in rx.finditer(text):
        if not _invisible_ok(text, m.start(), tag_spans, lines, rtl_lines):
            out.append(m.start())
            if first_only:
                break
    return out


# --- findings ------------------------------------------------------------------------------

QUOTE_MAX = 160
#: scan_all reports at most this many invisible characters (a review needs the first few).
MAX_INVISIBLE_FINDINGS = 100


def _visible(s: str) -> str:
    """A line as the user can read it: invisible and control characters shown as ``<U+XXXX>``."""
    return "".join(c if c == "\t" or (c.isprintable() and not _CANDIDATE.match(c) and not _IGNORABLE.match(c))
                   else f"<U+{ord(c):04X}>" for c in s)


def _where(lines: _Lines, offset: int) -> tuple[int, int, str]:
    """1-based line and column (in characters) of ``offset``, and the line quoted, cut short."""
    text = lines.text
    k, start, end = lines.locate(offset)
    line = k + 1
    end = max(end, offset + 1)
    col = offset - start + 1
    lo = max(start, offset - QUOTE_MAX // 2)
    hi = min(end, lo + QUOTE_MAX)
    quote = ("…" if lo > start else "") + _visible(text[lo:hi]) + ("…" if hi < end else "")
    return line, col, quote


@dataclass(frozen=True)
class InjectionHit:
    """One finding: which rule matched, the exact original text (or code point) it matched,
    its offset in characters, and where a person finds it (line, column, the line quoted)."""

    kind: str  # "marker" or "invisible"
    matched: str
    offset: int
    line: int = 0
    column: int = 0
    quote: str = ""

    def describe(self) -> str:
        """A sentence for the user naming what was found and where."""
        where = f"at line {self.line}, column {self.column}: \"{self.quote}\""
        if self.kind == "invisible":
            return f"invisible character {self.matched} {where}"
        return f"injection marker {_visible(self.matched.strip())!r} {where}"


def _marker_hit(lines: _Lines, start: int, end: int) -> InjectionHit:
    matched = lines.text[start:end]
    lead = len(matched) - len(matched.lstrip())  # a line-start marker begins at its \n
    line, col, quote = _where(lines, min(start + lead, max(end - 1, start)))
    return InjectionHit("marker", matched, start, line, col, quote)


def _invisible_hit(lines: _Lines, i: int) -> InjectionHit:
    line, col, quote = _where(lines, i)
    return InjectionHit("invisible", f"U+{ord(lines.text[i]):04X}", i, line, col, quote)


def _scan(text: str, first_only: bool) -> list[InjectionHit]:
    # Every character the invisible rules look at is default-ignorable, so one search
    # decides both whether the copy loses characters and whether there is anything to judge.
    has_ignorable = not text.isascii() and _IGNORABLE.search(text) is not None
    norm, cmap = _normalise(text, has_ignorable)
    data = norm.encode("utf-8", "surrogatepass")
    hits: list[InjectionHit] = []
    lines = _Lines(text)
    for bs, be in _marker_spans(data, first_only):
        ns = len(data[:bs].decode("utf-8", "surrogatepass"))
        ne = ns + len(data[bs:be].decode("utf-8", "surrogatepass"))
        os_, oe = (ns, ne) if cmap is None else (cmap(ns), cmap(ne - 1) + 1)
        hits.append(_marker_hit(lines, os_, oe))
        if first_only:
            return hits
    if not has_ignorable:
        return hits
    offsets = _invisible_offsets(text, first_only)
    hits.extend(_invisible_hit(lines, i) for i in offsets[:MAX_INVISIBLE_FINDINGS])
    return hits


def _as_text(text: str | bytes) -> str:
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else text


def scan_for_injection(text: str | bytes) -> InjectionHit | None:
    """Return the first injection finding in ``text`` (str or UTF-8 bytes), or None.

    Markers are tried in contract order before invisible characters. A leading BOM is not a
    finding: it carries no hidden text and readers strip it.
    """
    found = _scan(_as_text(text), first_only=True)
    return found[0] if found else None


def scan_all(text: str | bytes) -> list[InjectionHit]:
    """Every finding (each marker's first hit, then each invisible character) for review UIs."""
    return _scan(_as_text(text), first_only=False)


def scan_reference(text: str) -> InjectionHit | None:
    """The contract applied literally, character by character; the fast scan must agree."""
    norm, where = normalise_reference(text)
    for rx in _COMPILED:
        m = rx.search(norm)
        if m:
            return _marker_hit(_Lines(text), where[m.start()], where[m.end() - 1] + 1)
    tag_spans = [m.span() for m in _EMOJI_TAG_SEQ.finditer(text)]
    flagged = set(ALWAYS_FLAGGED_CLASS_CHARS) | {"\u200c", "\u200d", "\u200e", "\u200f"}
    for i, c in enumerate(text):
        if c in flagged and not _invisible_ok(text, i, tag_spans, _Lines(text), {}):
            return _invisible_hit(_Lines(text), i)
    return None


ALWAYS_FLAGGED_CLASS_CHARS = frozenset(
    chr(cp) for cp in [0xAD, 0x34F, 0x115F, 0x1160, 0x180E, 0x200B, *range(0x202A, 0x202F),
                       *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0x3164, 0xFEFF, 0xFFA0,
                       *range(0xE0000, 0xE0080)]
)
