"""Drift: how a watched file stands against the copy the user approved (contract section 3).

Everything here is a pure function over values: what a read found (:class:`Reading`), what the
user approved (:class:`Baseline`), and the verdict between them. The app reads files and keeps
baselines; this module only decides. That keeps the trust rules testable as function calls,
and keeps the one non-obvious rule in one place: a damaged baseline is never re-trusted
silently, because an attacker who can corrupt the state dir must not be able to make the app
forget what the user approved.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

APPROVED = "approved"
DRIFTED = "drifted"
NEW = "new"
MISSING = "missing"
REJECTED = "rejected"

#: Every state a watched file can be in.
STATES: tuple[str, ...] = (APPROVED, DRIFTED, NEW, MISSING, REJECTED)

#: States that strict mode keeps out of new sessions until the user approves.
HELD_BACK_STATES = frozenset({DRIFTED, NEW})

#: Version of the on-disk baseline record; a record of another version counts as damaged.
BASELINE_VERSION = 1

_DROPPING_RX = re.compile(
    r"""(
        \.sw[a-px]$          # vim swap files (.swp, .swo, .swx ...)
      | ~$                   # backup files (foo~)
      | ^4913$               # vim's probe file for write permission
      | ^\.tmp               # .tmpXXXX temp files
      | \.tmp[^/]*$          # NAME.tmp, NAME.tmp123 (atomic-save temp names)
      | ^\.\#                # emacs lock files
      | ^\#.*\#$             # emacs auto-save files
      | ^\.goutputstream-    # GTK editors' temp files
      | ^\.~lock\.           # LibreOffice lock files
    )""",
    re.VERBOSE,
)


def is_editor_dropping(name: str) -> bool:
    """True for the temp, swap and backup files editors leave beside the file being edited.

    Such names never carry drift themselves: an atomic save of ``SOUL.md`` shows up as a move
    of a dropping *onto* ``SOUL.md``, and that move is judged by its destination.
    """
    base = name.rsplit("/", 1)[-1]
    return bool(base) and _DROPPING_RX.search(base) is not None


@dataclass(frozen=True)
class Reading:
    """What one bounded read of a watched file found now.

    ``exists`` says the name exists at all (even as a dangling link); ``body`` is the clean text
    that would reach the prompt, or None when the file is unusable (``reason`` says why).
    ``link_target`` is where the file really is when a link leads it outside its folder ("" when
    it is inside): such a file needs its own approval, and the approval names the target.
    """

    exists: bool
    body: str | None
    sha256: str = ""
    size: int = 0
    reason: str = ""
    findings: tuple[str, ...] = ()
    link_target: str = ""

    @staticmethod
    def of_text(body: str, findings: Iterable[str] = (), link_target: str = "") -> Reading:
        """A reading of a usable file whose clean body is ``body``."""
        return Reading(True, body, fingerprint(body), len(body.encode("utf-8")), "", tuple(findings),
                       link_target)


@dataclass(frozen=True)
class Baseline:
    """The user's approval of one file: its fingerprint, size, when, the approved text, and the
    outside target it was reached through ("" when it was not a link leading outside)."""

    sha256: str
    size: int
    approved_at: float
    content: str
    link_target: str = ""

    @staticmethod
    def of(reading: Reading, now: float) -> Baseline:
        """The baseline that approving ``reading`` records."""
        return Baseline(reading.sha256, reading.size, now, reading.body or "", reading.link_target)


@dataclass(frozen=True)
class Verdict:
    """A file's state and why; ``trust`` asks the caller to record the reading (first use)."""

    state: str
    reason: str = ""
    trust: bool = False


