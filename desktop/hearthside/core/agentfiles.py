"""Agent definition files: Markdown with YAML front matter, the format of Claude Code's sub-agents.

::

    ---
    name: code-reviewer
    description: Reviews a change for bugs and unclear code. Use after writing code.
    tools: Read, Grep, Glob          # or a YAML list
    model: sonnet
    maxTurns: 20
    ---
    You are a careful reviewer. ...

Parsing is pure (text in, :class:`~hearthside.core.agentdefs.AgentDef` plus notes out) so every
caller gets the same rules, and it is built for hostile input: the file and its front matter are
measured before YAML sees them, YAML aliases are refused (a "billion laughs" bomb is a handful of
aliases), nesting too deep for the parser is one more error, and a field of the wrong type is a
sentence, never a traceback. A mistake that could only *narrow* what a specialist may do (a
``maxTurns`` that is not a number, an unknown ``permissionMode``) falls back to the default with
a note; one that could *widen* it (a ``tools`` list that is not a list, which would otherwise
mean "every tool") leaves the whole file out.

Header values of an inline MCP server are handed back as they are written: a literal secret, or
the placeholder :data:`KEYRING_PLACEHOLDER` meaning "the value is in the keyring". Moving the
literal into the keyring is the app's job (the parser touches no store).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

from .agentdefs import (
    MAX_DEPTH_CAP,
    MAX_TOOL_CALLS_CAP,
    MAX_TURNS_CAP,
    AgentDef,
    AgentMCPServer,
    AgentOrigin,
    capped,
)
from .mcpconfig import McpConfigError, check_header, check_url, validate_name
from .redact import is_secret_name, looks_secret

#: The largest agent file read at all (Claude Code's own are a few KiB).
MAX_AGENT_FILE_BYTES = 256 * 1024
#: The largest front matter handed to YAML; measured before parsing.
MAX_FRONT_MATTER_BYTES = 32 * 1024
#: The description is always in context, so it is one line of at most this many UTF-8 bytes.
MAX_DESCRIPTION_BYTES = 1024
#: Longest value kept for a short text field (model, color, memory, permissionMode).
MAX_SHORT_FIELD = 128
#: Most names kept in one list field (tools, disallowedTools, skills, mcpServers).
MAX_LIST_ITEMS = 64
#: Most agent files read from one folder.
MAX_AGENT_FILES = 256
#: A specialist's name: the tool-name grammar, so it can be passed as the ``agent`` argument.
NAME_RX = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: A tool name in ``tools``/``disallowedTools`` (catalog names: ``Read``, ``mcp__srv__tool``).
TOOL_NAME_RX = NAME_RX
#: A header value meaning "Hearthside keeps this value in the keyring".
KEYRING_PLACEHOLDER = "${keyring}"
#: ``permissionMode`` values Claude Code writes; anything else means the default.
PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")

#: Front matter keys this parser reads (Claude Code's, plus ``maxDepth``); others are ignored.
KNOWN_KEYS = frozenset({
    "name", "description", "tools", "disallowedTools", "model", "provider", "maxTurns", "maxToolCalls",
    "maxDepth", "skills", "mcpServers", "permissionMode", "color", "memory",
})

_OPEN_RX = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE_RX = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_TOOL_ENTRY_RX = re.compile(r"^([^\s(]+)\s*(\(.*\))?$", re.DOTALL)


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]
    """``yaml.SafeLoader`` that refuses aliases (``*name``): no legitimate agent file needs one,
    and a few of them nested are all a "billion laughs" bomb is."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not allowed in an agent file", event.start_mark)
        return super().compose_node(parent, index)


@dataclass(frozen=True)
class InlineSecret:
    """A header of an inline server whose value sits in the file as a literal secret: the app
    moves it into the keyring and tells the user to replace it with ``${keyring}``."""

    server: str
    header: str


@dataclass(frozen=True)
class ParsedAgent:
    """What one file gave: the definition (None when the file is left out) and one sentence per
    thing worth telling the user (why it is left out, or what was changed or ignored).

    ``literal_secrets`` name headers whose value is written in the file; ``keyring_headers`` name
    headers written as ``${keyring}`` (the value is to be read from the keyring)."""

    agent: AgentDef | None
    notes: tuple[str, ...] = ()
    literal_secrets: tuple[InlineSecret, ...] = ()
    keyring_headers: tuple[InlineSecret, ...] = ()


