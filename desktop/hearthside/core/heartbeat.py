"""Heartbeat rules (contract section 5), as pure functions the scheduler calls.

Whether a run is due (interval, pause, active hours in a named timezone, an effectively empty
checklist), what a reply means (the ``HEARTBEAT_OK`` / ``NO_REPLY`` acknowledgement, allowing
Markdown emphasis or HTML tags around it, and the 300-character rule), and the 24-hour
de-duplication of alerts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .schedule import DEFAULT_CATCH_UP_MINUTES, parse_catch_up, parse_days, parse_times

DEFAULT_INTERVAL_MINUTES = 30.0
#: The shortest check-in interval (contract section 5): 0 turns check-ins off, anything between
#: is refused (a 0.0001-minute interval once made 448 model requests in 9 s).
MIN_INTERVAL_MINUTES = 1.0


def usable_interval(value: object) -> float | None:
    """Minutes from a setting when usable: 0 (off) or a finite number of at least 1 minute.

    ``True`` is not a number of minutes (``float(True)`` would mean a check-in every minute).
    """
    if isinstance(value, bool):
        return None
    try:
        minutes = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    if minutes == 0 or (math.isfinite(minutes) and minutes >= MIN_INTERVAL_MINUTES):
        return minutes
    return None
#: How long one check-in may take in all (every model turn and tool call): without a limit a
#: stuck run held the persona's lock for up to 20 turns of 600 s each.
DEFAULT_TIMEOUT_MINUTES = 10.0
#: The shortest check-in limit a setting may ask for.
MIN_TIMEOUT_MINUTES = 1.0


def usable_timeout(value: object) -> float | None:
    """Minutes from ``heartbeat_timeout_minutes`` when usable: a finite number of at least
    :data:`MIN_TIMEOUT_MINUTES` (there is no "no limit")."""
    if isinstance(value, bool):
        return None
    try:
        minutes = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return minutes if math.isfinite(minutes) and minutes >= MIN_TIMEOUT_MINUTES else None


DEFAULT_PROMPT = (
    "Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing needs attention, "
    "reply HEARTBEAT_OK."
)
ACK_TOKENS = ("HEARTBEAT_OK", "NO_REPLY")
SILENT_REMAINDER_MAX = 300
DEDUP_WINDOW = timedelta(hours=24)

_HEADING = re.compile(r"^#{1,6}(\s|$)")
_EMPTY_ITEM = re.compile(r"^([-*+]|\d+[.)])(\s+\[[ xX]?\])?\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
#: A code-fence marker line: three or more backticks or tildes, maybe a language tag.
_FENCE = re.compile(r"^(`{3,}|~{3,})[\w+#.-]*$")


def checklist_effectively_empty(text: str | None) -> bool:
    """True when the checklist has nothing to do: only blank lines, headings, empty list items
    or checkboxes, HTML comments and code-fence marker lines (a missing file is ``None`` and
    counts as empty). A fence with text inside is not empty: the text is the checklist."""
    if text is None:
        return True
    body = _COMMENT.sub("", text)
    if "<!--" in body:  # an unclosed comment hides the rest of the file
        body = body.split("<!--", 1)[0]
    for line in body.splitlines():
        s = line.strip()
        if not s or _HEADING.match(s) or _EMPTY_ITEM.match(s) or _FENCE.match(s):
            continue
        return False
    return True


def parse_hhmm(value: str) -> int:
    """Minutes after midnight for ``HH:MM`` (``24:00`` allowed); ValueError with a sentence."""
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", (value or "").strip())
    if not m:
        raise ValueError(f"{value!r} is not a time of day; write it as HH:MM, e.g. 08:30.")
    h, mi = int(m.group(1)), int(m.group(2))
    if mi > 59 or h > 24 or (h == 24 and mi != 0):
        raise ValueError(f"{value!r} is not a time of day between 00:00 and 24:00.")
    return h * 60 + mi


def resolve_timezone(name: str | None) -> tzinfo | None:
    """A named zone (``Europe/Berlin``), or None for local time; ValueError for an unknown name."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"{name!r} is not a known timezone; use a name like Europe/Berlin.") from exc


