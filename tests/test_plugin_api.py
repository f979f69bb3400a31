"""The plugin API (hearthside.plugin): the one import surface for pack authors.

- the first-party packs import nothing from Hearthside but ``hearthside.plugin``;
- the surface exports what a pack needs, and the hook names come from one table;
- ``optionalhook`` lets a pack implement a hook a given Hearthside does not have.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import sys
import types
from pathlib import Path
from typing import Any

import hearthside.plugin as api
from hearthside.pluginhost import specs
from hearthside.pluginhost.host import Candidate, PackHost, PackReport

ROOT = Path(__file__).resolve().parents[1]
PACK_SOURCES = sorted(p for p in (ROOT / "plugins").glob("*/hearthside_*/**/*.py"))


def _hearthside_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "hearthside"}
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and node.module.split(".")[0] == "hearthside"):
            names.add(node.module)
    return names


def test_first_party_packs_import_only_the_plugin_api() -> None:
    """On the old code hearthside-files imported hearthside.core.tools and core.boundedread."""
    assert len(PACK_SOURCES) >= 6
    bad = {str(p.relative_to(ROOT)): sorted(n for n in _hearthside_imports(p) if n != "hearthside.plugin")
           for p in PACK_SOURCES}
    assert {k: v for k, v in bad.items() if v} == {}
    assert any("hearthside.plugin" in _hearthside_imports(p) for p in PACK_SOURCES)


def test_the_surface_exports_what_it_lists_and_a_version() -> None:
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    major, minor = api.PLUGIN_API_VERSION.split(".")
    assert major.isdigit() and minor.isdigit()
    assert api.hookimpl is specs.hookimpl  # the marker the host checks against


def test_the_hook_specs_are_typed_with_the_plugin_apis_own_types_and_say_when_they_run() -> None:
    """Issue 19 item 6: no ``Any`` in the contract; each hook says when it is called, what it
    receives and what it may do (pytest's hookspec module is the model)."""
    import typing

    register_of = {"tools": api.RegisterTool, "skills": api.RegisterSkills,
                   "providers": api.RegisterSearchProvider, "servers": api.RegisterMcpServer,
                   "commands": api.RegisterCommand, "forms": api.RegisterSettingsForm}
    for h in specs.HOOKS:
        fn = getattr(specs, h.hook)
        hints = typing.get_type_hints(fn)
        assert hints == {"register": register_of[h.kind], "settings": api.PackSettings, "return": type(None)}, h
        doc = fn.__doc__ or ""
        assert "Called once per process" in doc and ":param register:" in doc and ":param settings:" in doc, h
        assert "raising disables the pack" in doc, h


def test_the_hook_names_come_from_one_table() -> None:
    assert api.HOOK_NAMES == specs.HOOK_NAMES == tuple(h.hook for h in specs.HOOKS)
    for h in specs.HOOKS:  # every row has its spec, and its validator in the host
        assert callable(getattr(specs, h.hook))
    assert set(PackReport("x", "x", "1").contributes) == {h.kind for h in specs.HOOKS}
    assert not hasattr(PackHost(), "skill_sources")


def _load(host: PackHost, name: str, obj: object) -> PackReport:
    mod = types.ModuleType(f"hs_api_test_{name}")
    mod.OBJ = obj  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    ep = md.EntryPoint(name, f"{mod.__name__}:OBJ", "hearthside.plugins")
    [report] = host.load([Candidate(ep, f"dist-{name}", "1.0", "packs")])
    return report


def test_an_optional_hook_this_hearthside_lacks_is_skipped_not_fatal() -> None:
    def tools(register: api.RegisterTool) -> None:
        register(api.FunctionTool("ApiTool", "Echo.", lambda: "ok"))

    def future() -> Any:  # a fresh function each time: the marker is set on the function
        def hook(register: Any) -> None:
            raise AssertionError("never called")
        return hook

    optional = types.SimpleNamespace(hearthside_tools=api.hookimpl(tools),
                                     hearthside_from_the_future=api.hookimpl(optionalhook=True)(future()))
    required = types.SimpleNamespace(hearthside_tools=api.hookimpl(tools),
                                     hearthside_from_the_future=api.hookimpl(future()))
    ok = _load(PackHost(), "optional", optional)
    assert ok.status == "ok" and ok.contributes["tools"] == ["ApiTool"]
    failed = _load(PackHost(), "required", required)
    assert failed.status == "failed" and "may need a newer Hearthside" in failed.error


def test_read_bounded_is_the_packs_bounded_reader(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_bytes(b"x" * 100)
    got = api.read_bounded(f, 10)
    assert isinstance(got, api.BoundedRead) and got.over_cap and got.data is not None
