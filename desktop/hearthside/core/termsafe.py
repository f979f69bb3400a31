"""Make model- and file-provided text safe to print on a terminal (issue 9, hole 4).

A terminal obeys control characters: ``ESC[8m`` hides what follows, ``OSC 52`` writes the
clipboard, ``OSC 0`` sets the window title, a C1 ``CSI`` (U+009B) starts a sequence without
ESC at all. Text Hearthside did not write itself (a model's answer, a memory value, a persona
file, a pack's description) is therefore passed through :func:`strip_controls` before it is
printed: whole ESC/CSI/OSC/DCS sequences are removed, and every other C0 control (except
newline and tab), DEL and C1 character is removed too. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

#: A whole escape sequence, in its 7-bit (ESC ...) or 8-bit (C1) form:
#: CSI (ESC [ / U+009B) parameters, intermediates and a final byte; OSC (ESC ] / U+009D), DCS
#: (ESC P / U+0090), SOS (ESC X / U+0098), PM (ESC ^ / U+009E) and APC (ESC _ / U+009F)
#: strings up to BEL or ST (ESC \\ / U+009C), or up to the end of the text when unterminated;
#: any other two-character ESC sequence (ESC 7, ESC c, ESC ( B ...).
_SEQUENCE_RX = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])(?:(?!\x1b\\|\x07|\x9c)[\s\S])*(?:\x1b\\|\x07|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)

#: Single control characters left after the sequences are gone: C0 except ``\t`` and ``\n``,
#: DEL, C1. A lone ``\r`` goes too: it returns the cursor and lets text overwrite a line.
_CONTROL_RX = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without terminal control sequences or control characters (``\\n``, ``\\t`` kept)."""
    if not text:
        return text
    return _CONTROL_RX.sub("", _SEQUENCE_RX.sub("", text))


def has_controls(text: str) -> bool:
    """True when :func:`strip_controls` would change ``text``."""
    return bool(text) and _CONTROL_RX.search(text) is not None


def visible_line(text: str) -> str:
    """``text`` on one line with nothing invisible: every control, format (bidi overrides such
    as U+202E, zero-width characters) and line or paragraph separator character -- newline and
    tab included -- written as a ``\\x0a`` / ``\\u202e`` escape. For a name or a path shown where
    one entry must stay one line and read as what it is (a menu, a list, an approval)."""
    if not text:
        return text
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


#: Characters JSON output must not carry raw: ``json.dumps(ensure_ascii=False)`` escapes C0 but
#: leaves DEL and C1 (U+009B is a CSI) as they are.
_JSON_RAW_RX = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def escape_json_controls(dumped: str) -> str:
    """A dumped JSON document with DEL, C1 and line separators written as ``\\uXXXX`` escapes.

    Valid on any ``json.dumps`` output: outside strings these characters cannot occur."""
    return _JSON_RAW_RX.sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumped)


class StreamCleaner:
    """Cleans streamed text whose escape sequences and secrets may be split across pieces.

    ``feed`` returns what can be shown now: text up to the last whitespace, passed through
    ``clean`` (redaction, then :func:`strip_controls`); the unfinished word and any unfinished
    escape sequence wait for the next piece, because a secret or a sequence cut in two would
    slip past both filters. ``flush`` returns the rest at the end of the answer.
    """

    #: A word longer than this is shown anyway (masked as far as its own length allows).
    MAX_HOLD = 4096

    def __init__(self, clean: Callable[[str], str]) -> None:
        self._clean = clean
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
        esc = max(text.rfind("\x1b"), text.rfind("\x9b"), text.rfind("\x9d"))
        if esc > cut:  # an escape sequence may be unfinished: hold it back whole
            cut = esc - 1
        if cut < 0 and len(text) <= self.MAX_HOLD:
            self._held = text
            return ""
        if cut < 0:
            cut = len(text) - 1
        ready, self._held = text[: cut + 1], text[cut + 1 :]
        return self._apply(ready)

    def flush(self) -> str:
        rest, self._held = self._held, ""
        return self._apply(rest)

    def _apply(self, text: str) -> str:
        if not text:
            return ""
        return strip_controls(self._clean(text))