def fingerprint(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text`` (the clean body)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge(
    reading: Reading,
    baseline: Baseline | None,
    *,
    baseline_error: str = "",
    first_scan: bool = False,
) -> Verdict:
    """Decide a file's state from what was read and what was approved.

    Order matters: a file that is gone is ``missing``; one that exists but cannot be used is
    ``rejected``; a damaged baseline makes a present file ``drifted`` (never re-trusted); then
    fingerprints are compared, and for a file reached through a link leading outside its folder
    the target too (a repointed link needs approval again, even with the same text). On the
    first scan of a folder an unknown file is trusted (``approved``, ``trust=True``) unless it
    carries findings: a flagged file (a link leading outside is one) is never trusted
    silently, it waits as ``new``.
    """
    if not reading.exists:
        if baseline_error:
            return Verdict(MISSING, f"the file is gone, and its approved copy is damaged: {baseline_error}")
        return Verdict(MISSING, "the file was removed" if baseline else "the file does not exist")
    if reading.body is None:
        return Verdict(REJECTED, reading.reason or "the file cannot be used")
    if baseline_error:
        return Verdict(
            DRIFTED,
            f"the approved copy is damaged ({baseline_error}); it is not trusted again until you "
            "review the file and approve it",
        )
    if baseline is None:
        if first_scan and not reading.findings:
            return Verdict(APPROVED, "trusted on first use", trust=True)
        if reading.findings:
            # the same reason on every run: whether this is the first scan is not the point
            return Verdict(NEW, "not trusted because of findings; review and approve it")
        return Verdict(NEW, "the file appeared after the folder was first approved; review and approve it")
    if baseline.sha256 == reading.sha256:
        if reading.link_target and reading.link_target != baseline.link_target:
            was = f", not to {baseline.link_target} as when you approved it" if baseline.link_target else ""
            return Verdict(DRIFTED, f"the file now leads to {reading.link_target}, outside its folder{was}; "
                           "approve the link to use it")
        return Verdict(APPROVED)
    return Verdict(DRIFTED, "the file changed since you approved it")


def excluded_names(states: Iterable[tuple[str, str]], strict: bool) -> frozenset[str]:
    """Names to leave out of new sessions: drifted or new files, and only in strict mode."""
    if not strict:
        return frozenset()
    return frozenset(name for name, state in states if state in HELD_BACK_STATES)


def unified_diff(approved: str, current: str, label: str) -> str:
    """A unified diff from the approved text to the current text ("" when they are equal)."""
    a = approved.splitlines(keepends=True)
    b = current.splitlines(keepends=True)
    if a and not a[-1].endswith("\n"):
        a[-1] += "\n"
    if b and not b[-1].endswith("\n"):
        b[-1] += "\n"
    return "".join(difflib.unified_diff(a, b, f"approved/{label}", f"current/{label}"))


def summarize(file: str, verdict: Verdict, approved: str | None, current: str | None,
              link_target: str = "") -> str:
    """A one-line summary of a change for a notification (names the file).

    Pass ``approved=None`` when there is no trustworthy approved copy (none, or damaged), and
    ``link_target`` when the file leads outside its folder through a link.
    """
    if link_target and (verdict.state == NEW or (verdict.state == DRIFTED and approved == current)):
        return f"{file} leads to {link_target}, outside its folder, and waits for your approval"
    if verdict.state == DRIFTED and approved is not None and current is not None:
        added = removed = 0
        for line in difflib.ndiff(approved.splitlines(), current.splitlines()):
            if line.startswith("+ "):
                added += 1
            elif line.startswith("- "):
                removed += 1
        return f"{file} changed since you approved it (+{added} -{removed} lines)"
    if verdict.state == APPROVED:
        return f"{file} matches what you approved"
    if verdict.state == NEW:
        return f"{file} is new and waits for your approval"
    if verdict.state == MISSING:
        return f"{file} was removed"
    return f"{file}: {verdict.reason}"


def baseline_to_json(file: str, baseline: Baseline) -> str:
    """Serialize a baseline record (the approved content travels with its fingerprint)."""
    return json.dumps(
        {
            "version": BASELINE_VERSION,
            "file": file,
            "sha256": baseline.sha256,
            "size": baseline.size,
            "approved_at": baseline.approved_at,
            "content": baseline.content,
            "link_target": baseline.link_target,
        },
        ensure_ascii=False,
        indent=1,
    )


def baseline_from_json(text: str | bytes) -> Baseline:
    """Parse a baseline record; raise ValueError with a reason when it is damaged.

    The stored content must hash to the stored fingerprint: a record edited or cut short by
    hand or by a crash is caught here instead of being believed.
    """
    try:
        doc: Any = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    except RecursionError:  # a record nested 100,000 deep is damage, not a crash
        raise ValueError("not valid JSON (nested too deeply)") from None
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION:
        raise ValueError("not a baseline record of a version this Hearthside knows")
    sha, size, at, content = doc.get("sha256"), doc.get("size"), doc.get("approved_at"), doc.get("content")
    if not (isinstance(sha, str) and isinstance(content, str) and isinstance(size, int)
            and isinstance(at, (int, float)) and not isinstance(at, bool)):
        raise ValueError("fields are missing or of the wrong type")  # noqa: TRY004 - a damaged record
    if fingerprint(content) != sha or len(content.encode("utf-8")) != size:
        raise ValueError("the stored copy does not match its stored fingerprint")
    link = doc.get("link_target", "")  # absent in records written before links were tracked
    if not isinstance(link, str):
        raise ValueError("the link target is of the wrong type")  # noqa: TRY004 - a damaged record
    return Baseline(sha, size, float(at), content, link)


K = TypeVar("K", bound=Hashable)


class Debouncer(Generic[K]):
    """Coalesces bursts of change notices per key, with the clock passed in.

    A key becomes due once ``quiet`` seconds pass without a new notice, or ``max_wait`` seconds
    after the first notice of a burst, whichever comes first. The cap matters: an editor that
    autosaves every 50 ms would otherwise postpone the drift report forever.
    """

    def __init__(self, quiet: float, max_wait: float) -> None:
        if quiet < 0 or max_wait < quiet:
            raise ValueError("need 0 <= quiet <= max_wait")
        self.quiet = quiet
        self.max_wait = max_wait
        self._first: dict[K, float] = {}
        self._last: dict[K, float] = {}

    def note(self, key: K, now: float) -> None:
        """Record a change notice for ``key`` at time ``now``."""
        self._first.setdefault(key, now)
        self._last[key] = now

    def _deadline(self, key: K) -> float:
        return min(self._last[key] + self.quiet, self._first[key] + self.max_wait)

    def next_deadline(self) -> float | None:
        """When the earliest pending key becomes due, or None when nothing is pending."""
        return min((self._deadline(k) for k in self._first), default=None)

    def due(self, now: float) -> list[K]:
        """Pop and return the keys that are due at ``now``, oldest burst first."""
        ready = sorted((k for k in self._first if self._deadline(k) <= now), key=lambda k: self._first[k])
        for k in ready:
            del self._first[k]
            del self._last[k]
        return ready

    def pending(self) -> int:
        """How many keys wait."""
        return len(self._first)
