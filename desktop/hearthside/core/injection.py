"""The one injection scan every caller uses (contract section 4).

The soul is rejected on a hit; persona files, pack skills and model-written memory show the
hit to the user. Keeping a single function means the rules cannot drift between callers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The markers, in the order they are tried; the first hit wins.
INJECTION_PATTERNS: tuple[str, ...] = (
    r"ignore\s+(all\s+)?(the\s+)?(previous|prior|above|preceding)\s+instructions",
    r"disregard\s+(all\s+)?(the\s+)?(previous|prior|above|your|preceding)",
    r"forget\s+(all\s+)?(the\s+)?(previous|prior|above|your)\s+instructions",
    r"override\s+(your|the)\s+(system|previous|prior)\s+(prompt|instructions)",
    r"(^|\n)\s*system\s*:",
    r"(^|\n)\s*assistant\s*:",
    r"you\s+are\s+now\s+(a|an|the)\b",
    r"\bnew\s+(system\s+)?(prompt|instructions)\s*:",
)

_COMPILED = tuple(re.compile(p, re.IGNORECASE | re.ASCII) for p in INJECTION_PATTERNS)

#: The same markers over ASCII-lowered UTF-8 bytes. ``bytes.lower()`` folds exactly the ASCII
#: letters and bytes patterns use ASCII ``\s``/``\b``, so this is ``re.I | re.A`` without the
#: per-character case folding that makes the text version ~10x slower on megabyte files.
_LINE_START = re.compile(rb"(system|assistant)\s*:")
_FAST: tuple[re.Pattern[bytes] | None, ...] = tuple(
    None if p.startswith("(^|\\n)") else re.compile(p.removeprefix("\\b").encode())
    for p in INJECTION_PATTERNS
)
#: Patterns whose leading ``\b`` is checked by hand so the search can start from a literal.
_LEADING_B = frozenset(i for i, p in enumerate(INJECTION_PATTERNS) if p.startswith("\\b"))


def _is_word_byte(b: int) -> bool:
    return b == 0x5F or 0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A or 0x41 <= b <= 0x5A
_LINE_WORD = {4: b"system", 5: b"assistant"}
_WS = b" \t\n\r\f\v"

#: Invisible characters that can hide instructions from a human reviewer.
INVISIBLE_CLASS = "\u200b-\u200d\u2060\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")
_INVISIBLE_UTF8 = re.compile(
    rb"\xe2\x80[\x8b-\x8d\xaa-\xae]|\xe2\x81[\xa0\xa2-\xa4\xa6-\xa9]|\xef\xbb\xbf"
)


def _line_start_match(low: bytes, word: bytes) -> tuple[int, int] | None:
    """Leftmost match of ``(^|\\n)\\s*WORD\\s*:`` in ``low``, found via the literal word.

    Python's regex engine tries the leading alternation at every offset; searching for the
    word first and checking the whitespace run before it finds the same leftmost match.
    """
    rx = re.compile(re.escape(word) + rb"[ \t\n\r\f\v]*:")
    for m in rx.finditer(low):
        i = m.start()
        j = i
        while j > 0 and low[j - 1] in _WS:
            j -= 1
        run = low[j:i]
        if j == 0:
            return 0, m.end()
        nl = run.find(b"\n")
        if nl >= 0:
            return j + nl, m.end()
    return None


def _scan_utf8(data: bytes, first_only: bool) -> list[tuple[str, int, int]]:
    """Findings as (kind, byte start, byte end) over UTF-8 ``data``, in contract order."""
    low = data.lower()
    out: list[tuple[str, int, int]] = []
    for idx, rx in enumerate(_FAST):
        if rx is None:
            span = _line_start_match(low, _LINE_WORD[idx])
        elif idx in _LEADING_B:
            span = None
            for m in rx.finditer(low):
                if m.start() == 0 or not _is_word_byte(low[m.start() - 1]):
                    span = (m.start(), m.end())
                    break
        else:
            found = rx.search(low)
            span = (found.start(), found.end()) if found else None
        if span is not None:
            out.append(("marker", span[0], span[1]))
            if first_only:
                return out
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    if b"\xe2\x80" not in data and b"\xe2\x81" not in data and b"\xef\xbb\xbf" not in data[start:]:
        return out
    for m in _INVISIBLE_UTF8.finditer(data, start):
        out.append(("invisible", m.start(), m.end()))
        if first_only:
            break
    return out


def _hit(data: bytes, kind: str, start: int, end: int) -> InjectionHit:
    text = data[start:end].decode("utf-8", "replace")
    offset = len(data[:start].decode("utf-8", "replace"))
    if kind == "invisible":
        return InjectionHit("invisible", f"U+{ord(text):04X}", offset)
    return InjectionHit("marker", text, offset)


@dataclass(frozen=True)
class InjectionHit:
    """One finding: which rule matched and the exact text (or code point) it matched."""

    kind: str  # "marker" or "invisible"
    matched: str
    offset: int

    def describe(self) -> str:
        """A sentence for the user naming what was found."""
        if self.kind == "invisible":
            return f"invisible character {self.matched} at offset {self.offset}"
        return f"injection marker {self.matched.strip()!r} at offset {self.offset}"


def scan_for_injection(text: str | bytes) -> InjectionHit | None:
    """Return the first injection finding in ``text`` (str or UTF-8 bytes), or None.

    Markers are tried in contract order before invisible characters. A leading BOM is not a
    finding: it carries no hidden text and readers strip it.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    found = _scan_utf8(data, first_only=True)
    return _hit(data, *found[0]) if found else None


def scan_all(text: str | bytes) -> list[InjectionHit]:
    """Every finding (each marker's first hit, then each invisible character) for review UIs."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return [_hit(data, *f) for f in _scan_utf8(data, first_only=False)]


def scan_reference(text: str) -> InjectionHit | None:
    """The contract's regexes applied literally; the fast scan must always agree with it."""
    for rx in _COMPILED:
        m = rx.search(text)
        if m:
            return InjectionHit("marker", m.group(0), m.start())
    m = _INVISIBLE.search(text, 1 if text.startswith("\ufeff") else 0)
    if m:
        return InjectionHit("invisible", f"U+{ord(m.group(0)):04X}", m.start())
    return None
