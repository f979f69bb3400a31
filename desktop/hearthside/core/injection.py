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

_COMPILED = tuple(re.compile(p, re.I | re.A) for p in INJECTION_PATTERNS)

#: Invisible characters that can hide instructions from a human reviewer.
INVISIBLE_CLASS = "\u200b-\u200d\u2060\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")


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


def scan_for_injection(text: str) -> InjectionHit | None:
    """Return the first injection finding in ``text``, or None when it is clean.

    Markers are tried in contract order before invisible characters. A leading BOM is not a
    finding: callers strip it before they get here, and it carries no hidden text.
    """
    for rx in _COMPILED:
        m = rx.search(text)
        if m:
            return InjectionHit("marker", m.group(0), m.start())
    m = _INVISIBLE.search(text, 1 if text.startswith("\ufeff") else 0)
    if m:
        return InjectionHit("invisible", f"U+{ord(m.group(0)):04X}", m.start())
    return None


def scan_all(text: str) -> list[InjectionHit]:
    """Every finding (each marker's first hit, then each invisible character) for review UIs."""
    hits: list[InjectionHit] = []
    for rx in _COMPILED:
        m = rx.search(text)
        if m:
            hits.append(InjectionHit("marker", m.group(0), m.start()))
    for m in _INVISIBLE.finditer(text, 1 if text.startswith("\ufeff") else 0):
        hits.append(InjectionHit("invisible", f"U+{ord(m.group(0)):04X}", m.start()))
    return hits
