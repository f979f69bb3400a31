"""Tools a persona can call, and the catalog that holds them (contract section 8).

A tool is a spec the model sees (name, description, JSON schema), a read-only flag that drives
dispatch (read-only calls in one turn may run in parallel; mutating ones run one at a time,
each approved by the user in default mode), and an async ``execute``. Optional capabilities are
separate small protocols, so a simple tool implements only what it needs.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from .environment import Environment
from .writeguard import WriteGuard

#: Tool names the model can call: OpenAI-compatible function-name grammar.
TOOL_NAME_RX = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class PermissionMode(enum.Enum):
    """How a session treats mutating tools: ask (default), auto-approve, or hide (plan)."""

    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees for a tool. Stable across turns so it can be cached."""

    name: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def as_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry for this spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.schema) or {"type": "object", "properties": {}},
            },
        }


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer to the model. ``is_error`` marks a tool-level failure the model sees."""

    content: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(message, True)


@dataclass
class ToolEnv:
    """The per-session environment a tool executes against.

    ``workspace`` is a folder a files tool may use (None when the session has none);
    ``persona`` names the persona; ``services`` carries optional session services by name
    (memory store, skills catalog, search provider) so tools need no global state.
    ``write_guard`` is the one write guard every mutating tool must ask before it writes
    (the app fills it with the soul, every persona folder and Hearthside's own dirs).
    ``environment`` is the seed's per-namespace bundle (workspace + optional bound shell) when
    the session has one; a forked specialist gets its fork's environment (and ``workspace`` set
    to the fork), so its file tools and its shell see the fork, never the parent.
    """

    persona: str = ""
    workspace: str | None = None
    services: dict[str, Any] = field(default_factory=dict)
    write_guard: WriteGuard = field(default_factory=WriteGuard)
    environment: Environment | None = None


@dataclass(frozen=True)
class CallTarget:
    """What a mutating call would change: ``action`` (create, replace, edit, delete...) and the
    fully resolved ``path``, for approval prompts that cannot be fooled by a long argument."""

    action: str
    path: str


@runtime_checkable
class Targeted(Protocol):
    """Optional: a tool that can say, before it runs, which file a call would change."""

    def target(self, args: Mapping[str, Any], env: ToolEnv) -> CallTarget | None: ...


#: Tool classes the *host* lets run without approval (its own memory tools, which write only
#: the learned-memory store the user can review and undo). A tool cannot exempt itself: what
#: a tool claims about itself is ignored, only the exact class registered here counts.
HOST_APPROVAL_EXEMPT: set[type] = set()


_T = TypeVar("_T", bound=type)


def host_approval_exempt(cls: _T) -> _T:
    """Class decorator for the host's own approval-exempt tools (not for packs)."""
    HOST_APPROVAL_EXEMPT.add(cls)
    return cls


@runtime_checkable
class AlwaysAsk(Protocol):
    """Optional: every call of this tool is asked about, in accept-edits mode too (the shell).

    It only ever *adds* asking, so a tool may claim it for itself; nothing a tool says can take
    asking away (see :data:`HOST_APPROVAL_EXEMPT`). In a check-in such a tool runs only where
    the persona was granted mutating tools, like every other tool that needs approval."""

    @property
    def always_ask(self) -> bool: ...


def always_asks(tool: object) -> bool:
    """True when ``tool`` declares :class:`AlwaysAsk` (a broken property counts as asking)."""
    try:
        return isinstance(tool, AlwaysAsk) and tool.always_ask is not False
    except Exception:  # noqa: BLE001 - a property that raises must not skip the question
        return True


@runtime_checkable
class Tool(Protocol):
    """The contract every tool implements."""

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def read_only(self) -> bool: ...

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult: ...


@runtime_checkable
class PlanOnly(Protocol):
    """Optional: a tool that exists only in plan mode (e.g. one that presents a plan)."""

    @property
    def plan_only(self) -> bool: ...