def within_active_hours(now: datetime, start: str | None, end: str | None, tz: str | None = None) -> bool:
    """Is ``now`` (aware) inside ``start``-``end`` (start inclusive, end exclusive) in ``tz``?

    No hours configured means always active. ``start`` after ``end`` spans midnight; equal
    start and end means the whole day.
    """
    if not start and not end:
        return True
    s = parse_hhmm(start or "00:00")
    e = parse_hhmm(end or "24:00")
    zone = resolve_timezone(tz)
    local = now.astimezone(zone) if zone else now.astimezone()
    minute = local.hour * 60 + local.minute
    if s == e:
        return True
    if s < e:
        return s <= minute < e
    return minute >= s or minute < e


@dataclass(frozen=True)
class HeartbeatSettings:
    """A persona's heartbeat settings (``[personas.<name>]`` in settings.toml)."""

    interval_minutes: float = DEFAULT_INTERVAL_MINUTES
    active_start: str = ""
    active_end: str = ""
    timezone: str = ""
    paused: bool = False
    prompt: str = DEFAULT_PROMPT
    allow_mutating: bool = False
    timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES
    #: set times (minutes after midnight, sorted), the days they and interval check-ins fall on
    #: (0 = Monday; empty = every day) and how late a slept-through set time may still run
    at: tuple[int, ...] = ()
    days: frozenset[int] = frozenset()
    catch_up_minutes: float = DEFAULT_CATCH_UP_MINUTES

    @classmethod
    def from_mapping(cls, raw: object) -> HeartbeatSettings:
        d = raw if isinstance(raw, dict) else {}
        interval = usable_interval(d.get("heartbeat_interval_minutes", DEFAULT_INTERVAL_MINUTES))
        timeout = usable_timeout(d.get("heartbeat_timeout_minutes", DEFAULT_TIMEOUT_MINUTES))
        return cls(
            interval_minutes=DEFAULT_INTERVAL_MINUTES if interval is None else interval,
            active_start=str(d.get("active_start", "") or ""),
            active_end=str(d.get("active_end", "") or ""),
            timezone=str(d.get("timezone", "") or ""),
            paused=_flag(d.get("paused", False)),
            prompt=str(d.get("heartbeat_prompt", "") or DEFAULT_PROMPT),
            allow_mutating=_flag(d.get("heartbeat_allow_mutating", False)),
            timeout_minutes=DEFAULT_TIMEOUT_MINUTES if timeout is None else timeout,
            at=parse_times(d.get("heartbeat_at"))[0],
            days=parse_days(d.get("heartbeat_days"))[0],
            catch_up_minutes=parse_catch_up(d.get("heartbeat_catch_up_minutes"))[0],
        )


def schedule_key_problems(raw: object) -> dict[str, str]:
    """For each of ``heartbeat_at``, ``heartbeat_days`` and ``heartbeat_catch_up_minutes`` that
    is (partly) unusable, why. The usable part still applies: one typo never stops the rest."""
    d = raw if isinstance(raw, dict) else {}
    out: dict[str, str] = {}
    for key, parse in (("heartbeat_at", parse_times), ("heartbeat_days", parse_days),
                       ("heartbeat_catch_up_minutes", parse_catch_up)):
        if key in d:
            why = parse(d[key])[1]
            if why:
                out[key] = why
    return out


