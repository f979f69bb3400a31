"""MCP Bundles (``.mcpb``): real bundles built here, installed, connected, called and removed,
with the real keyring; and the bundles that must be refused with nothing half-added."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hearthside.adapters.secrets import KeyringSecretStore
from hearthside.app.mcp import McpService
from hearthside.app.mcpb import BundleError, bundles_dir
from hearthside.app.runtime import Runtime
from hearthside.core.mcpconfig import ServerConfig
from hearthside.core.secrets import SecretStoreError
from hearthside.core.tools import ToolEnv
from mcp_helpers import mcp_file, secret_key

pytestmark = pytest.mark.keyring

#: A Python MCP server on the SDK: greets with a plain setting, proves the sensitive one arrived.
PY_SERVER = '''
import hashlib, os, sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("bundled")

@app.tool()
def greet(name: str) -> str:
    """Greet someone with the configured greeting."""
    return f"{os.environ.get('GREETING', '?')}, {name} (from {os.path.basename(os.getcwd())})"

@app.tool()
def key_digest() -> str:
    """The sha256 of the API key this server was given."""
    return hashlib.sha256(os.environ.get("API_KEY", "").encode()).hexdigest()

app.run("stdio")
'''

#: A Node MCP server without dependencies: newline-delimited JSON-RPC over stdio.
NODE_SERVER = r'''
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const tools = [{ name: "shout", description: "Upper-case the text.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } }];
rl.on("line", (line) => {
  let m; try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: "noder", version: "1.0.0" } } });
  } else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools } });
  } else if (m.method === "tools/call") {
    const text = String(m.params.arguments.text) + (process.env.SUFFIX || "");
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: text.toUpperCase() }] } });
  } else if (m.method === "ping") {
    send({ jsonrpc: "2.0", id: m.id, result: {} });
  } else {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
'''


def py_manifest(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "manifest_version": "0.3",
        "name": "greeter",
        "display_name": "Greeter",
        "version": "1.2.0",
        "description": "Greets people",
        "author": {"name": "Test"},
        "server": {
            "type": "python",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "python3",
                "args": ["${__dirname}/server/main.py"],
                "env": {"API_KEY": "${user_config.api_key}", "GREETING": "${user_config.greeting}"},
            },
        },
        "user_config": {
            "api_key": {"type": "string", "title": "API key", "description": "Your key", "sensitive": True,
                        "required": True},
            "greeting": {"type": "string", "title": "Greeting", "default": "hello"},
        },
        "compatibility": {"platforms": ["darwin", "win32", "linux"], "runtimes": {"python": ">=3.10"}},
    }
    doc.update(extra)
    return doc


def build(path: Path, manifest: dict[str, Any] | None, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        if manifest is not None:
            zf.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def venv_path() -> dict[str, str]:
    """PATH with this test's Python first, so the bundle's ``python3`` is one with the mcp SDK."""
    return {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def call(service: McpService, tool: str, args: dict[str, Any]) -> str:
    rt = Runtime(name="mcpb-test")
    try:
        statuses = {s.name: s for s in rt.run(service.connect_all(), timeout=90)}
        server = tool.split("__")[1]
        assert statuses[server].state == "connected", statuses[server].reason
        t = next(t for t in service.tools() if t.spec.name == tool)
        return str(rt.run(t.execute(args, ToolEnv()), timeout=60).content)
    finally:
        rt.run(service.close(), timeout=30)
        rt.stop()


@pytest.fixture
def service(app_context, secret_service) -> Iterator[McpService]:  # type: ignore[no-untyped-def]
    yield McpService(app_context.paths, lambda: app_context.secrets)


@pytest.mark.slow
def test_a_python_bundle_installs_connects_calls_and_is_removed_with_its_folder_and_secret(  # type: ignore[no-untyped-def]
    run_cli, service: McpService, isolated_home: Path, tmp_path: Path
) -> None:
    key = f"sk-bundle-{uuid.uuid4().hex}"
    bundle = build(tmp_path / "greeter.mcpb", py_manifest(), {"server/main.py": PY_SERVER})
    done = run_cli("mcp", "install", str(bundle), "--set", "greeting=hi", input=key + "\n", env=venv_path())
    assert done.returncode == 0, done.stderr
    assert "installed MCP server greeter (Greeter 1.2.0)" in done.stdout and key not in done.stdout + done.stderr

    folder = bundles_dir(service.paths.data_dir) / "greeter"
    assert (folder / "manifest.json").is_file() and (folder / "server" / "main.py").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    text = mcp_file(isolated_home).read_text()
    assert key not in text
    entry = json.loads(text)["servers"]["greeter"]
    assert entry["env"]["API_KEY"] == {"secret": "mcp/greeter/env/API_KEY"} and entry["env"]["GREETING"] == "hi"
    assert entry["args"] == [str(folder / "server" / "main.py")] and entry["cwd"] == str(folder)
    stored_as = secret_key(mcp_file(isolated_home), "mcp/greeter/env/API_KEY")
    assert KeyringSecretStore().get(stored_as) == key

    tools = run_cli("mcp", "tools", "greeter", "--json")
    assert tools.returncode == 0, tools.stderr
    assert {t["name"] for t in json.loads(tools.stdout)} == {"mcp__greeter__greet", "mcp__greeter__key_digest"}
    assert call(service, "mcp__greeter__greet", {"name": "Ada"}) == "hi, Ada (from greeter)"
    assert call(service, "mcp__greeter__key_digest", {}) == hashlib.sha256(key.encode()).hexdigest()

    again = run_cli("mcp", "install", str(bundle), input=key + "\n", env=venv_path())
    assert again.returncode == 1 and "already exists" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1

    gone = run_cli("mcp", "remove", "greeter")
    assert gone.returncode == 0, gone.stderr
    assert not folder.exists()
    assert KeyringSecretStore().get(stored_as) is None
    assert json.loads(mcp_file(isolated_home).read_text())["servers"] == {}


@pytest.mark.slow
def test_a_node_bundle_installs_connects_and_calls(  # type: ignore[no-untyped-def]
    run_cli, service: McpService, tmp_path: Path
) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed on this machine, so a Node bundle cannot run")
    manifest = {
        "manifest_version": "0.2", "name": "noder", "version": "1.0.0", "description": "d",
        "author": {"name": "T"},
        "server": {"type": "node", "entry_point": "server/index.js",
                   "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"],
                                  "env": {"SUFFIX": "${user_config.suffix}"}}},
        "user_config": {"suffix": {"type": "string", "title": "Suffix", "required": True}},
        "compatibility": {"runtimes": {"node": ">=12.0.0"}},
    }
    bundle = build(tmp_path / "noder.mcpb", manifest, {"server/index.js": NODE_SERVER})
    done = run_cli("mcp", "install", str(bundle), "--name", "shouty", "--set", "suffix=!")
    assert done.returncode == 0, done.stderr
    assert service.get("shouty").command == shutil.which("node")
    assert call(service, "mcp__shouty__shout", {"text": "hey"}) == "HEY!"
    assert run_cli("mcp", "remove", "shouty").returncode == 0
    assert not (bundles_dir(service.paths.data_dir) / "shouty").exists()


def _nothing_added(service: McpService) -> None:
    assert not service.paths.mcp_file.exists() or not json.loads(service.paths.mcp_file.read_text())["servers"]
    root = bundles_dir(service.paths.data_dir)
    assert not root.exists() or not list(root.iterdir())


def _install(service: McpService, path: Path, values: dict[str, str] | None = None, name: str | None = None) -> Any:
    bundle, runtime, notes = service.bundles.inspect(path, name)
    return service.bundles.install(bundle, runtime, values or {}), notes


def test_not_a_zip_is_refused_in_one_sentence(service: McpService, tmp_path: Path) -> None:
    bad = tmp_path / "x.mcpb"
    bad.write_text("not a zip at all")
    with pytest.raises(BundleError, match=r"^x.mcpb is not an MCP bundle \(it is not a zip file\)$"):
        _install(service, bad)
    _nothing_added(service)


def test_a_zip_bomb_is_refused_before_anything_is_unpacked(service: McpService, tmp_path: Path) -> None:
    bomb = build(tmp_path / "bomb.mcpb", py_manifest(), {"server/main.py": PY_SERVER,
                                                          "server/data.bin": b"\0" * (64 * 1024 * 1024)})
    with pytest.raises(BundleError, match="zip bomb"):
        _install(service, bomb, {"api_key": "k-123456789"})
    _nothing_added(service)


@pytest.mark.parametrize("member", ["../evil.py", "/etc/evil.py", "server/../../evil.py", "C:/evil.py",
                                    "a\\..\\evil.py"])
def test_paths_out_of_the_folder_are_refused(service: McpService, tmp_path: Path, member: str) -> None:
    bundle = build(tmp_path / "b.mcpb", py_manifest(), {"server/main.py": PY_SERVER, member: "x"})
    with pytest.raises(BundleError, match="unsafe path"):
        _install(service, bundle, {"api_key": "k-123456789"})
    _nothing_added(service)
    assert not (tmp_path / "evil.py").exists()


def test_a_symbolic_link_member_is_refused(service: McpService, tmp_path: Path) -> None:
    path = build(tmp_path / "l.mcpb", py_manifest(), {"server/main.py": PY_SERVER})
    with zipfile.ZipFile(path, "a") as zf:
        info = zipfile.ZipInfo("server/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(BundleError, match="symbolic link"):
        _install(service, path, {"api_key": "k-123456789"})
    _nothing_added(service)


def test_a_missing_entry_point_is_refused(service: McpService, tmp_path: Path) -> None:
    bundle = build(tmp_path / "e.mcpb", py_manifest(), {"server/other.py": PY_SERVER})
    with pytest.raises(BundleError, match="entry point 'server/main.py' is not in the bundle"):
        _install(service, bundle, {"api_key": "k-123456789"})
    _nothing_added(service)


def test_unknown_manifest_fields_are_noted_and_the_bundle_still_installs(  # type: ignore[no-untyped-def]
    service: McpService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    bundle = build(tmp_path / "u.mcpb", py_manifest(sparkles={"x": 1}), {"server/main.py": PY_SERVER})
    (added, _), notes = _install(service, bundle, {"api_key": "k-123456789"})
    assert any("'sparkles'" in n and "ignored" in n for n in notes)
    assert added.name == "greeter" and service.get("greeter").transport == "stdio"
    service.remove("greeter")
    _nothing_added(service)


def test_a_name_that_is_taken_is_refused_and_nothing_is_half_added(  # type: ignore[no-untyped-def]
    service: McpService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    service.add(ServerConfig("greeter", "http", url="https://h.example/mcp"))
    before = service.paths.mcp_file.read_text()
    bundle = build(tmp_path / "g.mcpb", py_manifest(), {"server/main.py": PY_SERVER})
    with pytest.raises(BundleError, match=r"^a server named 'greeter' already exists, so the bundle was not "
                                          r"installed: remove that one first or give another name with --name$"):
        _install(service, bundle, {"api_key": "k-123456789"})
    assert service.paths.mcp_file.read_text() == before
    root = bundles_dir(service.paths.data_dir)
    assert not root.exists() or not list(root.iterdir())


def test_another_platform_and_a_missing_runtime_are_named(  # type: ignore[no-untyped-def]
    service: McpService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = build(tmp_path / "o.mcpb", py_manifest(compatibility={"platforms": ["plan9"]}),
                  {"server/main.py": PY_SERVER})
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    with pytest.raises(BundleError, match="made for plan9, not for"):
        _install(service, other, {"api_key": "k-123456789"})
    node = build(tmp_path / "n.mcpb", {
        "manifest_version": "0.4", "name": "n", "version": "1", "description": "d", "author": {"name": "T"},
        "server": {"type": "node", "entry_point": "i.js",
                   "mcp_config": {"command": "node", "args": ["${__dirname}/i.js"]}}}, {"i.js": NODE_SERVER})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BundleError, match=r"runs with node, which is not installed here: install Node\.js"):
        _install(service, node)
    _nothing_added(service)


def test_a_too_old_python_is_refused(service: McpService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    bundle = build(tmp_path / "p.mcpb", py_manifest(compatibility={"runtimes": {"python": ">=99.0"}}),
                   {"server/main.py": PY_SERVER})
    with pytest.raises(BundleError, match=r"needs python >=99\.0, but .* is version 3\."):
        _install(service, bundle, {"api_key": "k-123456789"})
    _nothing_added(service)


class LockedKeyring:
    """A keyring that is locked: reading works, storing is refused (as a locked GNOME keyring does)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def get(self, ref: str) -> str | None:
        return self.real.get(ref)  # type: ignore[no-any-return]

    def set(self, ref: str, value: str) -> None:
        raise SecretStoreError("the keyring is locked")

    def delete(self, ref: str) -> None:
        self.real.delete(ref)