@runtime_checkable
class Disclosable(Protocol):
    """Optional: advertised with a one-line spec until ``ToolSearch`` loads the full one."""

    @property
    def advertised(self) -> ToolSpec: ...


@dataclass
class FunctionTool:
    """A tool built from a plain function (sync or async) — the easy path for pack authors."""

    name: str
    description: str
    func: Callable[..., Any]
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    read_only: bool = True
    pass_env: bool = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        out = self.func(env, **args) if self.pass_env else self.func(**args)
        if isinstance(out, Awaitable):
            out = await out
        if isinstance(out, ToolResult):
            return out
        if isinstance(out, str):
            return ToolResult(out)
        return ToolResult(json.dumps(out, ensure_ascii=False, default=str))


class CatalogError(ValueError):
    """A tool could not be registered (bad name, not a tool, or a name already taken)."""


@dataclass(frozen=True)
class CatalogEntry:
    """A registered tool and where it came from (a pack name, ``mcp:<server>``, ``builtin``)."""

    tool: Tool
    source: str


def is_tool(obj: object) -> bool:
    """True when ``obj`` has what a tool needs (a spec, a read-only flag, an execute)."""
    try:
        spec = obj.spec  # type: ignore[attr-defined]
        ro = obj.read_only  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a broken property means "not a tool"
        return False
    return isinstance(spec, ToolSpec) and isinstance(ro, bool) and callable(
        getattr(obj, "execute", None)
    )


class Catalog:
    """A name → tool registry with the mode projections the agent loop needs."""

    def __init__(self) -> None:
        self._entries: dict[str, CatalogEntry] = {}

    def register(self, tool: Tool, source: str = "builtin") -> None:
        """Add a tool; raises :class:`CatalogError` on a bad tool or a duplicate name."""
        if not is_tool(tool):
            raise CatalogError(f"{tool!r} is not a tool (it needs spec, read_only and execute)")
        name = tool.spec.name
        if not TOOL_NAME_RX.match(name):
            raise CatalogError(
                f"tool name {name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
            )
        if name in self._entries:
            other = self._entries[name].source
            raise CatalogError(f"tool name {name!r} is already taken by {other}")
        self._entries[name] = CatalogEntry(tool, source)

    def unregister_source(self, source: str) -> None:
        """Remove every tool a source contributed (a pack unloaded, an MCP server gone)."""
        for name in [n for n, e in self._entries.items() if e.source == source]:
            del self._entries[name]

    def lookup(self, name: str) -> Tool | None:
        e = self._entries.get(name)
        return e.tool if e else None

    def source_of(self, name: str) -> str | None:
        e = self._entries.get(name)
        return e.source if e else None

    def entries(self) -> list[CatalogEntry]:
        return [self._entries[n] for n in sorted(self._entries)]

    def tools(self) -> list[Tool]:
        return [e.tool for e in self.entries()]

    def available(self, mode: PermissionMode) -> list[Tool]:
        """The tools a session in ``mode`` may call: plan mode hides mutating tools, and
        plan-only tools appear only in plan mode."""
        out = []
        for t in self.tools():
            plan_only = isinstance(t, PlanOnly) and bool(t.plan_only)
            if mode is PermissionMode.PLAN:
                if t.read_only or plan_only:
                    out.append(t)
            elif not plan_only:
                out.append(t)
        return out

    def specs(self, mode: PermissionMode) -> list[ToolSpec]:
        """Full specs of every tool available in ``mode``."""
        return [t.spec for t in self.available(mode)]

    def advertised_specs(self, mode: PermissionMode, hydrated: set[str] | None = None) -> list[ToolSpec]:
        """Specs for the prompt: disclosable tools show their one-line spec until hydrated."""
        hydrated = hydrated or set()
        out = []
        for t in self.available(mode):
            if isinstance(t, Disclosable) and t.spec.name not in hydrated:
                out.append(t.advertised)
            else:
                out.append(t.spec)
        return out

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
