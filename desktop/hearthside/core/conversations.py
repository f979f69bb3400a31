"""Kept conversations, as values: the records of one conversation, its file format, its title,
what of it goes back to the model when it is continued, and its Markdown export.

Pure: no file is opened here (``adapters/conversation_store.py`` does that). Why a module of its
own: the same rules (what a line means, which version can be trusted, how a title is found, what
is left out to fit the model's context) are needed by the store, the service, the command line
and the chat window, and must not drift apart.

The file format (``docs/design.md`` "Conversation files"): UTF-8, one JSON object per line, each
with the format version ``v`` and the kind ``k``. The first line is the header (``k: "start"``,
with the conversation's id, persona and creation time); every later line is one record. A line
written by a newer Hearthside (``v`` above :data:`FORMAT_VERSION`) is never guessed at: the
conversation is reported as written by a newer version, kept read-only, and nothing is appended.
"""

from __future__ import annotations

import datetime as _dt
import enum
import json
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

#: The version this Hearthside writes; a line with a higher ``v`` was written by a newer one.
FORMAT_VERSION = 1

#: How long a title is when it comes from the first message (a rename may be as long as this too).
TITLE_CHARS = 60

#: What a conversation without any message yet is called.
UNTITLED = "New conversation"

#: A conversation id: ``YYYYMMDD-HHMMSS-`` and 8 hex digits. The date makes ids sort by time and
#: read well in a file list; the random part keeps two started in the same second apart. Nothing
#: else is accepted as an id, so an id can never name a path outside the conversations folder.
_ID_RX = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{8}$")


class ConversationError(ValueError):
    """A value that cannot be a conversation's (an id, a title); the message is one sentence."""


@dataclass(frozen=True, order=True)
class ConversationId:
    """A conversation's id (validated: see :func:`ConversationId.parse`)."""

    value: str

    def __post_init__(self) -> None:
        if not _ID_RX.match(self.value):
            raise ConversationError(f"{self.value[:80]!r} is not a conversation id (they look like "
                                    "20261201-171500-1a2b3c4d; see 'hearthside chats list PERSONA')")

    @classmethod
    def parse(cls, text: str) -> ConversationId:
        return cls(text.strip())

    @classmethod
    def new(cls, now: float) -> ConversationId:
        """A fresh id for a conversation started at ``now`` (seconds since the epoch, UTC)."""
        stamp = _dt.datetime.fromtimestamp(now, _dt.UTC).strftime("%Y%m%d-%H%M%S")
        return cls(f"{stamp}-{secrets.token_hex(4)}")

    def __str__(self) -> str:
        return self.value


class Kind(enum.StrEnum):
    """What one record of a conversation is."""

    #: what the person wrote
    USER = "user"
    #: the persona's final reply to one message
    ASSISTANT = "assistant"
    #: a tool call: ``tool`` is its name, ``detail`` its arguments in one line, ``text`` its
    #: result in one line, ``ok`` whether it succeeded
    TOOL = "tool"
    #: an approval asked: ``tool`` names the call, ``detail`` what was asked, ``ok`` the answer
    APPROVAL = "approval"
    #: a check-in alert opened as a chat: ``text`` is the alert
    ALERT = "alert"
    #: the person renamed the conversation: ``text`` is the new title
    RENAME = "rename"
    #: a note from Hearthside itself (the chat switched mode, a reply failed)
    NOTE = "note"


#: The kinds that count as messages of a conversation (everything shown in it but a rename).
MESSAGE_KINDS = frozenset({Kind.USER, Kind.ASSISTANT, Kind.TOOL, Kind.APPROVAL, Kind.ALERT, Kind.NOTE})


@dataclass(frozen=True)
class Record:
    """One line of a conversation after its header. ``at`` is seconds since the epoch (UTC)."""

    kind: Kind
    at: float
    text: str = ""
    tool: str = ""
    detail: str = ""
    ok: bool | None = None

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"v": FORMAT_VERSION, "k": self.kind.value, "t": round(self.at, 3)}
        if self.text:
            doc["text"] = self.text
        if self.tool:
            doc["tool"] = self.tool
        if self.detail:
            doc["detail"] = self.detail
        if self.ok is not None:
            doc["ok"] = self.ok
        return doc

    def with_text(self, change: Any) -> Record:
        """The same record with ``change`` (a str -> str function) applied to each of its texts:
        the store passes every stored text through the log's redaction this way."""
        return replace(self, text=change(self.text), tool=change(self.tool), detail=change(self.detail))