def test_a_keyring_failure_after_unpacking_leaves_no_folder_and_no_server(  # type: ignore[no-untyped-def]
    app_context, secret_service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    locked = McpService(app_context.paths, lambda: LockedKeyring(app_context.secrets))
    bundle = build(tmp_path / "f.mcpb", py_manifest(), {"server/main.py": PY_SERVER})
    with pytest.raises(SecretStoreError, match="locked"):
        _install(locked, bundle, {"api_key": "k-123456789"})
    _nothing_added(locked)


def test_a_required_setting_missing_is_refused(service: McpService, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", venv_path()["PATH"])
    bundle = build(tmp_path / "r.mcpb", py_manifest(), {"server/main.py": PY_SERVER})
    with pytest.raises(BundleError, match="'api_key' .* is required"):
        _install(service, bundle, {})
    _nothing_added(service)


def test_a_binary_bundle_runs_its_entry_point_even_from_a_zip_without_modes(  # type: ignore[no-untyped-def]
    service: McpService, tmp_path: Path
) -> None:
    launcher = f"#!/bin/sh\nexec {sys.executable} \"$(dirname \"$0\")/main.py\"\n"
    manifest = {"manifest_version": "0.3", "name": "bin", "version": "1", "description": "d", "author": {"name": "T"},
                "server": {"type": "binary", "entry_point": "server/run",
                           "mcp_config": {"command": "${__dirname}/server/run", "args": []}},
                "compatibility": {"platforms": ["linux", "darwin"]}}
    if sys.platform not in ("linux", "darwin"):
        pytest.skip("the launcher is a shell script")
    bundle = build(tmp_path / "bin.mcpb", manifest, {"server/run": launcher, "server/main.py": PY_SERVER})
    (added, _), _ = _install(service, bundle)
    folder = bundles_dir(service.paths.data_dir) / "bin"
    assert added.command == str(folder / "server" / "run") and os.access(added.command, os.X_OK)
    assert call(service, "mcp__bin__greet", {"name": "Bo"}) == "?, Bo (from bin)"
    service.remove("bin")
    assert not folder.exists()
