"""What an approval prompt shows for a mutating tool call (the CLI and the chat window alike).

A prompt that shows arguments as the model wrote them can hide the real target: a path of
``notes/`` + 130 slashes + ``../SOUL.md`` cut at 120 characters looks harmless. So a request
leads with the *action* and the *resolved target path*, in full, taken from the tool itself
(the optional ``Targeted`` capability), and only then the other arguments.

An argument is never cut either: ``ls -la ~/Documents`` + 230 spaces + ``; curl … | sh`` cut
at 200 characters hides what will run. Every argument is shown in full, with whitespace made
visible (:func:`shown`): a run of spaces as ``␠×230``, tabs and line breaks as escapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from .mcppaths import PathArgument
from .termsafe import visible_line
from .tools import Targeted, Tool, ToolEnv

#: A run of this many spaces (or more) is shown as ``␠×N``, so it cannot push the rest of an
#: argument out of sight; so are spaces at either end of a value.
SPACE_RUN = 3
_SPACES_RX = re.compile(r"^ +| +$| {" + str(SPACE_RUN) + ",}")
#: Characters shown as ``\\uXXXX``: besides the controls, every space that is not U+0020 (a
#: run of em spaces hides as well as plain ones) and the ``␠`` marker itself, so a value cannot
#: fake a marker.
_ODD_SPACE_RX = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2420]")


#: Words an action may end with when the path completes it ("run a shell command in" /path):
#: the question then names the path instead of saying "this".
_PREPOSITIONS = frozenset({"in", "into", "to", "on", "at", "from", "under", "inside"})


def path_completes(action: str) -> bool:
    """Whether ``action`` reads as unfinished without its path (it ends with a preposition)."""
    words = action.split()
    return bool(words) and words[-1].lower() in _PREPOSITIONS


def question(tool: str, action: str, path: str, specialist: str = "") -> str:
    """The yes/no question of an approval: ``Allow Write to create this?`` (the headline above
    it names the file), or, when the action needs its path to make sense, ``Allow Bash to run
    a shell command in /the/folder?``."""
    who = f"the specialist {specialist}'s " if specialist else ""
    what = f"{action} {path}" if path and path_completes(action) else f"{action} this"
    return f"Allow {who}{tool} to {what}?"


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
    #: the specialist whose call this is ("" for the persona's own): the question names it
    specialist: str = ""

    def headline(self) -> str:
        """One line: ``Write: replace /full/path/SOUL.md`` or ``mcp__x__y: run``; a specialist's
        call starts with ``specialist NAME asks:``."""
        who = f"specialist {self.specialist} asks: " if self.specialist else ""
        return visible(f"{who}{self.tool}: {self.action} {self.path}".rstrip())

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a window or ``--json``: the target first, then the rest (and who asks,
        for a specialist's call)."""
        doc: dict[str, Any] = {"tool": self.tool, "action": self.action, "path": self.path,
                               "rest": [list(kv) for kv in self.rest], "refusal": self.refusal}
        if self.specialist:
            doc["specialist"] = self.specialist
        return doc


    def question(self) -> str:
        """The yes/no question asked after :meth:`lines` (see :func:`question`)."""
        return visible(question(self.tool, self.action, self.path, self.specialist))

    def lines(self) -> list[str]:
        """The headline, then ``  name = value`` per other argument."""
        return [self.headline(), *(f"  {visible(k)} = {v}" for k, v in self.rest)]


@dataclass(frozen=True)
class Asking:
    """Who is asking for the approval being decided: a specialist (a child agent) and the
    environment its call runs in (a fork's, for a writing specialist)."""

    specialist: str
    env: ToolEnv


#: Set by a specialist's approver around the parent approver's call (core/subagent.py), so every
#: approver the parent uses — the terminal's, the window's — names the specialist and resolves
#: paths in the specialist's own environment without a change to the approver protocol.
ASKING: ContextVar[Asking | None] = ContextVar("hearthside_asking", default=None)


