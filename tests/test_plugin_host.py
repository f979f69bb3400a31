"""The plugin host with in-process plugin objects: registration checks and isolation rules.

(The same rules with real installed distributions are in test_plugin_loading.py.)
"""

from __future__ import annotations

import importlib.metadata as md
import types
from pathlib import Path
from typing import Any

import pytest
from hearthside import hookimpl
from hearthside.core.contributions import (
    ContributionError,
    McpServerContribution,
    SecretNeed,
    validate_mcp_contribution,
)
from hearthside.core.tools import FunctionTool
from hearthside.pluginhost.host import Candidate, PackHost, RegistrationError


def plugin(**hooks: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{k: hookimpl(v) for k, v in hooks.items()})


def load(host: PackHost, name: str, obj: object) -> Any:
    mod = types.ModuleType(f"hs_test_plugin_{name}")
    mod.OBJ = obj  # type: ignore[attr-defined]
    import sys

    sys.modules[mod.__name__] = mod
    ep = md.EntryPoint(name, f"{mod.__name__}:OBJ", "hearthside.plugins")
    [report] = host.load([Candidate(ep, f"dist-{name}", "1.0", "packs")])
    return report


def tool(name: str) -> FunctionTool:
    return FunctionTool(name, "d", lambda: "x")


def test_register_after_the_hook_returned_is_refused() -> None:
    kept: list[Any] = []
    host = PackHost()
    r = load(host, "late", plugin(hearthside_tools=lambda register: kept.append(register)))
    assert r.status == "ok"
    with pytest.raises(RegistrationError, match="after its hook returned"):
        kept[0](tool("Late"))
    assert "Late" not in host.tools


def test_a_pack_that_swallows_the_registration_error_still_fails() -> None:
    def hook(register: Any) -> None:
        register(tool("Fine"))
        try:
            register(object())
        except RegistrationError:
            pass

    host = PackHost()
    r = load(host, "sly", plugin(hearthside_tools=hook))
    assert r.status == "failed" and "not one" in r.error
    assert host.tools == {}


@pytest.mark.parametrize("name,needle", [("Bad Name", "invalid"), ("Skill", "reserved"),
                                         ("mcp__x__y", "reserved"), ("x" * 65, "invalid"),
                                         ("memory_recall", "reserved")])
def test_bad_or_reserved_tool_names_fail_the_pack(name: str, needle: str) -> None:
    r = load(PackHost(), "names", plugin(hearthside_tools=lambda register: register(tool(name))))
    assert r.status == "failed" and needle in r.error


def test_the_same_tool_twice_in_one_pack_fails_it() -> None:
    def hook(register: Any) -> None:
        register(tool("Twice"))
        register(tool("Twice"))

    r = load(PackHost(), "twice", plugin(hearthside_tools=hook))
    assert r.status == "failed" and "twice" in r.error


def test_a_failed_pack_leaves_no_contribution_behind() -> None:
    def tools(register: Any) -> None:
        register(tool("Kept"))

    def servers(register: Any) -> None:
        raise RuntimeError("late failure")

    host = PackHost()
    r = load(host, "half", plugin(hearthside_tools=tools, hearthside_mcp_servers=servers))
    assert r.status == "failed" and "hearthside_mcp_servers" in r.error
    assert host.tools == {} and r.contributes["tools"] == []


def test_an_unknown_hook_fails_the_pack_as_needing_a_newer_hearthside() -> None:
    r = load(PackHost(), "future", plugin(hearthside_agents=lambda register: None))
    assert r.status == "failed" and "hearthside_agents" in r.error and "newer" in r.error


def test_skills_must_be_an_existing_folder(tmp_path: Path) -> None:
    r = load(PackHost(), "s1", plugin(hearthside_skills=lambda register: register(tmp_path / "nope")))
    assert r.status == "failed" and "does not exist" in r.error
    r = load(PackHost(), "s2", plugin(hearthside_skills=lambda register: register(42)))
    assert r.status == "failed" and "folder path" in r.error


def test_a_provider_needs_a_name_and_search() -> None:
    r = load(PackHost(), "p", plugin(hearthside_search_providers=lambda register: register(object())))
    assert r.status == "failed" and "search provider" in r.error


def test_the_settings_argument_is_a_read_only_view() -> None:
    seen: dict[str, Any] = {}

    def hook(register: Any, settings: Any) -> None:
        seen["v"] = settings.get("files.workspace", "none")
        seen["set"] = hasattr(settings, "set")

    from hearthside.pluginhost.host import ReadOnlySettings

    host = PackHost(ReadOnlySettings(lambda k, d=None: {"files.workspace": "/w"}.get(k, d)))
    assert load(host, "st", plugin(hearthside_tools=hook)).status == "ok"
    assert seen == {"v": "/w", "set": False}