def validate_agent_name(name: object) -> str:
    """"" when ``name`` can be a specialist's name, else a sentence saying why not."""
    if not isinstance(name, str) or not name:
        return "it has no 'name' in its front matter"
    if not NAME_RX.match(name):
        return (f"its name {name[:80]!r} is not allowed: use 1-64 letters, digits, '-' or '_' "
                "(no spaces)")
    return ""


def cut_utf8_text(text: str, cap: int) -> str:
    """``text`` cut to at most ``cap`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    return data[:cap].decode("utf-8", "ignore")


def split_front_matter(text: str) -> tuple[str, str] | str:
    """``(front, body)`` of an agent file, or a sentence saying why it has none usable. The front
    matter is measured here, before any YAML parser sees it."""
    m = _OPEN_RX.match(text)
    if not m:
        return "it has no front matter: an agent file starts with a '---' line, then YAML, then '---'"
    close = _CLOSE_RX.search(text, m.end())
    if close is None:
        return "its front matter has no closing '---' line"
    front = text[m.end():close.start()]
    if len(front.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        return (f"its front matter is larger than {MAX_FRONT_MATTER_BYTES // 1024} KiB; keep the "
                "front matter short and put the instructions below the closing '---'")
    return front, text[close.end():]


def load_front_matter(front: str) -> dict[str, Any] | str:
    """The front matter as a mapping, or a sentence: not YAML (with the line), an alias, nested
    too deeply, or not a mapping."""
    try:
        data = yaml.load(front, Loader=_NoAliasLoader)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" on line {mark.line + 2}" if mark is not None else ""  # +1 base, +1 for '---'
        return f"its front matter is not valid YAML{where} ({problem})"
    except RecursionError:
        return "its front matter is nested too deeply to be an agent definition"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return "its front matter must be a YAML mapping (key: value lines)"
    return data


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a value of another kind"


class _Out(Exception):
    """The file is left out; the message is the reason."""


class _Parser:
    def __init__(self, front: dict[str, Any], label: str) -> None:
        self.front = front
        self.label = label
        self.notes: list[str] = []
        self.literal: list[InlineSecret] = []
        self.keyring: list[InlineSecret] = []

    def note(self, text: str) -> None:
        self.notes.append(f"{self.label}: {text}")

    def text(self, key: str) -> str:
        """An optional short text field; anything else is ignored with a note."""
        value = self.front.get(key)
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.note(f"'{key}' is {_kind(value)}, not text, and was ignored")
            return ""
        s = " ".join(str(value).split())
        if len(s) > MAX_SHORT_FIELD:
            self.note(f"'{key}' is longer than {MAX_SHORT_FIELD} characters and was ignored")
            return ""
        return s

    def number(self, key: str, cap: int) -> int:
        """An optional whole number above 0, lowered to ``cap`` with a note."""
        value = self.front.get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value.strip())
            else:
                self.note(f"'{key}' is {_kind(value) if not isinstance(value, str) else repr(value[:40])}, "
                          "not a whole number, so the default is used")
                return 0
        if value <= 0:
            self.note(f"'{key}' is {value}; it must be above 0, so the default is used")
            return 0
        if value > cap:
            self.note(f"'{key}' is {value}, more than Hearthside allows; it was lowered to {cap}")
        return capped(value, cap)

    def names(self, key: str, *, widening: bool) -> tuple[str, ...] | None:
        """A list of names written as a comma-separated string or a YAML list. None when absent.

        ``widening``: ignoring a broken value would give the specialist more than the author
        wrote (a ``tools`` allowlist), so a broken value leaves the file out instead."""
        value = self.front.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            items = [t.strip() for t in value.split(",")]
        elif isinstance(value, list) and all(isinstance(t, str) for t in value):
            items = [t.strip() for t in value]
        else:
            why = f"'{key}' is {_kind(value)}; write it as a list of names or a comma-separated line"
            if widening:
                raise _Out(why)
            self.note(why + ", so it was ignored")
            return None
        items = [t for t in items if t]
        if len(items) > MAX_LIST_ITEMS:
            self.note(f"'{key}' names {len(items)} entries; only the first {MAX_LIST_ITEMS} are kept")
            items = items[:MAX_LIST_ITEMS]
        return tuple(dict.fromkeys(items))

    def tool_names(self, key: str) -> tuple[str, ...] | None:
        """``tools``/``disallowedTools``: names only. A Claude Code rule ``Bash(git diff:*)`` keeps
        its name with a note (Hearthside has no per-argument rules); a name outside the grammar
        is kept out with a note."""
        raw = self.names(key, widening=True)
        if raw is None:
            return None
        out: list[str] = []
        for entry in raw:
            m = _TOOL_ENTRY_RX.match(entry)
            name = m.group(1) if m else entry
            if m and m.group(2):
                self.note(f"'{key}' entry {entry[:80]!r}: the rule in brackets is not supported, "
                          f"so it counts as the whole tool {name!r}")
            if not TOOL_NAME_RX.match(name):
                self.note(f"'{key}' entry {entry[:80]!r} is not a tool name and was kept out")
                continue
            out.append(name)
        return tuple(dict.fromkeys(out))

    def servers(self) -> tuple[AgentMCPServer, ...]:
        """``mcpServers``: a list of names / single-key mappings / ``{name, url, headers}``, or a
        mapping name -> server (the way Claude Code writes it)."""
        value = self.front.get("mcpServers")
        if value is None:
            return ()
        entries: list[tuple[str, Any]] = []
        if isinstance(value, str):
            entries = [(n.strip(), None) for n in value.split(",") if n.strip()]
        elif isinstance(value, dict):
            entries = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    entries.append((item.strip(), None))
                elif isinstance(item, dict) and "name" in item:
                    entries.append((str(item.get("name")), item))
                elif isinstance(item, dict) and len(item) == 1:
                    k, v = next(iter(item.items()))
                    entries.append((str(k), v))
                else:
                    self.note(f"an 'mcpServers' entry is {_kind(item)} that names no server; it was ignored")
        else:
            self.note(f"'mcpServers' is {_kind(value)}; it was ignored")
            return ()
        out: list[AgentMCPServer] = []
        for name, spec in entries[:MAX_LIST_ITEMS]:
            server = self.server(name, spec)
            if server is not None and all(s.name != server.name for s in out):
                out.append(server)
        if len(entries) > MAX_LIST_ITEMS:
            self.note(f"'mcpServers' names {len(entries)} servers; only the first {MAX_LIST_ITEMS} are kept")
        return tuple(out)

    def server(self, name: str, spec: Any) -> AgentMCPServer | None:
        try:
            validate_name(name)
        except McpConfigError as exc:
            self.note(f"MCP server left out: {exc}")
            return None
        if spec is None or spec == {} or (isinstance(spec, dict) and set(spec) <= {"name"}):
            return AgentMCPServer(name)  # a reference to a configured server
        if not isinstance(spec, dict):
            self.note(f"MCP server {name!r} is {_kind(spec)}, not a server; it was left out")
            return None
        kind = str(spec.get("type", spec.get("transport", "http")))
        if "command" in spec or kind == "stdio":
            self.note(f"MCP server {name!r} starts a program; an agent file may only name a configured "
                      "server or an HTTP server (add programs with 'hearthside mcp add'), so it was left out")
            return None
        if kind not in ("http", "streamable-http", "streamableHttp"):
            self.note(f"MCP server {name!r} has type {kind[:40]!r}; only streamable HTTP servers can be "
                      "written in an agent file, so it was left out")
            return None
        url = spec.get("url")
        if not isinstance(url, str):
            self.note(f"MCP server {name!r} has no 'url'; it was left out")
            return None
        try:
            check_url(url)
        except McpConfigError as exc:
            self.note(f"MCP server {name!r} left out: {exc}")
            return None
        raw_headers = spec.get("headers") or {}
        if not isinstance(raw_headers, dict):
            self.note(f"MCP server {name!r}: 'headers' is {_kind(raw_headers)}, not a mapping; it was left out")
            return None
        headers: list[tuple[str, str]] = []
        for h, v in raw_headers.items():
            h = str(h)
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                self.note(f"MCP server {name!r}: header {h[:60]!r} is {_kind(v)}, not text; the server was left out")
                return None
            v = str(v)
            try:
                check_header(h, v)
            except McpConfigError as exc:
                self.note(f"MCP server {name!r} left out: {exc}")  # the message never holds the value
                return None
            if v == KEYRING_PLACEHOLDER:
                self.keyring.append(InlineSecret(name, h))
            elif is_secret_name(h) or looks_secret(v):
                self.literal.append(InlineSecret(name, h))
            headers.append((h, v))
        return AgentMCPServer(name, url, tuple(headers))


def parse_agent_file(text: str, origin: AgentOrigin, label: str) -> ParsedAgent:
    """Parse one agent file. ``label`` names it in notes (``agents/reviewer.md``); never a path
    the model sees. Returns the definition, or ``None`` with the reason among the notes."""
    if len(text.encode("utf-8")) > MAX_AGENT_FILE_BYTES:
        return ParsedAgent(None, ((f"{label} is left out: it is larger than "
                                  f"{MAX_AGENT_FILE_BYTES // 1024} KiB"),))
    text = text.removeprefix("\ufeff")
    split = split_front_matter(text)
    if isinstance(split, str):
        return ParsedAgent(None, (f"{label} is left out: {split}",))
    front_text, body = split
    front = load_front_matter(front_text)
    if isinstance(front, str):
        return ParsedAgent(None, (f"{label} is left out: {front}",))
    p = _Parser(front, label)
    try:
        agent = _build(p, body, origin)
    except _Out as exc:
        return ParsedAgent(None, (f"{label} is left out: {exc}",) + tuple(p.notes))
    return ParsedAgent(agent, tuple(p.notes), tuple(p.literal), tuple(p.keyring))


def _build(p: _Parser, body: str, origin: AgentOrigin) -> AgentDef:
    front = p.front
    name = front.get("name")
    why = validate_agent_name(name)
    if why or not isinstance(name, str):
        raise _Out(why)
    desc = front.get("description")
    if not isinstance(desc, str) or not desc.strip():
        raise _Out("it has no 'description' (one line saying what the specialist does and when to use it)"
                   if desc is None or isinstance(desc, str) else
                   f"its 'description' is {_kind(desc)}, not text")
    one_line = " ".join(desc.split())
    if one_line != desc.strip():
        p.note("'description' spans several lines; it was joined into one")
    if len(one_line.encode("utf-8")) > MAX_DESCRIPTION_BYTES:
        p.note(f"'description' is longer than {MAX_DESCRIPTION_BYTES} bytes; it was cut (put the details "
               "in the body)")
        one_line = cut_utf8_text(one_line, MAX_DESCRIPTION_BYTES).rstrip()
    tools = p.tool_names("tools")
    disallowed = p.tool_names("disallowedTools") or ()
    mode = p.text("permissionMode")
    if mode and mode not in PERMISSION_MODES:
        p.note(f"'permissionMode' {mode!r} is not one of {', '.join(PERMISSION_MODES)}; the default is used")
        mode = ""
    unknown = sorted(str(k) for k in front if str(k) not in KNOWN_KEYS)
    if unknown:
        shown = ", ".join(k[:40] for k in unknown[:8]) + (", ..." if len(unknown) > 8 else "")
        p.note(f"front matter keys Hearthside does not use were ignored: {shown}")
    skills = p.names("skills", widening=False) or ()
    return AgentDef(
        name=name,
        description=one_line,
        body=body.replace("\r\n", "\n").strip("\n"),
        tools=tools,
        disallowed_tools=disallowed,
        model=p.text("model"),
        provider=p.text("provider"),
        permission_mode=mode,
        max_turns=p.number("maxTurns", MAX_TURNS_CAP),
        max_tool_calls=p.number("maxToolCalls", MAX_TOOL_CALLS_CAP),
        max_depth=p.number("maxDepth", MAX_DEPTH_CAP),
        color=p.text("color"),
        skills=tuple(s for s in skills if NAME_RX.match(s)),
        mcp_servers=p.servers(),
        memory=p.text("memory"),
        origin=origin,
    )


def keep_known_tools(agent: AgentDef, known: Iterable[str]) -> tuple[AgentDef, tuple[str, ...]]:
    """``agent`` with every name in ``tools``/``disallowedTools`` that is not in ``known`` (the
    catalog of the session at hand) kept out, and one note per name kept out.

    A ``tools`` list left empty this way stays empty — the specialist gets no tools, never the
    default set, since the author meant to narrow it."""
    names = frozenset(known)
    notes: list[str] = []
    tools = agent.tools
    if tools is not None:
        unknown = [t for t in tools if t not in names]
        if unknown:
            notes.append(f"specialist {agent.name!r}: no tool is called {', '.join(map(repr, unknown))}; "
                         + ("kept out of its tools" if len(unknown) < len(tools) else
                            "kept out, so it has no tools"))
            tools = tuple(t for t in tools if t in names)
    disallowed = tuple(t for t in agent.disallowed_tools if t in names)
    return replace(agent, tools=tools, disallowed_tools=disallowed), tuple(notes)