def _flag(value: object) -> bool:
    """A switch from settings. Only a real true (or "true"/"yes"/"on"/"1") turns it on: a
    quoted ``"false"`` must not grant unattended runs the tools that change things."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return value is True or (type(value) is int and value == 1)


def settings_problem(cfg: HeartbeatSettings) -> str:
    """What is wrong with the settings themselves ("" when nothing). Such a mistake skips every
    check-in, so the app says it where the user sees it rather than only in the log."""
    try:
        within_active_hours(utcnow(), cfg.active_start, cfg.active_end, cfg.timezone)
    except ValueError as exc:
        return f"active hours are misconfigured: {exc}"
    return ""


#: The skip reasons of a persona with nothing to check (the tray teaches how to write one).
NO_CHECKLIST = "no HEARTBEAT.md checklist"
EMPTY_CHECKLIST = "HEARTBEAT.md checklist is empty"
CHECKLIST_REASONS = frozenset({NO_CHECKLIST, EMPTY_CHECKLIST})


def skip_reason(cfg: HeartbeatSettings, now: datetime, checklist: str | None, *, set_time: bool = False) -> str:
    """Why a scheduled run should not call the model now, or "" when it should. A ``set_time``
    slot (``heartbeat_at``) is the user's explicit choice: active hours do not hold it back."""
    if cfg.interval_minutes <= 0 and not set_time:
        return "heartbeat is off (interval 0)"
    if cfg.paused:
        return "heartbeat is paused"
    problem = settings_problem(cfg)
    if problem:
        return problem
    if not set_time and not within_active_hours(now, cfg.active_start, cfg.active_end, cfg.timezone):
        return f"outside active hours {cfg.active_start or '00:00'}-{cfg.active_end or '24:00'}"
    if checklist is None:
        return NO_CHECKLIST
    if checklist_effectively_empty(checklist):
        return EMPTY_CHECKLIST
    return ""


# Markdown emphasis characters and HTML tags may wrap the token. The edges are peeled by hand,
# not by a regex: nested optional wrapper groups backtrack exponentially on a run of ``*``
# (a Markdown rule of 30 stars took seconds), and a reply is model output of any shape.
_WRAP_CHARS = frozenset("*_~`")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def _tag_before(text: str, end: int) -> int:
    """Start of an HTML tag ending exactly at ``end``, or -1."""
    if end == 0 or text[end - 1] != ">":
        return -1
    start = text.rfind("<", 0, end - 1)
    return start if start >= 0 and _TAG.fullmatch(text, start, end) else -1


def _skip_forward(text: str, i: int, *, emphasis_after_space: bool = True) -> int:
    """Skip whitespace, tags and emphasis from ``i``. Without ``emphasis_after_space``, emphasis
    only counts while it touches what came before (``**HEARTBEAT_OK** *later*`` keeps ``*later*``)."""
    gap = False
    while i < len(text):
        c = text[i]
        if c.isspace():
            i, gap = i + 1, True
        elif c in _WRAP_CHARS and (emphasis_after_space or not gap):
            i += 1
        elif c == "<" and (m := _TAG.match(text, i)):
            i, gap = m.end(), False
        else:
            break
    return i


def _skip_backward(text: str, j: int, *, emphasis_after_space: bool = True) -> int:
    """The mirror of :func:`_skip_forward`, from an exclusive end ``j``."""
    gap = False
    while j > 0:
        c = text[j - 1]
        if c.isspace():
            j, gap = j - 1, True
        elif c in _WRAP_CHARS and (emphasis_after_space or not gap):
            j -= 1
        elif (t := _tag_before(text, j)) >= 0:
            j, gap = t, False
        else:
            break
    return j


def _standalone(text: str, start: int, end: int) -> bool:
    """Does text[start:end] stand alone? ``HEARTBEAT_OKAY`` and ``MY_NO_REPLY`` are words, not
    the token; a ``_`` beside it is emphasis only when no letter or digit lies beyond it."""
    def word(i: int) -> bool:
        return 0 <= i < len(text) and text[i].isascii() and text[i].isalnum()
    before = word(start - 1) or (start >= 2 and text[start - 1] == "_" and word(start - 2))
    after = word(end) or (end + 1 < len(text) and text[end] == "_" and word(end + 1))
    return not before and not after


def _strip_leading_token(text: str) -> str | None:
    i = _skip_forward(text, 0)
    for token in ACK_TOKENS:
        if text.startswith(token, i) and _standalone(text, i, i + len(token)):
            j = _skip_forward(text, i + len(token), emphasis_after_space=False)
            if j < len(text) and text[j] in ".!":
                j += 1
            return text[j:].strip()
    return None


def _strip_trailing_token(text: str) -> str | None:
    j = _skip_backward(text, len(text))
    if j and text[j - 1] in ".!":
        j = _skip_backward(text, j - 1)
    for token in ACK_TOKENS:
        i = j - len(token)
        if i >= 0 and text.startswith(token, i) and _standalone(text, i, j):
            return text[: _skip_backward(text, i, emphasis_after_space=False)].strip()
    return None


