"""The learned-memory model (contract section 6; seeds ``004_*`` MemoryStore and lifecycle types).

Pure values and rules: the key grammar, the limits, revisions with opaque versions, compare-and-
swap, forget as a tombstone, undo as a compensating revision, secret-shaped value refusal and
injection findings. A store adapter loads a :class:`MemoryDocument`, asks it to mutate, and saves
it; every rule lives here so two store implementations cannot disagree about them.
"""

from __future__ import annotations

import builtins
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hearthside.core.injection import scan_for_injection
from hearthside.core.redact import contains_known_secret
from hearthside.core.secrets import CREDENTIAL_SHAPES, credential_shape

KEY_RX = re.compile(r"^[a-z][a-z0-9_-]*(/[a-z][a-z0-9_-]*)*$")
MAX_KEY_BYTES = 128
MAX_VALUE_BYTES = 64 * 1024
MAX_DESCRIPTION_BYTES = 64 * 1024
MAX_KEYS = 4096
MAX_REVISIONS = 64
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
#: Times are seconds since 1970; beyond the year 9999 no calendar (or ``time.gmtime``) holds them.
MAX_TIMESTAMP = 253402300800.0
FORMAT = 1
#: Room the model's writes leave free under the 8 MiB cap, so the user can always forget and
#: undo (an undo may bring a large value back): the model cannot lock the user out.
USER_RESERVE_BYTES = 1024 * 1024

#: Pass as ``expected`` to require that the key has no current value (create-only).
ABSENT = "absent"

STATUS_ACTIVE = "active"
STATUS_SUPERSEDED = "superseded"
STATUS_DELETED = "deleted"

WRITERS = ("user", "model", "system")
ORIGINS = ("explicit", "learning", "consolidation", "imported", "undo")

#: Shapes of credentials a persona must never be asked to remember (contract section 6); the
#: same list the redactor masks, so the two can never disagree.
SECRET_PATTERNS = CREDENTIAL_SHAPES


class MemoryStoreError(Exception):
    """A memory operation was refused; the message says what happened and what to do."""


class InvalidKeyError(MemoryStoreError):
    """The key breaks the grammar or the length limit."""


class LimitError(MemoryStoreError):
    """A value, description, key count or the whole document is over its limit."""


class SecretValueError(MemoryStoreError):
    """The value looks like a credential; credentials belong in the keyring, not in memory."""


class VersionConflictError(MemoryStoreError):
    """The expected version is not the current one (``actual`` is "" when there is none)."""

    def __init__(self, key: str, expected: str, actual: str) -> None:
        self.key, self.expected, self.actual = key, expected, actual
        super().__init__(
            f"memory {key!r} changed: expected version {expected!r}, current is "
            f"{actual or 'none'!r}. Inspect it again and retry with the current version."
        )


class NotFoundError(MemoryStoreError):
    """The key has no record at all."""


class CorruptMemoryError(MemoryStoreError):
    """The stored document cannot be read; it is kept untouched and writes are refused."""


class LockTimeoutError(MemoryStoreError):
    """Another process held the memory lock for longer than the timeout."""


@dataclass(frozen=True)
class MemoryEntry:
    """One memory as callers see it. ``value`` is "" in index and search results."""

    key: str
    value: str
    description: str
    updated_at: float
    version: str = ""
    finding: str = ""

    def as_dict(self, with_value: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key, "description": self.description,
                             "updated_at": self.updated_at, "version": self.version}
        if with_value:
            d["value"] = self.value
        if self.finding:
            d["finding"] = self.finding
        return d


