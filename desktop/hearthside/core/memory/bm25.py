"""Local lexical search over memories: Okapi BM25 with k1 = 1.5, b = 0.75 (contract section 6).

The index is built once per document state and queried many times, so a store can cache it
until the file changes; a query then touches only the postings of its own terms.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

K1 = 1.5
B = 0.75
DEFAULT_RESULTS = 10
MAX_RESULTS = 50

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase ASCII word pieces; key separators (``/``, ``-``, ``_``) split words too."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Bm25Index:
    """Postings (term -> [(doc, tf)]), document lengths and the average length."""

    keys: tuple[str, ...]
    postings: dict[str, list[tuple[int, int]]]
    lengths: tuple[int, ...]
    avgdl: float

    @classmethod
    def build(cls, docs: Iterable[tuple[str, str]]) -> Bm25Index:
        """``docs`` are (key, text) pairs; the key's own words count as text."""
        keys: list[str] = []
        lengths: list[int] = []
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, (key, text) in enumerate(docs):
            toks = tokenize(key) + tokenize(text)
            keys.append(key)
            lengths.append(len(toks))
            for term, tf in Counter(toks).items():
                postings.setdefault(term, []).append((i, tf))
        avgdl = (sum(lengths) / len(lengths)) if lengths else 0.0
        return cls(tuple(keys), postings, tuple(lengths), avgdl)

    def search(self, query: str, k: int = 0) -> list[tuple[str, float]]:
        """Best-first (key, score); ties by key; no-match entries dropped; empty query -> []."""
        terms = set(tokenize(query))
        if not terms or not self.keys:
            return []
        k = DEFAULT_RESULTS if k <= 0 else min(k, MAX_RESULTS)
        n = len(self.keys)
        scores: dict[int, float] = {}
        for term in terms:
            plist = self.postings.get(term)
            if not plist:
                continue
            df = len(plist)
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
            for doc, tf in plist:
                norm = K1 * (1 - B + B * self.lengths[doc] / (self.avgdl or 1.0))
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda it: (-it[1], self.keys[it[0]]))
        return [(self.keys[d], s) for d, s in ranked[:k]]
