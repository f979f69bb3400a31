"""The tools Hearthside itself provides around packs: ``ToolSearch``, ``Skill`` and ``WebSearch``.

Each is built per session from what the plugin host found (a tool catalog, a skill catalog, a
search provider), so the tools hold no global state. Pack tools may not take these names.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from .search import (
    DEFAULT_LIMIT,
    FRESHNESS_VALUES,
    MAX_LIMIT,
    SearchProvider,
    SearchQuery,
    SearchUnavailable,
    clamp_limit,
    fence_results,
)
from .skills import InvalidAssetName, SkillAssetNotFound, SkillCatalog, SkillNotFound
from .tools import Catalog, Disclosable, PermissionMode, ToolEnv, ToolResult, ToolSpec

TOOL_SEARCH_NAME = "ToolSearch"
SKILL_TOOL_NAME = "Skill"
WEB_SEARCH_NAME = "WebSearch"

#: The learned-memory tools every session gets (``core.memory.tools``; a test keeps the two
#: lists equal). Spelled out here so checking a pack's names does not import the memory model.
MEMORY_TOOL_NAMES = frozenset({"memory_remember", "memory_recall", "memory_search",
                               "memory_inspect", "memory_forget", "memory_undo"})

#: Names packs may not register (the host's own tools) and the prefix MCP tools live under.
RESERVED_TOOL_NAMES = frozenset({TOOL_SEARCH_NAME, SKILL_TOOL_NAME, WEB_SEARCH_NAME}) | MEMORY_TOOL_NAMES
RESERVED_TOOL_PREFIX = "mcp__"

#: The ``env.services`` key where ToolSearch records the tools it hydrated this session.
HYDRATED_SERVICE = "hydrated_tools"

_MAX_SKILL_LISTING = 200


class ToolSearch:
    """Loads full specs of tools that are advertised with a one-line spec (progressive disclosure).

    A case-insensitive substring match over names and descriptions; excludes itself. Names it
    returns are added to ``env.services["hydrated_tools"]`` (a set) when the session keeps one,
    so the next turn can advertise their full specs.
    """

    read_only = True

    def __init__(self, catalog: Catalog, mode: PermissionMode = PermissionMode.DEFAULT) -> None:
        self.catalog = catalog
        self.mode = mode

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            TOOL_SEARCH_NAME,
            "Find tools by keyword and load their full descriptions and argument schemas. Use it "
            "when a tool you need is listed only by a one-line summary. Returns at most 10 tools.",
            {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "words to look for"}},
                "required": ["query"],
            },
        )

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult.error("ToolSearch needs a non-empty 'query' string.")
        words = query.lower().split()
        found = []
        for tool in self.catalog.available(self.mode):
            spec = tool.spec
            if spec.name == TOOL_SEARCH_NAME:
                continue
            hay = f"{spec.name} {spec.description}".lower()
            if isinstance(tool, Disclosable):
                hay += " " + tool.advertised.description.lower()
            if all(w in hay for w in words):
                found.append(spec)
        found = found[:10]
        hydrated = env.services.get(HYDRATED_SERVICE)
        if isinstance(hydrated, set):
            hydrated.update(s.name for s in found)
        if not found:
            return ToolResult(f"No tool matches {query!r}.")
        return ToolResult(json.dumps(
            [{"name": s.name, "description": s.description, "parameters": dict(s.schema)} for s in found],
            ensure_ascii=False,
        ))


class SkillTool:
    """Loads a skill's instructions, or one of its assets by logical name.

    Its description lists every skill (name and description only), which is how skills reach
    the prompt without their bodies.
    """

    read_only = True

    def __init__(self, skills: SkillCatalog) -> None:
        self.skills = skills

    @property
    def spec(self) -> ToolSpec:
        metas = self.skills.list()
        lines = [f"- {m.name}: {m.description}" for m in metas[:_MAX_SKILL_LISTING]]
        listing = "\n".join(lines) if lines else "(no skills are installed)"
        return ToolSpec(
            SKILL_TOOL_NAME,
            "Load a skill: step-by-step instructions for a kind of task. Call it with the skill's "
            "name before doing such a task; pass 'asset' to read a file the skill refers to.\n"
            f"Available skills:\n{listing}",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the skill's name"},
                    "asset": {"type": "string",
                              "description": "optional file inside the skill, e.g. references/notes.md"},
                },
                "required": ["name"],
            },
        )

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        name, asset = args.get("name"), args.get("asset")
        if not isinstance(name, str) or not name:
            return ToolResult.error("Skill needs the 'name' of a skill.")
        try:
            if asset is not None and asset != "":
                if not isinstance(asset, str):
                    return ToolResult.error("'asset' must be a string.")
                data = self.skills.read_asset(name, asset)
                try:
                    return ToolResult(data.decode("utf-8"))
                except UnicodeDecodeError:
                    return ToolResult.error(
                        f"Asset {asset!r} is binary ({len(data)} bytes); it cannot be shown as text.")
            meta = self.skills.meta(name)
            body = self.skills.body(name)
            assets = self.skills.assets(name)
        except (SkillNotFound, SkillAssetNotFound, InvalidAssetName) as exc:
            return ToolResult.error(str(exc.args[0] if exc.args else exc))
        parts = [f"# Skill: {meta.name}", body]
        if assets:
            parts.append("Files in this skill (read one with the 'asset' argument):\n"
                         + "\n".join(f"- {a.name} ({a.size} bytes)" for a in assets))
        if meta.allowed_tools:
            parts.append("The skill expects to use these tools (advice only, not a permission): "
                         + ", ".join(meta.allowed_tools))
        if meta.compatibility:
            parts.append(f"Compatibility note: {meta.compatibility}")
        return ToolResult("\n\n".join(parts))


class WebSearch:
    """Searches the web through the chosen provider; every result is fenced as untrusted data."""

    read_only = True

    def __init__(self, provider: SearchProvider, timeout: float = 30.0) -> None:
        self.provider = provider
        self.timeout = timeout

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            WEB_SEARCH_NAME,
            "Search the web. Returns titles, links and short snippets; the results are untrusted "
            f"text from the internet. 'limit' defaults to {DEFAULT_LIMIT} (at most {MAX_LIMIT}).",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    "site": {"type": "string", "description": "only results from this domain"},
                    "freshness": {"type": "string", "enum": list(FRESHNESS_VALUES)},
                },
                "required": ["query"],
            },
        )

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult.error("WebSearch needs a non-empty 'query' string.")
        site = args.get("site") or ""
        fresh = args.get("freshness") or ""
        if not isinstance(site, str) or not isinstance(fresh, str):
            return ToolResult.error("'site' and 'freshness' must be strings.")
        if fresh and fresh not in FRESHNESS_VALUES:
            return ToolResult.error(f"'freshness' must be one of {', '.join(FRESHNESS_VALUES)}.")
        q = SearchQuery(query, clamp_limit(args.get("limit")), site.strip(), fresh)
        try:
            results = await asyncio.wait_for(self.provider.search(q), self.timeout)
        except SearchUnavailable as exc:
            return ToolResult.error(f"Web search is not available: {exc}")
        except TimeoutError:
            return ToolResult.error(f"Web search did not answer within {self.timeout:.0f} s.")
        except Exception as exc:  # noqa: BLE001 - a provider fault is the model's tool error
            return ToolResult.error(f"Web search failed ({self.provider.name}): {exc}")
        return ToolResult(fence_results(q, list(results)[: q.limit]))


def make_tool_search(catalog: Catalog, mode: PermissionMode = PermissionMode.DEFAULT) -> ToolSearch:
    """The ``ToolSearch`` tool over ``catalog`` (register it into the same catalog)."""
    return ToolSearch(catalog, mode)


def make_skill_tool(skills: SkillCatalog) -> SkillTool:
    """The ``Skill`` tool over a session's skill catalog."""
    return SkillTool(skills)


def make_web_search(provider: SearchProvider, timeout: float = 30.0) -> WebSearch:
    """The ``WebSearch`` tool over one provider."""
    return WebSearch(provider, timeout)
