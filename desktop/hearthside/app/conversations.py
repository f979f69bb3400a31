"""Kept conversations for the chat window, the command line and the settings: list, read,
record, continue, rename, delete (with undo), search, export and retention.

One service, so the window's sidebar and ``hearthside chats`` behave the same. Every method may
be called from any thread but does file I/O: a window calls it off the Qt thread (through the
bridge). Every failure a person can cause is a :class:`~hearthside.core.errors.ServiceError`
whose ``sentence`` is for showing and whose ``kind`` is for deciding (NOT_FOUND: no such
conversation or persona; INVALID: a bad id, title, file or export target; TIMED_OUT: another
process held the conversation too long).

Search is BM25 (``core/memory/bm25.py``'s tokenizer and constants) over an index kept in memory,
one document per conversation: built on the first search of a persona, warm after it, and
brought up to date on each append by reading only the bytes appended since (so another process's
appends are found too). Why not SQLite FTS5: an FTS index is a second copy of every message on
disk, which deleting, retention and the no-copy guarantee would then have to chase; this index
is rebuilt from the conversation files in well under a second and never written anywhere.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..adapters.conversation_store import ConversationStore, Unusable
from ..core.conversations import (
    DEFAULT_CONTEXT_CHARS,
    TITLE_CHARS,
    Continuation,
    Conversation,
    ConversationError,
    ConversationId,
    ConversationMeta,
    Header,
    Kind,
    Record,
    one_line,
    parse_line,
    select_for_context,
    to_markdown,
)
from ..core.errors import ErrorKind, ServiceError
from ..core.memory.bm25 import K1, B, tokenize
from ..core.redact import redact

if TYPE_CHECKING:
    from ..core.agent import ToolEvent
    from ..core.writeguard import WriteGuard
    from .paths import AppPaths
    from .settings import SettingsStore

log = logging.getLogger(__name__)

#: How long a deleted conversation can be brought back with :meth:`ConversationService.undo_delete`.
UNDO_SECONDS = 10.0

#: The retention choices the settings offer (0: keep forever, the default).
KEEP_DAYS_CHOICES = (0, 30, 90, 365)

#: How often retention runs again in a long-running process.
RETENTION_EVERY_S = 24 * 3600.0

#: How many results a search gives at most.
MAX_HITS = 50


@dataclass(frozen=True)
class ConversationPersona:
    """A persona that has kept conversations; ``removed`` when no persona of that name exists
    any more (its conversations are kept and listed under the old name until deleted)."""

    name: str
    conversations: int
    removed: bool


@dataclass(frozen=True)
class SearchHit:
    """One conversation that matches a search, best first; ``snippet`` is the matching text of
    its best message, on one line."""

    meta: ConversationMeta
    score: float
    snippet: str


@dataclass(frozen=True)
class Deleted:
    """A conversation moved to the trash: ``undo_delete(id)`` brings it back until ``until``."""

    id: ConversationId
    persona: str
    until: float


class PersonaNames(Protocol):
    def __call__(self) -> Iterable[str]: ...


@dataclass
class _Doc:
    terms: Counter[str] = field(default_factory=Counter)
    length: int = 0
    cursor: tuple[int, int, int] = (0, 0, 0)  # the store's tail cursor the terms were read up to


class _SearchIndex:
    """BM25 over one persona's conversations (document = conversation), updated per file."""

    def __init__(self) -> None:
        self.docs: dict[str, _Doc] = {}
        self.postings: dict[str, dict[str, int]] = {}
        self.total = 0

    def set_doc(self, cid: str, texts: Iterable[str], cursor: tuple[int, int, int], reset: bool) -> None:
        if reset:
            self.drop(cid)
        doc = self.docs.setdefault(cid, _Doc())
        toks = tokenize("\n".join(texts))
        counts = Counter(toks)
        doc.terms.update(counts)
        doc.length += len(toks)
        self.total += len(toks)
        terms = doc.terms
        for term in counts:
            self.postings.setdefault(term, {})[cid] = terms[term]
        doc.cursor = cursor

    def drop(self, cid: str) -> None:
        doc = self.docs.pop(cid, None)
        if doc is None:
            return
        self.total -= doc.length
        for term in doc.terms:
            plist = self.postings.get(term)
            if plist is not None:
                plist.pop(cid, None)
                if not plist:
                    del self.postings[term]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        terms = set(tokenize(query))
        n = len(self.docs)
        if not terms or not n:
            return []
        avgdl = self.total / n or 1.0
        scores: dict[str, float] = {}
        for term in terms:
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log((n - len(plist) + 0.5) / (len(plist) + 0.5) + 1.0)
            for cid, tf in plist.items():
                norm = K1 * (1 - B + B * self.docs[cid].length / avgdl)
                scores[cid] = scores.get(cid, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda it: (-it[1], it[0]))
        return ranked[:k]


