"""What an approval prompt shows for a mutating tool call (the CLI and the chat window alike).

A prompt that shows arguments as the model wrote them can hide the real target: a path of
``notes/`` + 130 slashes + ``../SOUL.md`` cut at 120 characters looks harmless. So a request
leads with the *action* and the *resolved target path*, in full, taken from the tool itself
(the optional ``Targeted`` capability), and only then the other arguments, each shortened.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tools import Targeted, Tool, ToolEnv

#: How much of each non-target argument a prompt shows (the target path is never cut).
MAX_SHOWN_VALUE = 200


@dataclass(frozen=True)
class ApprovalRequest:
    """One call as the user is asked about it. ``path`` is empty when the tool cannot say
    what it would change (a pack or MCP tool without the capability); ``refusal`` is set when
    the write guard will refuse the call anyway, so the prompt can say so."""

    tool: str
    action: str
    path: str
    rest: tuple[tuple[str, str], ...]
    refusal: str = ""

    def headline(self) -> str:
        """One line: ``Write: replace /full/path/SOUL.md`` or ``mcp__x__y: run``."""
        return visible(f"{self.tool}: {self.action} {self.path}".rstrip())

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a window or ``--json``: the target first, then the rest."""
        return {"tool": self.tool, "action": self.action, "path": self.path,
                "rest": [list(kv) for kv in self.rest], "refusal": self.refusal}

    def lines(self) -> list[str]:
        """The headline, then ``  name = value`` per other argument."""
        return [self.headline(), *(visible(f"  {k} = {v}") for k, v in self.rest)]


def visible(text: str) -> str:
    """``text`` with control, format and line-separator characters shown as escapes, so a
    path cannot hide a part of itself (a right-to-left override, an escape sequence, a
    carriage return that draws over the line)."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_VALUE:
        return f"{text[:MAX_SHOWN_VALUE]}… ({len(text)} characters)"
    return text


def describe_call(tool: Tool, args: Mapping[str, Any], env: ToolEnv) -> ApprovalRequest:
    """The approval request for calling ``tool`` with ``args`` in ``env``."""
    name = tool.spec.name
    target = None
    if isinstance(tool, Targeted):
        try:
            target = tool.target(args, env)
        except Exception as exc:  # noqa: BLE001 - a bad path: show the call as given, with why
            rest = tuple((k, _short(v)) for k, v in args.items())
            return ApprovalRequest(name, "run (the target cannot be resolved: "
                                   f"{str(exc) or type(exc).__name__})", "", rest)
    if target is None:
        return ApprovalRequest(name, "run", "", tuple((k, _short(v)) for k, v in args.items()))
    rest = tuple((k, _short(v)) for k, v in args.items() if k != "path")
    return ApprovalRequest(name, target.action, target.path, rest, env.write_guard.refusal(target.path))