def test_an_invalid_mcp_server_fails_the_pack_with_the_reason() -> None:
    bad = McpServerContribution("a__b", {"url": "https://x.org"})
    r = load(PackHost(), "m", plugin(hearthside_mcp_servers=lambda register: register(bad)))
    assert r.status == "failed" and "'__'" in r.error


@pytest.mark.parametrize("obj,needle", [
    ({"name": "x"}, "expected an McpServerContribution"),
    (McpServerContribution("x", {"command": "a", "url": "https://x"}), "exactly one"),
    (McpServerContribution("x", {}), "exactly one"),
    (McpServerContribution("x", {"command": ""}), "non-empty"),
    (McpServerContribution("x", {"command": "a", "args": "b"}), "list of strings"),
    (McpServerContribution("x", {"url": "ftp://x"}), "http(s) URL"),
    (McpServerContribution("x", {"url": "https://x", "headers": {"A": 1}}), "strings"),
    (McpServerContribution("x", {"url": "https://x", "extra": 1}), "unknown config keys"),
    (McpServerContribution("x", {"url": "https://x"}, (SecretNeed("TOKEN", "", "env"),)), "does not fit"),
    (McpServerContribution("x", {"command": "a"}, (SecretNeed("", "", "env"),)), "needs a key"),
    (McpServerContribution("-x", {"command": "a"}), "invalid"),
])
def test_mcp_contribution_validation(obj: object, needle: str) -> None:
    with pytest.raises(ContributionError, match=None) as exc:
        validate_mcp_contribution(obj, "p")
    assert needle in str(exc.value)


def test_a_valid_mcp_contribution_is_copied_and_stamped() -> None:
    cfg = {"command": "srv", "args": ["--x"], "env": {"A": "1"}}
    c = validate_mcp_contribution(
        McpServerContribution("files", cfg, (SecretNeed("API_TOKEN", "token", "env"),)), "mypack")
    cfg["args"].append("mutated")
    assert c.pack == "mypack" and c.config["args"] == ["--x"] and c.transport == "stdio"


def test_the_constraints_pin_hearthside_and_its_libraries_at_running_versions() -> None:
    import pluggy
    from hearthside import __version__
    from hearthside.pluginhost.installer import host_constraints

    lines = host_constraints(__version__).splitlines()
    assert lines[0] == f"hearthside=={__version__}"
    assert f"pluggy=={pluggy.__version__}" in lines
    names = {ln.split("==")[0] for ln in lines}
    assert not names & {"pip", "setuptools", "wheel"}
    assert not any(n.startswith("hearthside-") for n in names)


def test_a_provider_or_server_name_another_pack_has_fails_the_second_pack() -> None:
    class Provider:
        name = "websearch"

        async def search(self, query: Any) -> list[Any]:
            return []

    server = McpServerContribution("notes", {"url": "https://notes.example.org/mcp"})
    host = PackHost()
    first = load(host, "first", plugin(
        hearthside_search_providers=lambda register: register(Provider()),
        hearthside_mcp_servers=lambda register: register(server)))
    assert first.status == "ok"
    second = load(host, "second", plugin(hearthside_search_providers=lambda register: register(Provider())))
    assert second.status == "failed" and "'websearch'" in second.error and "'first'" in second.error
    third = load(host, "third", plugin(hearthside_mcp_servers=lambda register: register(server)))
    assert third.status == "failed" and "'notes'" in third.error and "'first'" in third.error
    assert host.providers["websearch"][1] == "first" and host.servers["notes"].pack == "first"


def test_keyboard_interrupt_in_a_hook_disables_only_that_pack() -> None:
    def hook(register: Any) -> None:
        raise KeyboardInterrupt

    host = PackHost()
    bad = load(host, "kbd", plugin(hearthside_tools=hook))
    assert bad.status == "failed" and "KeyboardInterrupt" in bad.error
    assert load(host, "after", plugin(hearthside_tools=lambda register: register(tool("After")))).status == "ok"


def test_every_built_in_memory_tool_name_is_reserved_for_hearthside() -> None:
    from hearthside.core.hosttools import MEMORY_TOOL_NAMES, RESERVED_TOOL_NAMES
    from hearthside.core.memory.tools import memory_tools

    class NoStore:
        """memory_tools only keeps the store; building the specs never touches it."""

    names = {t.spec.name for t in memory_tools(NoStore())}  # type: ignore[arg-type]
    assert names == MEMORY_TOOL_NAMES and names <= RESERVED_TOOL_NAMES


def test_a_tool_whose_execute_is_not_async_fails_the_pack() -> None:
    class SyncTool:
        read_only = True

        @property
        def spec(self) -> Any:
            from hearthside.core.tools import ToolSpec

            return ToolSpec("SyncTool", "d")

        def execute(self, args: Any, env: Any) -> str:
            return "x"

    r = load(PackHost(), "sync", plugin(hearthside_tools=lambda register: register(SyncTool())))
    assert r.status == "failed" and "async" in r.error