@dataclass(frozen=True)
class Header:
    """The first line of a conversation file."""

    id: ConversationId
    persona: str
    created: float
    version: int = FORMAT_VERSION

    def as_json(self) -> dict[str, Any]:
        return {"v": FORMAT_VERSION, "k": "start", "id": self.id.value, "persona": self.persona,
                "t": round(self.created, 3)}


@dataclass(frozen=True)
class Newer:
    """A line written by a newer Hearthside (its version), not interpreted."""

    version: int


@dataclass(frozen=True)
class Bad:
    """A line that is not a record (why, in words)."""

    why: str


Line = Header | Record | Newer | Bad


def dumps_line(item: Header | Record) -> bytes:
    """One line of the file, newline included. ``ensure_ascii`` keeps each line pure ASCII, so no
    stray byte of a cut line can join the next one into something else."""
    return (json.dumps(item.as_json(), ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def parse_line(raw: bytes | str) -> Line:
    """What one line is. Never raises: a line that cannot be read is :class:`Bad`."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return Bad("is not valid JSON")
    if not isinstance(doc, dict):
        return Bad("is not a JSON object")
    v = doc.get("v")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        return Bad("has no format version")
    if v > FORMAT_VERSION:
        return Newer(v)
    kind, at = doc.get("k"), doc.get("t")
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return Bad("has no time")
    if kind == "start":
        try:
            cid = ConversationId(str(doc.get("id", "")))
        except ConversationError:
            return Bad("has no valid conversation id")
        persona = doc.get("persona")
        if not isinstance(persona, str):
            return Bad("has no persona")
        return Header(cid, persona, float(at), v)
    try:
        k = Kind(str(kind))
    except ValueError:
        return Bad(f"has an unknown kind {str(kind)[:20]!r}")
    texts = {name: doc.get(name, "") for name in ("text", "tool", "detail")}
    if not all(isinstance(t, str) for t in texts.values()):
        return Bad("has a text that is not a string")
    ok = doc.get("ok")
    if ok is not None and not isinstance(ok, bool):
        return Bad("has an answer that is not true or false")
    return Record(k, float(at), texts["text"], texts["tool"], texts["detail"], ok)


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def title_from(text: str) -> str:
    """A conversation's title from its first message: the first non-empty line, shortened."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return one_line(first, TITLE_CHARS) or UNTITLED


@dataclass(frozen=True)
class ConversationMeta:
    """What a list of conversations shows, without the messages.

    ``read_only`` is set when the file was written by a newer Hearthside (nothing is appended to
    it) or cannot be read at all; ``problems`` are sentences saying what is wrong with the file
    (a line skipped, a damaged last line, a newer format), shown next to the conversation.
    """

    id: ConversationId
    persona: str
    title: str
    created: float
    updated: float
    messages: int
    read_only: bool = False
    problems: tuple[str, ...] = ()


@dataclass
class Fold:
    """A conversation's meta data folded line by line, so a list can read only what was
    appended since it last looked (the store keeps one per file, with the offset read up to).

    ``first`` is the title the first message gave; ``renamed`` the last rename ("" if none)."""

    header: Header | None = None
    first: str = ""
    renamed: str = ""
    updated: float = 0.0
    messages: int = 0
    lines: int = 0
    newer: int = 0
    skipped: list[int] = field(default_factory=list)

    def add(self, line: Line) -> None:
        self.lines += 1
        if isinstance(line, Header):
            if self.header is None and self.lines == 1:
                self.header = line
                self.updated = max(self.updated, line.created)
            else:
                self.skipped.append(self.lines)
        elif isinstance(line, Record):
            self.updated = max(self.updated, line.at)
            if line.kind is Kind.RENAME:
                self.renamed = one_line(line.text, TITLE_CHARS)
            elif line.kind in MESSAGE_KINDS:
                self.messages += 1
                if not self.first and line.kind in (Kind.USER, Kind.ALERT) and line.text.strip():
                    self.first = title_from(line.text)
        elif isinstance(line, Newer):
            self.newer = max(self.newer, line.version)
        else:
            self.skipped.append(self.lines)

    @property
    def title(self) -> str:
        return self.renamed or self.first or UNTITLED

    def problems(self, damaged_last: bool = False) -> tuple[str, ...]:
        """The file's problems in sentences (see :class:`ConversationMeta`)."""
        out: list[str] = []
        if self.newer:
            out.append(f"This conversation was written by a newer Hearthside (format {self.newer}); it is "
                       "shown as far as this version understands it and nothing is added to it.")
        if self.header is None:
            out.append("The conversation file has no valid first line; what could be read is shown.")
        if self.skipped:
            where = ", ".join(str(n) for n in self.skipped[:5]) + (" and more" if len(self.skipped) > 5 else "")
            out.append(f"{len(self.skipped)} damaged line{'s' if len(self.skipped) != 1 else ''} "
                       f"(line {where}) could not be read and {'were' if len(self.skipped) != 1 else 'was'} "
                       "skipped; the rest is kept.")
        if damaged_last:
            out.append("The last line was cut short (Hearthside stopped while writing it) and is lost; "
                       "the rest is kept.")
        return tuple(out)

    def meta(self, cid: ConversationId, persona: str, mtime: float, damaged_last: bool = False) -> ConversationMeta:
        """The meta data, with the folder's persona and file time where the header has none."""
        created = self.header.created if self.header else mtime
        return ConversationMeta(cid, persona, self.title, created, max(self.updated, created), self.messages,
                                bool(self.newer) or self.header is None, self.problems(damaged_last))


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines (without their newline) and the trailing bytes of a line not yet ended."""
    *lines, rest = data.split(b"\n")
    return lines, rest


@dataclass(frozen=True)
class Conversation:
    """A conversation as read: its meta data and its records, in order."""

    meta: ConversationMeta
    records: tuple[Record, ...]


def read_conversation(cid: ConversationId, persona: str, data: bytes, mtime: float) -> Conversation:
    """Parse a whole file's bytes: bad lines are skipped (and said), a last line without its
    newline that does not parse is the line a crash cut short (lost, and said)."""
    fold = Fold()
    records: list[Record] = []
    lines, rest = split_lines(data)
    damaged_last = False
    if rest.strip():
        last = parse_line(rest)
        if isinstance(last, Bad):
            damaged_last = True
        else:
            lines.append(rest)  # complete, only its newline is missing
    for raw in lines:
        if not raw.strip():
            continue
        line = parse_line(raw)
        fold.add(line)
        if isinstance(line, Record):
            records.append(line)
    return Conversation(fold.meta(cid, persona, mtime, damaged_last), tuple(records))


# --- continuing: what goes back to the model --------------------------------------------------

#: How much of a stored conversation is sent back to the model when it is continued, in
#: characters of message text, unless ``[conversations] context_chars`` says otherwise: about
#: 6,000 tokens, which leaves room for the system prompt and the reply in an 8k-token model.
DEFAULT_CONTEXT_CHARS = 24_000


@dataclass(frozen=True)
class Continuation:
    """What a continued conversation puts back into the model's history: ``messages`` in
    OpenAI form (oldest first), how many stored messages were ``left_out`` and ``note``, the one
    line that says so ("" when nothing was left out)."""

    messages: tuple[dict[str, str], ...]
    left_out: int
    note: str


def left_out_note(n: int) -> str:
    return (f"[{n} earlier message{'s' if n != 1 else ''} of this conversation "
            f"{'were' if n != 1 else 'was'} left out to fit the model's context]")


def _as_model_text(rec: Record) -> tuple[str, str] | None:
    """(role, text) of one record in the history the model gets, or None (not sent).

    Tool calls and approvals are told to the model as short lines in the assistant's turn: the
    original call ids are not kept, and a protocol ``tool`` message without its call is refused
    by most servers."""
    if rec.kind is Kind.USER:
        return "user", rec.text
    if rec.kind is Kind.ASSISTANT:
        return "assistant", rec.text
    if rec.kind is Kind.ALERT:
        return "assistant", f"(Check-in alert) {rec.text}"
    if rec.kind is Kind.TOOL:
        outcome = "ok" if rec.ok else "error"
        return "assistant", f"[used the tool {rec.tool}({rec.detail}): {outcome} — {rec.text}]"
    if rec.kind is Kind.APPROVAL:
        return "assistant", f"[asked to run {rec.tool}: {'allowed' if rec.ok else 'refused'} by the user]"
    return None


def select_for_context(records: Sequence[Record], budget_chars: int) -> Continuation:
    """As much of the conversation as fits ``budget_chars``, newest first, whole messages only.

    Messages are taken from the newest back while they fit; the first one that does not fit
    ends the selection (an older message never jumps a newer one, and no message is cut). What is
    left out is said in one line at the start, which counts against the budget too.
    Consecutive lines of the same role are joined, so the history alternates as servers expect.
    """
    sendable = [(rec, m) for rec in records if (m := _as_model_text(rec)) is not None]
    budget = max(0, budget_chars)
    taken: list[tuple[str, str]] = []
    used = 0
    for _rec, (role, text) in reversed(sendable):
        cost = len(text) + 2
        reserve = len(left_out_note(len(sendable))) + 2  # the note, if it is needed, must fit too
        if used + cost + (reserve if len(taken) + 1 < len(sendable) else 0) > budget:
            break
        taken.append((role, text))
        used += cost
    taken.reverse()
    left = len(sendable) - len(taken)
    note = left_out_note(left) if left else ""
    joined: list[dict[str, str]] = []
    items = ([("user", note)] if note else []) + taken
    for role, text in items:
        if joined and joined[-1]["role"] == role:
            joined[-1]["content"] += "\n\n" + text
        else:
            joined.append({"role": role, "content": text})
    return Continuation(tuple(joined), left, note)


# --- export ------------------------------------------------------------------------------------


def _when(at: float) -> str:
    return _dt.datetime.fromtimestamp(at, _dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _quoted(text: str) -> str:
    return "\n".join("> " + ln if ln else ">" for ln in text.splitlines()) or ">"


def to_markdown(conv: Conversation) -> str:
    """The conversation as a Markdown document: a heading per message with who and when, the
    message text as written (replies are Markdown already), tool calls and approvals as quoted
    one-liners."""
    meta = conv.meta
    out = [f"# {meta.title}", "",
           (f"Conversation with {meta.persona}, started {_when(meta.created)}, {meta.messages} messages "
           f"(id {meta.id})."), ""]
    out += [f"*{p}*\n" for p in meta.problems]
    for rec in conv.records:
        if rec.kind is Kind.USER:
            out += [f"## You — {_when(rec.at)}", "", rec.text, ""]
        elif rec.kind is Kind.ASSISTANT:
            out += [f"## {meta.persona} — {_when(rec.at)}", "", rec.text, ""]
        elif rec.kind is Kind.ALERT:
            out += [f"## Check-in alert from {meta.persona} — {_when(rec.at)}", "", rec.text, ""]
        elif rec.kind is Kind.TOOL:
            out += [_quoted(f"Tool {rec.tool}({rec.detail}) — {'ok' if rec.ok else 'error'}: {rec.text}"), ""]
        elif rec.kind is Kind.APPROVAL:
            out += [_quoted(f"{'Allowed' if rec.ok else 'Refused'}: {rec.tool} {rec.detail}".rstrip()), ""]
        elif rec.kind is Kind.NOTE:
            out += [_quoted(f"Note: {rec.text}"), ""]
        elif rec.kind is Kind.RENAME:
            out += [_quoted(f"Renamed to: {rec.text}"), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def meta_as_json(meta: ConversationMeta) -> dict[str, Any]:
    """The meta data as ``hearthside chats list --json`` prints it."""
    return {"id": meta.id.value, "persona": meta.persona, "title": meta.title,
            "created": _iso(meta.created), "updated": _iso(meta.updated), "messages": meta.messages,
            "read_only": meta.read_only, "problems": list(meta.problems)}


def _iso(at: float) -> str:
    return _dt.datetime.fromtimestamp(at, _dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def records_from(items: Iterable[Mapping[str, Any]]) -> list[Record]:
    """Records from JSON objects (tests and benchmarks build files this way); bad ones dropped."""
    out = []
    for doc in items:
        line = parse_line(json.dumps(dict(doc)))
        if isinstance(line, Record):
            out.append(line)
    return out