def _record_texts(rec: Record) -> list[str]:
    return [t for t in (rec.text, rec.tool, rec.detail) if t]


class Recorder:
    """Appends one conversation's records as they happen. The file is created with the first
    record, so a chat opened and closed without a word leaves no empty conversation behind.

    Recording never stops a chat: a record that cannot be kept is logged and its sentence kept
    in :attr:`problem` (the window or the CLI shows it once). A conversation deleted while it is
    being recorded goes on as a new conversation (a new :attr:`id`)."""

    def __init__(self, service: ConversationService, persona: str, cid: ConversationId | None = None) -> None:
        self.service = service
        self.persona = persona
        self.continued = cid is not None
        self.id = cid or ConversationId.new(service.clock())
        self.problem = ""
        self.written = cid is not None  # a continued conversation's file exists already
        self._lock = threading.Lock()

    def add(self, kind: Kind, text: str = "", tool: str = "", detail: str = "", ok: bool | None = None) -> None:
        """Append one record now (its texts redacted like the log's)."""
        rec = Record(kind, self.service.clock(), text, tool, detail, ok)
        with self._lock:
            try:
                self._append(rec)
            except (ServiceError, OSError) as exc:
                self.problem = f"This conversation could not be kept: {exc}"
                log.warning("conversation %s of %s: record not kept: %s", self.id, self.persona, exc)

    def _append(self, rec: Record) -> None:
        header = None if self.written else Header(self.id, self.persona, rec.at)
        try:
            self.service.append(self.persona, self.id, [rec], header)
        except ServiceError as exc:
            if exc.kind is not ErrorKind.NOT_FOUND:
                raise
            self.id = ConversationId.new(self.service.clock())  # deleted under us: a new one
            self.continued = False
            self.service.append(self.persona, self.id, [rec], Header(self.id, self.persona, rec.at))
        self.written = True

    # what the chat records, by name
    def user(self, text: str) -> None:
        self.add(Kind.USER, text)

    def reply(self, text: str) -> None:
        self.add(Kind.ASSISTANT, text)

    def alert(self, text: str) -> None:
        self.add(Kind.ALERT, text)

    def note(self, text: str) -> None:
        self.add(Kind.NOTE, text)

    def tool(self, ev: ToolEvent) -> None:
        """A tool call with its one-line result (the result is redacted already by the agent)."""
        from .chat import short_arguments

        ok = not ev.result.is_error
        self.add(Kind.TOOL, one_line(ev.result.content or ("ok" if ok else "error")), ev.call.name,
                 short_arguments(ev.call.arguments), ok and ev.ran)

    def approval(self, tool: str, allowed: bool, detail: str = "") -> None:
        self.add(Kind.APPROVAL, "", tool, one_line(detail, 1000), allowed)