def visible(text: str) -> str:
    """``text`` with control, format and line-separator characters shown as escapes, so a
    path cannot hide a part of itself (a right-to-left override, an escape sequence, a
    carriage return that draws over the line)."""
    return visible_line(text)


def shown(value: Any) -> str:
    """An argument as a prompt shows it: in full, on one line, nothing invisible. Controls,
    tabs and line breaks are escapes (:func:`visible`); unusual spaces are ``\\uXXXX``; a run of
    :data:`SPACE_RUN` or more spaces, and spaces at either end, are ``␠×N`` (one: ``␠``)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = _ODD_SPACE_RX.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    text = _SPACES_RX.sub(lambda m: "␠" if len(m.group(0)) == 1 else f"␠×{len(m.group(0))}", text)
    return visible(text)


@runtime_checkable
class ResolvesPaths(Protocol):
    """Optional: a tool whose arguments may hold several paths (an MCP tool) says what each
    resolves to, and why the write guard would refuse the call."""

    def resolved_paths(self, args: Mapping[str, Any]) -> list[PathArgument]: ...

    def refusal(self, args: Mapping[str, Any], env: ToolEnv) -> str: ...


def _with_resolved_paths(tool: ResolvesPaths, args: Mapping[str, Any], env: ToolEnv) -> ApprovalRequest:
    """Every argument in full, a path shown as what it resolves to (``…/Kip/../Kip/SOUL.md`` is
    shown as ``/home/ada/.config/hearthside/personas/Kip/SOUL.md``, then as written)."""
    name = tool.spec.name if isinstance(tool, Tool) else type(tool).__name__
    try:
        found = tool.resolved_paths(args)
        why = tool.refusal(args, env)
    except Exception as exc:  # noqa: BLE001 - a bad path: show the call as given, with why
        return ApprovalRequest(name, f"run (the paths cannot be resolved: {str(exc) or type(exc).__name__})", "",
                               tuple((k, shown(v)) for k, v in args.items()))
    top = {a.where: a for a in found if a.where in args and a.worth_showing}
    rest: list[tuple[str, str]] = []
    for k, v in args.items():
        arg = top.get(k)
        if arg is not None and arg.readings != arg.given:
            rest.append((k, f"{shown(arg.readings)} (as written: {shown(v)})"))
        else:
            rest.append((k, shown(v)))
    rest += [(f"{a.where} resolves to", shown(a.readings)) for a in found
             if a.where not in args and a.worth_showing and a.readings != a.given]
    return ApprovalRequest(name, "run", "", tuple(rest), why)


def describe_call(tool: Tool, args: Mapping[str, Any], env: ToolEnv) -> ApprovalRequest:
    """The approval request for calling ``tool`` with ``args`` in ``env`` — or, when a specialist
    is asking (:data:`ASKING`), in the specialist's environment and with its name on it."""
    asking = ASKING.get()
    if asking is None:
        return _describe(tool, args, env)
    return replace(_describe(tool, args, asking.env), specialist=asking.specialist)


def _describe(tool: Tool, args: Mapping[str, Any], env: ToolEnv) -> ApprovalRequest:
    name = tool.spec.name
    target = None
    if isinstance(tool, Targeted):
        try:
            target = tool.target(args, env)
        except Exception as exc:  # noqa: BLE001 - a bad path: show the call as given, with why
            rest = tuple((k, shown(v)) for k, v in args.items())
            return ApprovalRequest(name, "run (the target cannot be resolved: "
                                   f"{str(exc) or type(exc).__name__})", "", rest)
    if target is None and isinstance(tool, ResolvesPaths):
        return _with_resolved_paths(tool, args, env)
    if target is None:
        return ApprovalRequest(name, "run", "", tuple((k, shown(v)) for k, v in args.items()))
    rest = tuple((k, shown(v)) for k, v in args.items() if k != "path")
    return ApprovalRequest(name, target.action, target.path, rest, env.write_guard.refusal(target.path))
