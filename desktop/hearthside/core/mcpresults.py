"""Keeps an MCP tool result within bounds before it goes to the model.

An MCP server decides how much it answers: the filesystem server's read of a 3 MB file came
back as one 4,000,136-character result and went to the model in one request (slow, costly,
and past most context windows). So every result is cut to a budget of characters and of
content items, with a notice that says how much was left out, so the model knows it saw a
part and can ask for less (a range, a page) instead of trusting a truncated answer.

Images, audio and binary blobs are described, never inlined: Hearthside's model client sends
text only (``adapters/model_client.py`` has no image parts), and a base64 blob as text is
megabytes of noise to a model. The description says what it was and how big.

Pure: the adapter turns the SDK's content blocks into :class:`Part` values first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The default budget of one tool result, in characters (a per-server ``max_result_chars``).
DEFAULT_MAX_RESULT_CHARS = 50_000
#: The range a server's ``max_result_chars`` may take.
MIN_RESULT_CHARS = 1_000
MAX_RESULT_CHARS = 1_000_000
#: At most this many content items of one result reach the model.
MAX_RESULT_ITEMS = 100


@dataclass(frozen=True)
class Part:
    """One content item of a result as text: its text, or a description of what it was."""

    text: str


def human_size(n: int) -> str:
    """``2.1 MB``, ``512 bytes``: decimal units, as file managers show them."""
    if n < 1000:
        return f"{n} byte" + ("" if n == 1 else "s")
    size = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            return f"{size:.1f} {unit}"
    return f"{n} bytes"  # pragma: no cover - the loop always returns


def base64_size(data: str) -> int:
    """The decoded size of base64 ``data`` (without decoding it: it may be megabytes)."""
    n = len(data.strip())
    pad = len(data) - len(data.rstrip("=")) if data.endswith("=") else 0
    return max(0, n * 3 // 4 - pad)


def describe_binary(kind: str, mime: str, data: Any, where: str = "") -> Part:
    """``[an image, image/png, 2.1 MB, not shown]`` for a blob the model cannot be sent."""
    size = base64_size(data) if isinstance(data, str) else 0
    bits = [kind, mime or "unknown type"]
    if where:
        bits.append(where)
    bits.append(human_size(size))
    return Part("[" + ", ".join(bits) + ", not shown]")


def bounded_text(parts: Iterable[Part], max_chars: int = DEFAULT_MAX_RESULT_CHARS,
                 max_items: int = MAX_RESULT_ITEMS) -> str:
    """The parts joined by line breaks, at most ``max_chars`` characters of them and at most
    ``max_items`` items, then one notice saying how many characters and items were left out."""
    kept: list[str] = []
    used = 0
    cut_chars = 0
    cut_items = 0
    for i, part in enumerate(parts):
        text = part.text if i == 0 else "\n" + part.text
        if i >= max_items:
            cut_items += 1
            cut_chars += len(text)
            continue
        room = max_chars - used
        if len(text) <= room:
            kept.append(text)
            used += len(text)
            continue
        if room > 0:
            kept.append(text[:room])
            used += room
        cut_chars += len(text) - max(room, 0)
    if not cut_chars and not cut_items:
        return "".join(kept)
    what = [f"{cut_chars:,} more characters"] if cut_chars else []
    if cut_items:
        what.append(f"{cut_items:,} more item" + ("" if cut_items == 1 else "s"))
    return ("".join(kept) + f"\n[cut: {' and '.join(what)} of this result were left out; "
            f"this server's results are capped at {max_chars:,} characters and {max_items:,} items]")


def result_cap_setting(raw: Any, server: str) -> tuple[int, str]:
    """A server's ``max_result_chars`` from ``mcp.json``: ``(value, "")`` when usable, else the
    default and one sentence naming the setting (a bad value never breaks the server)."""
    if raw is None:
        return DEFAULT_MAX_RESULT_CHARS, ""
    if isinstance(raw, int) and not isinstance(raw, bool) and MIN_RESULT_CHARS <= raw <= MAX_RESULT_CHARS:
        return raw, ""
    shown = repr(raw) if not isinstance(raw, str) else repr(raw[:40])
    return DEFAULT_MAX_RESULT_CHARS, (
        f"server {server!r}: max_result_chars {shown} is not a whole number between {MIN_RESULT_CHARS:,} and "
        f"{MAX_RESULT_CHARS:,}, so the default of {DEFAULT_MAX_RESULT_CHARS:,} characters is used")