@dataclass(frozen=True)
class MemoryRevision:
    """One immutable revision; ``status`` is active, superseded or deleted (a tombstone)."""

    key: str
    value: str
    description: str
    version: str
    status: str
    writer: str
    origin: str
    updated_at: float
    session_id: str = ""
    finding: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "value": self.value, "description": self.description,
            "version": self.version, "status": self.status, "writer": self.writer,
            "origin": self.origin, "updated_at": self.updated_at,
            "session_id": self.session_id, "finding": self.finding,
        }

    @classmethod
    def from_dict(cls, key: str, d: Mapping[str, Any]) -> MemoryRevision:
        """Raises ``ValueError``/``KeyError``/``TypeError`` for a wrong shape, including a time
        no calendar holds (NaN, 1e300): every reader would otherwise trip over it later."""
        updated_at = d["updated_at"]
        if isinstance(updated_at, bool) or not isinstance(updated_at, (int, float)) or not (
                math.isfinite(updated_at) and abs(updated_at) < MAX_TIMESTAMP):
            raise ValueError(f"record {key!r} has an impossible time {updated_at!r}")
        return cls(
            key=key, value=str(d["value"]), description=str(d.get("description", "")),
            version=str(d["version"]), status=str(d["status"]), writer=str(d.get("writer", "user")),
            origin=str(d.get("origin", "explicit")), updated_at=float(updated_at),
            session_id=str(d.get("session_id", "")), finding=str(d.get("finding", "")),
        )


@dataclass(frozen=True)
class MemoryRecord:
    """The current revision plus history, oldest first; ``truncated`` when old ones were dropped."""

    current: MemoryRevision
    revisions: tuple[MemoryRevision, ...]
    truncated: bool = False

    @property
    def exists(self) -> bool:
        return self.current.status == STATUS_ACTIVE

    def as_dict(self) -> dict[str, Any]:
        return {"current": self.current.as_dict(), "revisions": [r.as_dict() for r in self.revisions],
                "truncated": self.truncated, "exists": self.exists}


def validate_key(key: str) -> None:
    """Raise :class:`InvalidKeyError` with a sentence when ``key`` breaks the grammar."""
    if not isinstance(key, str) or not KEY_RX.match(key):
        raise InvalidKeyError(
            f"{key!r} is not a valid memory key: use lowercase segments joined by '/', each "
            "starting with a-z followed by a-z, 0-9, '-' or '_' (for example 'pref/coffee')."
        )
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"memory key is {len(key)} bytes; keys are at most {MAX_KEY_BYTES} bytes.")


#: Name the credential shape found in a text, or "" when none (shared with the redactor).
secret_shape = credential_shape


def validate_value(value: str, description: str, key: str = "") -> None:
    """Raise when a value or description is too big, or it or the key (which is shown in
    every prompt's index) looks like a credential."""
    if not isinstance(value, str) or not isinstance(description, str):
        raise MemoryStoreError("memory values and descriptions must be text.")
    for what, text, cap in (("value", value, MAX_VALUE_BYTES), ("description", description, MAX_DESCRIPTION_BYTES)):
        n = len(text.encode("utf-8"))
        if n > cap:
            raise LimitError(f"the memory {what} is {n} bytes; the limit is {cap} bytes (64 KiB). Shorten it.")
    shape = secret_shape(value) or secret_shape(description) or secret_shape(key)
    if not shape and any(contains_known_secret(t) for t in (value, description, key)):
        shape = "one of your stored secrets (such as the model's API key)"  # echoed by the model
    if shape:
        raise SecretValueError(
            f"refused: this memory contains what looks like {shape}. Secrets belong in the keyring, "
            "not in memory."
        )


def derive_description(value: str) -> str:
    """The first non-empty line of the value, cut to 120 characters (the index hook)."""
    for line in value.splitlines():
        line = line.strip()
        if line:
            return line[:120]
    return ""


def injection_finding(*texts: str) -> str:
    """A sentence naming the first injection marker in the texts, or ""."""
    for t in texts:
        hit = scan_for_injection(t)
        if hit:
            return hit.describe()
    return ""


@dataclass
class _Rec:
    revisions: list[MemoryRevision]
    truncated: bool = False


