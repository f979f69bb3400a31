"""What the review window shows for a waiting file: its state, a diff in rows, and findings.

Drift decides (``DriftService``); this module only turns its answers into values a window can
draw without any rule of its own: the unified diff parsed into numbered rows, each injection
finding with its line number and the exact text it matched, and a file whose persona folder is
gone shown as missing instead of an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.compose import read_persona_file
from ..core.drift import APPROVED, MISSING, REJECTED
from ..core.injection import scan_all
from .drift import DriftError, FileStatus

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class DiffRow:
    """One line of the diff: ``kind`` is add, remove, context or hunk (a ``@@`` separator)."""

    kind: str
    old_no: int | None
    new_no: int | None
    text: str


@dataclass(frozen=True)
class Finding:
    """An injection finding at a line of the current file, with the text it matched."""

    line: int
    matched: str
    description: str


@dataclass(frozen=True)
class ReviewItem:
    """Everything the window shows for one file."""

    status: FileStatus
    rows: tuple[DiffRow, ...] = ()
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    folder_gone: bool = False  # the whole persona folder is gone: nothing left to approve
    #: The fingerprint of the version the diff and findings show ("" for absent or unusable):
    #: Approve records the file only while it still has exactly this one.
    shown: str = ""

    @property
    def path(self) -> str:
        return self.status.path

    @property
    def can_approve(self) -> bool:
        """Approving needs a usable file, or an approved copy whose removal can be accepted."""
        return self.status.state != REJECTED and not self.folder_gone

    @property
    def can_open(self) -> bool:
        return self.status.state != MISSING


def waiting(drift: Any) -> list[FileStatus]:
    """Files waiting for review (every state but approved), soul first, then by persona. A file
    that is absent and was never approved (no soul.md written yet) is not waiting for anything."""
    return [s for s in drift.scan()
            if s.state != APPROVED and not (s.state == MISSING and not s.baseline)]


def parse_diff(text: str) -> tuple[list[str], list[DiffRow]]:
    """Split ``DriftService.diff`` output into its ``#`` notes and numbered rows."""
    notes: list[str] = []
    rows: list[DiffRow] = []
    old = new = 0
    for line in text.splitlines():
        if line.startswith("# ") and not rows:
            notes.append(line[2:])
            continue
        if line.startswith(("--- ", "+++ ")) and not rows:
            continue
        m = _HUNK.match(line)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            old = max(old, 1) if m.group(1) != "0" else 1
            new = max(new, 1) if m.group(2) != "0" else 1
            rows.append(DiffRow("hunk", None, None, line))
        elif line.startswith("+"):
            rows.append(DiffRow("add", None, new, line[1:]))
            new += 1
        elif line.startswith("-"):
            rows.append(DiffRow("remove", old, None, line[1:]))
            old += 1
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            rows.append(DiffRow("context", old, new, line.removeprefix(" ")))
            old += 1
            new += 1
    return notes, rows


def findings_in(path: str, body: str | None = None) -> list[Finding]:
    """Every injection finding in ``body`` (the version shown), or else in the file's current
    text, with line numbers."""
    if body is None:
        body = read_persona_file(path, scan=False).body
    if body is None:
        return []
    out = []
    for hit in scan_all(body):
        lead = len(hit.matched) - len(hit.matched.lstrip()) if hit.kind == "marker" else 0
        line = body.count("\n", 0, hit.offset + lead) + 1  # a marker's match starts at the newline before it
        out.append(Finding(line, hit.matched.strip() if hit.kind == "marker" else hit.matched, hit.describe()))
    return out


def review_item(drift: Any, status: FileStatus) -> ReviewItem:
    """The diff and findings of one file, read now. A file (or its whole persona folder) that is
    gone comes back as missing with a note, never as an error."""
    if not os.path.lexists(status.path):
        gone = os.path.dirname(status.path)
        folder_gone = not os.path.isdir(gone)
        note = (f"The folder {gone} no longer exists; this persona's files are gone." if folder_gone
                else "The file no longer exists. Approve to accept that it was removed.")
        st = status if status.state == MISSING else FileStatus(
            status.persona, status.file, status.path, MISSING, status.baseline, "", (), note)
        fp = ""
        try:
            text, fp, _ = drift.diff_shown(status.path)
            notes, rows = parse_diff(text)
        except DriftError:
            notes, rows = [], []
        return ReviewItem(st, tuple(rows), (note, *notes), folder_gone=folder_gone, shown=fp)
    body: str | None = None
    try:
        text, fp, body = drift.diff_shown(status.path)  # one read: the diff, its fingerprint, its text
        notes, rows = parse_diff(text)
    except DriftError as exc:
        notes, rows, fp = [str(exc)], [], status.current
    extra = [f for f in status.findings if " contains an " not in f]  # e.g. a link leading outside
    if status.reason and status.state in (REJECTED, MISSING):  # the title already says "changed"/"new"
        extra.insert(0, status.reason)
    found = findings_in(status.path, body) if body is not None else []
    return ReviewItem(status, tuple(rows), tuple(extra + notes), tuple(found), shown=fp)


@dataclass(frozen=True)
class ApproveOutcome:
    """What approving did: the files approved (or refused by drift as unusable), and the files
    left alone because they changed again after the person looked at them."""

    done: tuple[FileStatus, ...] = ()
    changed_since_shown: tuple[FileStatus, ...] = ()


def approve(drift: Any, shown: list[FileStatus] | list[ReviewItem]) -> ApproveOutcome:
    """Approve exactly the files the person saw, as they saw them: each is recorded only while
    its content still has the fingerprint that was shown (a :class:`ReviewItem`'s diff, or a
    listed status's), checked and recorded from one read by ``DriftService.approve_shown``; a
    file that changed since is left waiting, so nobody approves text they never read.
    An empty list approves nothing (never "everything" by accident)."""
    if not shown:
        return ApproveOutcome()
    prints = {s.path: s.shown if isinstance(s, ReviewItem) else s.current for s in shown}
    done, stale = drift.approve_shown(prints)
    return ApproveOutcome(tuple(done), tuple(stale))


@dataclass
class ReviewSnapshot:
    """The waiting list plus the item for the file shown (if any), fetched in one background call."""

    files: list[FileStatus] = field(default_factory=list)
    item: ReviewItem | None = None


def snapshot(drift: Any, shown: FileStatus | str | None) -> ReviewSnapshot:
    """Re-read the waiting list and the shown file (a status, or a path from a notification).
    The shown file stays even after it vanishes from the list (its persona folder deleted),
    as missing; a shown file that is approved now has no item."""
    files = waiting(drift)
    if shown is None:
        return ReviewSnapshot(files, None)
    path = shown if isinstance(shown, str) else shown.path
    st = next((s for s in files if s.path == path), None)
    if st is None:
        if os.path.lexists(path):
            return ReviewSnapshot(files, None)
        prev = shown if isinstance(shown, FileStatus) else None
        st = FileStatus(prev.persona if prev else "", prev.file if prev else os.path.basename(path),
                        path, MISSING, prev.baseline if prev else "", "")
        files = [*files, st]
    return ReviewSnapshot(files, review_item(drift, st))