@dataclass(frozen=True)
class ReplyVerdict:
    """``silent`` or an alert carrying ``text`` (the reply minus any acknowledgement)."""

    silent: bool
    text: str
    acknowledged: bool


def classify_reply(reply: str) -> ReplyVerdict:
    """Apply the acknowledgement rule to a heartbeat reply."""
    text = reply.strip()
    head = _strip_leading_token(text)
    rest = text if head is None else head
    tail = _strip_trailing_token(rest)  # a token at both edges leaves a clean alert body
    rest = rest if tail is None else tail
    if head is None and tail is None:
        if not text:
            return ReplyVerdict(True, "", False)  # nothing was said; nothing to tell the user
        return ReplyVerdict(False, text, False)
    if len(rest) <= SILENT_REMAINDER_MAX:
        return ReplyVerdict(True, rest, True)
    return ReplyVerdict(False, rest, True)


def normalize_alert(text: str) -> str:
    """The form compared for de-duplication: trimmed, whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


def is_duplicate(text: str, persona: str, history: Iterable[tuple[str, str, datetime]], now: datetime,
                 window: timedelta = DEDUP_WINDOW) -> bool:
    """Was the same alert notified for ``persona`` within ``window``? ``history`` yields
    (persona, text, time) of *notified* entries."""
    key = normalize_alert(text)
    for who, said, when in history:
        if who == persona and normalize_alert(said) == key and timedelta(0) <= now - when < window:
            return True
    return False


def utcnow() -> datetime:
    return datetime.now(UTC)


__all__ = [
    "ACK_TOKENS",
    "CHECKLIST_REASONS",
    "DEDUP_WINDOW",
    "DEFAULT_INTERVAL_MINUTES",
    "DEFAULT_PROMPT",
    "EMPTY_CHECKLIST",
    "NO_CHECKLIST",
    "SILENT_REMAINDER_MAX",
    "HeartbeatSettings",
    "ReplyVerdict",
    "checklist_effectively_empty",
    "classify_reply",
    "is_duplicate",
    "normalize_alert",
    "parse_hhmm",
    "resolve_timezone",
    "skip_reason",
    "within_active_hours",
]


def check_hours(start: str, end: str, overnight: bool = False, what: str = "active hours") -> str:
    """Why ``start``-``end`` cannot be saved ("" when it can). Both empty means all day. An end
    before the start is refused unless ``overnight`` says the hours run past midnight (stored as
    start after end, which :func:`within_active_hours` reads as spanning midnight)."""
    if not start and not end:
        return ""
    if not start or not end:
        return f"give both a start and an end for the {what}, or leave both empty for all day."
    try:
        s, e = parse_hhmm(start), parse_hhmm(end)
    except ValueError as exc:
        return str(exc)
    if s == e:
        return f"the {what} start and end at the same time; leave both empty for all day."
    if e < s and not overnight:
        return (f"the end {end} is before the start {start}; tick \"past midnight\" if the "
                f"{what} run into the next day.")
    if e > s and overnight:
        return f"the end {end} is after the start {start}, so the {what} do not run past midnight."
    return ""


def check_interval(value: object) -> str:
    """Why ``value`` is not a check-in interval in minutes ("" when it is): a number, 0 for off,
    otherwise at least 1 (contract section 5)."""
    if isinstance(value, bool):
        return "the check-in interval is a number of minutes, not a switch."
    try:
        minutes = float(str(value).strip())
    except ValueError:
        return f"{str(value).strip()!r} is not a number of minutes; write e.g. 30 (0 turns check-ins off)."
    if not math.isfinite(minutes):
        return "the check-in interval must be a finite number of minutes."
    if minutes < 0:
        return "the check-in interval cannot be negative; 0 turns check-ins off."
    if 0 < minutes < 1:
        return "the check-in interval is at least 1 minute (or 0 to turn check-ins off)."
    return ""


def check_timezone(name: str) -> str:
    """Why ``name`` is not a timezone ("" for a known one, or empty for local time)."""
    try:
        resolve_timezone(name.strip() or None)
    except ValueError as exc:
        return str(exc)
    return ""