class ConversationService:
    """Every persona's kept conversations (``$XDG_DATA_HOME/hearthside/conversations``)."""

    def __init__(self, paths: AppPaths, settings: SettingsStore, persona_names: PersonaNames | None = None,
                 clock: Callable[[], float] = time.time,
                 write_guard: Callable[[], WriteGuard] | None = None) -> None:
        self.paths = paths
        #: the places an export never goes (the soul, persona folders, Hearthside's own folders)
        self.write_guard = write_guard
        self.settings = settings
        self.clock = clock
        self.store = ConversationStore(paths.data_dir / "conversations")
        self._persona_names = persona_names
        self._search: dict[str, _SearchIndex] = {}
        self._search_lock = threading.RLock()
        self._maintained = 0.0

    @property
    def root(self) -> Path:
        """The conversations folder (in the data dir, never a persona folder)."""
        return self.store.root

    # --- ids ------------------------------------------------------------------------------------
    def locate(self, cid: str | ConversationId) -> tuple[str, ConversationId]:
        """(persona, id) of conversation ``cid``, whichever persona's it is. Raises INVALID for
        text that is not an id, NOT_FOUND when no persona has it."""
        try:
            ident = cid if isinstance(cid, ConversationId) else ConversationId.parse(cid)
        except ConversationError as exc:
            raise ServiceError(str(exc), ErrorKind.INVALID) from None
        persona = self.store.locate(ident)
        if persona is None:
            raise ServiceError(f"There is no conversation {ident}.", ErrorKind.NOT_FOUND,
                               " (see 'hearthside chats list PERSONA')")
        return persona, ident

    # --- listing and reading ----------------------------------------------------------------------
    def list(self, persona: str) -> list[ConversationMeta]:
        """The persona's conversations, newest (last changed) first; [] when it has none. A file
        that cannot be read is listed read-only with its problem, so it can be deleted. INVALID
        for a name that cannot be a persona's."""
        self.maintain()
        return self.store.list(persona)

    def last(self, persona: str) -> ConversationMeta | None:
        """The persona's most recently changed conversation that can be continued, if any."""
        return next((m for m in self.list(persona) if not m.read_only), None)

    def personas(self) -> builtins.list[ConversationPersona]:
        """Every persona with kept conversations, removed personas included (sorted by name)."""
        known = set(self._persona_names()) if self._persona_names is not None else None
        out = []
        for name in self.store.personas():
            count = len(self.store.list(name))
            out.append(ConversationPersona(name, count, known is not None and name not in known))
        return out

    def meta(self, cid: str | ConversationId) -> ConversationMeta:
        persona, ident = self.locate(cid)
        return self.store.meta(persona, ident)

    def open(self, cid: str | ConversationId) -> Conversation:
        """The whole conversation: its meta data (with any problem of its file) and records.
        NOT_FOUND / INVALID (not an id; the file is a FIFO, a link, too big)."""
        persona, ident = self.locate(cid)
        return self.store.read(persona, ident)

    def continuation(self, cid: str | ConversationId, budget_chars: int | None = None) -> Continuation:
        """What continuing the conversation sends the model (see ``select_for_context``)."""
        conv = self.open(cid)
        return select_for_context(conv.records, self.context_chars() if budget_chars is None else budget_chars)

    # --- writing --------------------------------------------------------------------------------
    def recorder(self, persona: str, cid: str | ConversationId | None = None) -> Recorder:
        """A recorder for a new conversation of ``persona`` (no ``cid``) or for continuing
        ``cid``. Continuing raises NOT_FOUND (no such conversation), INVALID (it is another
        persona's, or read-only: written by a newer Hearthside or unreadable)."""
        if cid is None:
            self.store.persona_dir(persona)  # a bad name is refused now, not at the first message
            return Recorder(self, persona)
        owner, ident = self.locate(cid)
        if owner != persona:
            raise ServiceError(f"The conversation {ident} is {owner}'s, not {persona}'s.", ErrorKind.INVALID)
        meta = self.store.meta(owner, ident)
        if meta.read_only:
            raise ServiceError(f"The conversation {ident} cannot be continued: {' '.join(meta.problems)}",
                               ErrorKind.INVALID)
        return Recorder(self, persona, ident)

    def append(self, persona: str, cid: ConversationId, records: builtins.list[Record],
               header: Header | None = None) -> None:
        """Append records (the store redacts them); a warm search index reads them at once."""
        self.store.append(persona, cid, records, header)
        with self._search_lock:
            if persona in self._search:
                self._refresh_doc(self._search[persona], persona, cid)

    def rename(self, cid: str | ConversationId, title: str) -> ConversationMeta:
        """Give the conversation a title (kept as a record: the file is only ever appended to).
        INVALID for an empty title or a read-only conversation."""
        clean = one_line(redact(title), TITLE_CHARS)
        if not clean:
            raise ServiceError("A conversation's title cannot be empty.", ErrorKind.INVALID)
        persona, ident = self.locate(cid)
        if self.store.meta(persona, ident).read_only:
            raise ServiceError(f"The conversation {ident} is read-only and cannot be renamed.", ErrorKind.INVALID)
        self.append(persona, ident, [Record(Kind.RENAME, self.clock(), clean)])
        return self.store.meta(persona, ident)

    # --- deleting -------------------------------------------------------------------------------
    def delete(self, cid: str | ConversationId) -> Deleted:
        """Move the conversation to the trash; :meth:`undo_delete` brings it back for
        :data:`UNDO_SECONDS`, then it is removed for good. Learned memory is not touched."""
        persona, ident = self.locate(cid)
        now = self.clock()
        self.store.trash(persona, ident, now)
        self._forget_doc(persona, ident)
        self.store.purge_trash(now - UNDO_SECONDS)
        return Deleted(ident, persona, now + UNDO_SECONDS)

    def undo_delete(self, cid: str | ConversationId) -> ConversationMeta:
        """Bring a deleted conversation back. NOT_FOUND when it was not deleted, or too long ago."""
        try:
            ident = cid if isinstance(cid, ConversationId) else ConversationId.parse(cid)
        except ConversationError as exc:
            raise ServiceError(str(exc), ErrorKind.INVALID) from None
        now = self.clock()
        for persona, src, at in self.store.trashed(ident):
            if at + UNDO_SECONDS >= now:
                self.store.restore(persona, ident, src)
                return self.store.meta(persona, ident)
        self.store.purge_trash(now - UNDO_SECONDS)
        raise ServiceError(f"The conversation {ident} cannot be brought back: it was not deleted in the last "
                           f"{UNDO_SECONDS:.0f} seconds.", ErrorKind.NOT_FOUND)

    def forget_deleted(self, cid: str | ConversationId) -> int:
        """Remove the trashed copies of a deleted conversation now (no undo any more): the
        command line's delete, which has no *Undo* to offer. Returns how many were removed."""
        try:
            ident = cid if isinstance(cid, ConversationId) else ConversationId.parse(cid)
        except ConversationError as exc:
            raise ServiceError(str(exc), ErrorKind.INVALID) from None
        found = self.store.trashed(ident)
        for _persona, path, _at in found:
            path.unlink(missing_ok=True)
        return len(found)

    def delete_all(self, persona: str) -> builtins.list[Deleted]:
        """Delete every conversation of ``persona`` (each can be brought back in the undo window,
        as after :meth:`delete`). Works for a removed persona too. Learned memory is not touched."""
        out = []
        for meta in self.store.list(persona):
            self.store.trash(persona, meta.id, self.clock())
            out.append(Deleted(meta.id, persona, self.clock() + UNDO_SECONDS))
        with self._search_lock:
            self._search.pop(persona, None)
        return out

    # --- search ---------------------------------------------------------------------------------
    def search(self, persona: str, query: str, limit: int = 20) -> builtins.list[SearchHit]:
        """The persona's conversations that match ``query`` (BM25), best first, at most ``limit``
        (max 50). The first search of a persona builds its index; later ones are warm."""
        k = max(1, min(limit, MAX_HITS))
        ids = {cid.value: cid for cid in self.store.ids(persona)}
        with self._search_lock:
            index = self._search.get(persona)
            if index is None:
                index = self._search[persona] = _SearchIndex()
            for gone in set(index.docs) - set(ids):
                index.drop(gone)
            for cid in ids.values():
                self._refresh_doc(index, persona, cid)
            ranked = index.search(query, k)
        terms = set(tokenize(query))
        hits = []
        for key, score in ranked:
            try:
                meta = self.store.meta(persona, ids[key])
            except ServiceError:
                continue  # deleted since
            hits.append(SearchHit(meta, score, self._snippet(persona, ids[key], terms)))
        return hits

    def prepare_search(self, persona: str) -> int:
        """Build (or bring up to date) the persona's search index now, so that the first search
        is warm: a window calls this off the Qt thread when it shows the persona's list (the
        first build reads every message: about 3 s for 200,000). Returns how many
        conversations are indexed."""
        self.search(persona, "", 1)
        with self._search_lock:
            index = self._search.get(persona)
            return len(index.docs) if index is not None else 0

    def _refresh_doc(self, index: _SearchIndex, persona: str, cid: ConversationId) -> None:
        doc = index.docs.get(cid.value)
        records, cursor, reset = self.store.tail(persona, cid, doc.cursor if doc else None)
        if records or reset or doc is None:
            texts = [t for rec in records for t in _record_texts(rec)]
            index.set_doc(cid.value, texts, cursor, reset or doc is None)

    def _forget_doc(self, persona: str, cid: ConversationId) -> None:
        with self._search_lock:
            index = self._search.get(persona)
            if index is not None:
                index.drop(cid.value)

    def _snippet(self, persona: str, cid: ConversationId, terms: set[str]) -> str:
        """The text of the conversation's message with the most query terms, around the first.
        Lines are picked on their raw bytes first (cheap), then only candidates are parsed."""
        try:
            data = self.store.raw(persona, cid)
        except (ServiceError, OSError):
            return ""
        needles = [t.encode() for t in terms]
        best, best_n = "", 0
        for raw in data.splitlines()[1:]:
            lowered = raw.lower()
            if sum(n in lowered for n in needles) <= best_n:
                continue
            line = parse_line(raw)
            if not isinstance(line, Record):
                continue
            for text in _record_texts(line):
                n = len(terms & set(tokenize(text)))
                if n > best_n:
                    best, best_n = text, n
        if not best:
            return ""
        flat = " ".join(best.split())
        low = flat.lower()
        pos = min((p for t in terms if (p := low.find(t)) >= 0), default=0)
        start = max(0, pos - 40)
        return ("…" if start else "") + one_line(flat[start:], 120)

    # --- export ---------------------------------------------------------------------------------
    def export(self, cid: str | ConversationId, target: str | os.PathLike[str], overwrite: bool = False) -> Path:
        """Write the conversation as Markdown to ``target`` (a file the person chose). An
        existing file is refused (INVALID) unless ``overwrite``; a target that is not a regular
        file (a folder, FIFO, device) is always refused. Returns the path written."""
        conv = self.open(cid)
        path = Path(os.path.expanduser(os.fspath(target))).absolute()
        self._refuse_protected(path)
        text = to_markdown(conv)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise ServiceError(f"{path} is not a regular file; the conversation was not exported.",
                                   ErrorKind.INVALID)
            if not overwrite:
                raise ServiceError(f"{path} exists already; the conversation was not exported.", ErrorKind.INVALID,
                                   " (choose another file, or add --force to replace it)")
        if not path.parent.is_dir():
            raise ServiceError(f"The folder {path.parent} does not exist; the conversation was not exported.",
                               ErrorKind.INVALID)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise ServiceError(f"{path} exists already; the conversation was not exported.", ErrorKind.INVALID,
                               " (choose another file, or add --force to replace it)") from None
        except OSError as exc:
            raise ServiceError(f"{path} could not be written: {exc.strerror or exc}.", ErrorKind.INVALID) from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def _refuse_protected(self, path: Path) -> None:
        """An export never lands in the soul, a persona folder or Hearthside's own folders
        (a link counts as where it leads): INVALID with where it would have gone."""
        guard = self.write_guard() if self.write_guard is not None else None
        if guard is None:
            return
        real = os.path.realpath(path)
        for cand in (real, os.path.join(os.path.realpath(path.parent), path.name)):
            for root in guard.roots:
                base = root.path.rstrip(os.sep)
                if cand == base or cand.startswith(base + os.sep):
                    raise ServiceError(f"{path} is inside {root.what} ({root.path}), where Hearthside writes no "
                                       "export; the conversation was not exported.", ErrorKind.INVALID,
                                       " (choose a file elsewhere)")

    # --- settings and retention -----------------------------------------------------------------
    def keep_days(self) -> int:
        """How many days conversations are kept (``[conversations] keep_days``; 0: forever)."""
        value = self.settings.get("conversations.keep_days", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    def set_keep_days(self, days: int) -> None:
        """Change retention (one of :data:`KEEP_DAYS_CHOICES`) and apply it now. INVALID otherwise."""
        if days not in KEEP_DAYS_CHOICES:
            raise ServiceError(f"Conversations can be kept forever (0) or for 30, 90 or 365 days, not {days}.",
                               ErrorKind.INVALID)
        self.settings.set("conversations.keep_days", days or None)
        self.apply_retention()

    def context_chars(self) -> int:
        """How much of a conversation continuing sends back (``[conversations] context_chars``)."""
        value = self.settings.get("conversations.context_chars", DEFAULT_CONTEXT_CHARS)
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return value if ok else DEFAULT_CONTEXT_CHARS

    def apply_retention(self) -> int:
        """Remove conversations last changed more than ``keep_days`` ago (and trash past its undo
        window); returns how many conversations were removed."""
        now = self.clock()
        self._maintained = now
        self.store.purge_trash(now - UNDO_SECONDS)
        days = self.keep_days()
        if not days:
            return 0
        cutoff = now - days * 86400
        removed = 0
        for persona in self.store.personas():
            for meta in self.store.list(persona):
                if meta.updated < cutoff:
                    self.store.remove(persona, meta.id)
                    self._forget_doc(persona, meta.id)
                    removed += 1
        if removed:
            log.info("retention: removed %d conversations older than %d days", removed, days)
        return removed

    async def tidy_daily(self) -> None:
        """Apply retention now and then once a day, until cancelled (the tray runs this on its
        runtime loop from start to quit; the file work runs off the loop)."""
        while True:
            await asyncio.to_thread(self.maintain)
            await asyncio.sleep(RETENTION_EVERY_S)

    def maintain(self) -> None:
        """Apply retention if it has not run in this process for a day (at start, then daily)."""
        if self.clock() - self._maintained >= RETENTION_EVERY_S:
            try:
                self.apply_retention()
            except (ServiceError, OSError) as exc:
                log.warning("conversation retention did not run: %s", exc)


def meta_rows(metas: Iterable[ConversationMeta]) -> builtins.list[dict[str, Any]]:
    from ..core.conversations import meta_as_json

    return [meta_as_json(m) for m in metas]


__all__ = ["KEEP_DAYS_CHOICES", "UNDO_SECONDS", "ConversationPersona", "ConversationService", "Deleted",
           "Recorder", "SearchHit", "Unusable"]