@dataclass
class MemoryDocument:
    """The whole store of one persona as a value that knows its rules.

    ``seq`` counts every write ever made; versions are minted from it so a version is never
    reused even after undo, and the count doubles as a check that no write was lost.
    """

    records: dict[str, _Rec] = field(default_factory=dict)
    seq: int = 0
    _bound: int | None = field(default=None, repr=False, compare=False)

    def _size_bound(self) -> int:
        """An upper bound of ``len(self.encode())``, kept up to date by each append (so a write
        costs O(1) here, not a pass over 4096 keys)."""
        if self._bound is None:
            total = 64
            for key, rec in self.records.items():
                total += 2 * len(key.encode("utf-8")) + 64
                total += sum(_revision_size(rev) + 8 for rev in rec.revisions)
            self._bound = total
        return self._bound

    # -- (de)serialization -------------------------------------------------------------
    @classmethod
    def from_json_obj(cls, obj: Any) -> MemoryDocument:
        """Build from parsed JSON; raises :class:`CorruptMemoryError` on a wrong shape."""
        try:
            if not isinstance(obj, dict) or obj.get("format") != FORMAT:
                raise ValueError("unknown format")
            seq = int(obj["seq"])
            records: dict[str, _Rec] = {}
            for key, raw in dict(obj["records"]).items():
                revs = [MemoryRevision.from_dict(key, r) for r in raw["revisions"]]
                if not revs:
                    raise ValueError(f"record {key!r} has no revisions")
                records[str(key)] = _Rec(revs, bool(raw.get("truncated", False)))
            return cls(records, seq)
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptMemoryError(f"the memory document has an unexpected shape ({exc})") from exc

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "seq": self.seq,
            "records": {
                k: {"truncated": r.truncated,
                    "revisions": [{kk: vv for kk, vv in rev.as_dict().items() if kk != "key"} for rev in r.revisions]}
                for k, r in sorted(self.records.items())
            },
        }

    def encode(self) -> bytes:
        """The document as stored: compact UTF-8 JSON (its length is what the cap counts)."""
        return json.dumps(self.to_json_obj(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def fit(self, writer: str, *, may_refuse: bool = True) -> None:
        """Keep the document under its cap after a write, history included.

        Old revisions (never a key's current one) are dropped first, oldest first across all
        keys, and their records marked truncated; a forgotten value goes with them (forgetting
        frees space). The revision just before a live current one — what an undo brings back —
        goes last, and never to make room for the model. The model's writes must stay
        ``USER_RESERVE_BYTES`` below the cap; the user's may use all of it. A forget
        (``may_refuse=False``) is never refused: it only ever makes room.
        """
        limit = MAX_DOCUMENT_BYTES - (USER_RESERVE_BYTES if writer == "model" else 0)
        if self._size_bound() <= limit:
            return  # cheap and safe: encoding 8 MiB on every write would be slow
        size = len(self.encode())
        self._bound = size
        if size <= limit:
            return
        old = sorted((_tier(rec, i), _seq_of(rev.version), key, i) for key, rec in self.records.items()
                     for i, rev in enumerate(rec.revisions[:-1]))
        drop: dict[str, set[int]] = {}
        for tier, _, key, i in old:
            if tier and writer == "model":
                break  # the model may not take away the user's one-step undo
            if size <= limit:
                break
            drop.setdefault(key, set()).add(i)
            size -= _revision_size(self.records[key].revisions[i])
        kept = {key: (self.records[key].revisions, self.records[key].truncated) for key in drop}
        for key, idxs in drop.items():
            rec = self.records[key]
            rec.revisions = [r for i, r in enumerate(rec.revisions) if i not in idxs]
            rec.truncated = True
        size = len(self.encode())
        self._bound = size
        if size <= limit or not may_refuse:
            return
        for key, (revs, truncated) in kept.items():  # refused: drop nothing after all
            self.records[key].revisions, self.records[key].truncated = revs, truncated
        self._bound = None
        if writer == "model":
            raise LimitError(
                f"the learned memory is full ({size} bytes; the persona may use up to "
                f"{limit // (1024 * 1024)} MiB, the rest is kept for the user). Ask the user to "
                "forget some memories; nothing was saved.")
        raise LimitError(
            f"this write would make the memory file {size} bytes; the limit is 8 MiB. "
            "Forget some memories first (forgetting frees their space).")

    # -- reads -------------------------------------------------------------------------
    def _current(self, key: str) -> MemoryRevision | None:
        rec = self.records.get(key)
        return rec.revisions[-1] if rec else None

    def current_version(self, key: str) -> str:
        """The version of the current *active* revision, or "" when the key has no value."""
        cur = self._current(key)
        return cur.version if cur and cur.status == STATUS_ACTIVE else ""

    def recall(self, key: str) -> MemoryEntry | None:
        cur = self._current(key)
        if cur is None or cur.status != STATUS_ACTIVE:
            return None
        return _entry(cur, with_value=True)

    def inspect(self, key: str) -> MemoryRecord | None:
        rec = self.records.get(key)
        if rec is None:
            return None
        return MemoryRecord(rec.revisions[-1], tuple(rec.revisions), rec.truncated)

    def active(self) -> Iterable[MemoryRevision]:
        for key in sorted(self.records):
            cur = self.records[key].revisions[-1]
            if cur.status == STATUS_ACTIVE:
                yield cur

    def list(self, prefix: str = "") -> builtins.list[MemoryEntry]:
        return [_entry(r, True) for r in self.active() if r.key.startswith(prefix)]

    def index(self) -> builtins.list[MemoryEntry]:
        return [_entry(r, False) for r in self.active()]

    def active_count(self) -> int:
        return sum(1 for _ in self.active())

    # -- writes ------------------------------------------------------------------------
    def _check_expected(self, key: str, expected: str | None) -> None:
        if expected is None:
            return
        actual = self.current_version(key)
        if expected == ABSENT:
            if actual:
                raise VersionConflictError(key, expected, actual)
            return
        if expected != actual:
            raise VersionConflictError(key, expected, actual)

    def _append(self, rev: MemoryRevision) -> MemoryRecord:
        rec = self.records.get(rev.key)
        if self._bound is not None:  # +8 covers the previous revision's status word growing
            self._bound += _revision_size(rev) + 8 + (0 if rec else 2 * len(rev.key.encode("utf-8")) + 64)
        if rec is None:
            rec = self.records[rev.key] = _Rec([])
        if rec.revisions and rec.revisions[-1].status == STATUS_ACTIVE:
            rec.revisions[-1] = replace(rec.revisions[-1], status=STATUS_SUPERSEDED)
        rec.revisions.append(rev)
        if len(rec.revisions) > MAX_REVISIONS:
            del rec.revisions[: len(rec.revisions) - MAX_REVISIONS]
            rec.truncated = True
        return MemoryRecord(rec.revisions[-1], tuple(rec.revisions), rec.truncated)

    def _mint(self) -> str:
        self.seq += 1
        return f"r{self.seq}"

    def remember(
        self, key: str, value: str, description: str = "", *, expected: str | None = None,
        writer: str = "user", origin: str = "explicit", session_id: str = "", now: float = 0.0,
    ) -> MemoryRecord:
        """Store a value (last write wins, or CAS when ``expected`` is given)."""
        validate_key(key)
        validate_value(value, description, key)
        self._check_expected(key, expected)
        if not self.current_version(key) and self.active_count() >= MAX_KEYS:
            raise LimitError(f"this persona already has {MAX_KEYS} memories; forget some first.")
        finding = injection_finding(value, description)
        rev = MemoryRevision(key, value, description, self._mint(), STATUS_ACTIVE,
                             writer if writer in WRITERS else "user",
                             origin if origin in ORIGINS else "explicit", now, session_id, finding)
        return self._append_within_cap(rev, writer)

    def forget(self, key: str, expected: str | None = None, *, writer: str = "user",
               session_id: str = "", now: float = 0.0) -> MemoryRecord | None:
        """Write a tombstone. Unversioned forget of a missing key is a no-op (returns None)."""
        validate_key(key)
        self._check_expected(key, expected)
        cur = self._current(key)
        if cur is None or cur.status != STATUS_ACTIVE:
            return None
        rev = MemoryRevision(key, "", cur.description, self._mint(), STATUS_DELETED,
                             writer if writer in WRITERS else "user", "explicit", now, session_id)
        rec = self._append(rev)
        self.fit(writer, may_refuse=False)
        return self._record(key, rec)

    def undo(self, key: str, expected: str, *, writer: str = "user", session_id: str = "",
             now: float = 0.0) -> MemoryRecord:
        """Undo the latest revision with a compensating one; ``expected`` is required.

        Undoing a creation leaves a tombstone; undoing a forget or an update brings back the
        revision before it. History is never rewritten, so an undo can itself be undone.
        """
        validate_key(key)
        rec = self.records.get(key)
        if rec is None:
            raise NotFoundError(f"there is no memory {key!r} to undo.")
        if not expected:
            raise MemoryStoreError("undo needs the expected version (see 'memory inspect').")
        latest = rec.revisions[-1]
        if expected != latest.version:
            raise VersionConflictError(key, expected, latest.version)
        prev = rec.revisions[-2] if len(rec.revisions) >= 2 else None
        if prev is None and rec.truncated:
            raise MemoryStoreError(
                f"the earlier version of {key!r} was dropped to make room, so this change cannot "
                "be undone; forget the memory instead if you do not want it.")
        who = writer if writer in WRITERS else "user"
        if prev is None or prev.status == STATUS_DELETED:
            rev = MemoryRevision(key, "", latest.description, self._mint(), STATUS_DELETED, who,
                                 "undo", now, session_id)
        else:
            rev = MemoryRevision(key, prev.value, prev.description, self._mint(), STATUS_ACTIVE, who,
                                 "undo", now, session_id, prev.finding)
        return self._append_within_cap(rev, who)

    def _append_within_cap(self, rev: MemoryRevision, writer: str) -> MemoryRecord:
        """Append, then :meth:`fit`; a refused write leaves the document exactly as it was."""
        rec = self.records.get(rev.key)
        before = (list(rec.revisions), rec.truncated) if rec else None
        seq = self.seq - 1  # the version of ``rev`` was just minted
        out = self._append(rev)
        try:
            self.fit(writer)
        except LimitError:
            if before is None:
                del self.records[rev.key]
            else:
                self.records[rev.key].revisions, self.records[rev.key].truncated = before
            self.seq = seq
            self._bound = None
            raise
        return self._record(rev.key, out)

    def _record(self, key: str, fallback: MemoryRecord) -> MemoryRecord:
        """The record as it stands after :meth:`fit` (which may have dropped old revisions)."""
        rec = self.records.get(key)
        if rec is None:
            return fallback
        return MemoryRecord(rec.revisions[-1], tuple(rec.revisions), rec.truncated)


def _tier(rec: _Rec, i: int) -> int:
    """0 for ordinary history, 1 for the revision an undo of a live value would bring back."""
    return int(i == len(rec.revisions) - 2 and rec.revisions[-1].status == STATUS_ACTIVE)


def _seq_of(version: str) -> int:
    """The write number a version was minted from (``r12`` -> 12); unknown shapes sort first."""
    try:
        return int(version[1:])
    except ValueError:
        return 0


def _revision_size(rev: MemoryRevision) -> int:
    """About how many bytes a revision takes in the stored document (exact size is rechecked)."""
    d = {k: v for k, v in rev.as_dict().items() if k != "key"}
    return len(json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1


def _entry(rev: MemoryRevision, with_value: bool) -> MemoryEntry:
    return MemoryEntry(rev.key, rev.value if with_value else "",
                       rev.description or derive_description(rev.value), rev.updated_at,
                       rev.version, rev.finding)
