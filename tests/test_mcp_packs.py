"""MCP servers contributed by plugin packs: listed with their declared secret needs, their
secrets entered into the keyring, connected like the user's own."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator

import pytest
from hearthside.app.mcp import McpService
from hearthside.app.runtime import Runtime
from hearthside.core.contributions import McpServerContribution, SecretNeed
from hearthside.core.mcpconfig import McpConfigError, ServerConfig
from hearthside.core.tools import ToolEnv
from mcp_helpers import stdio_command

pytestmark = pytest.mark.keyring


@pytest.fixture
def service(app_context, secret_service) -> Iterator[McpService]:  # type: ignore[no-untyped-def]
    cmd, args = stdio_command()
    contribs = [
        McpServerContribution("packed", {"command": cmd, "args": args, "env": {"MODE": "demo"}},
                              (SecretNeed("PACK_TOKEN", "Your Example API token", "env"),), pack="example-pack",
                              description="An example server from a pack"),
        McpServerContribution("web", {"url": "https://mcp.example.com/mcp", "headers": {}},
                              (SecretNeed("Authorization", "Bearer token from example.com"),), pack="web-pack"),
    ]
    yield McpService(app_context.paths, lambda: app_context.secrets, contributions=lambda: contribs)


def test_pack_servers_are_listed_with_their_secret_needs(service: McpService) -> None:
    entries = {e.config.name: e for e in service.entries()}
    assert set(entries) == {"packed", "web"}
    packed = entries["packed"]
    assert packed.config.source == "pack:example-pack"
    assert packed.description == "An example server from a pack"
    (need,) = packed.secrets
    assert (need.key, need.kind, need.is_set, need.description) == (
        "PACK_TOKEN", "env", False, "Your Example API token")
    assert entries["web"].secrets[0].kind == "header"


def test_pack_server_secret_goes_to_the_keyring_and_reaches_the_child(service: McpService) -> None:
    secret = f"pack-secret-{uuid.uuid4().hex}"
    service.set_secret("packed", "PACK_TOKEN", secret)
    assert {e.config.name: e for e in service.entries()}["packed"].secrets[0].is_set is True
    with pytest.raises(McpConfigError, match="does not declare"):
        service.set_secret("packed", "OTHER_TOKEN", "x" * 10)
    with pytest.raises(McpConfigError, match="plugin pack"):
        service.remove("packed")
    assert not service.paths.mcp_file.exists()  # pack servers are never written to mcp.json
    rt = Runtime(name="pack-runtime")
    try:
        statuses = {s.name: s for s in rt.run(service.connect_all(), timeout=60)}
        assert statuses["packed"].state == "connected", statuses["packed"].reason
        assert statuses["web"].state == "failed" and "set-secret web Authorization" in statuses["web"].told
        tool = next(t for t in service.tools() if t.spec.name == "mcp__packed__env_digest")
        got = rt.run(tool.execute({"name": "PACK_TOKEN"}, ToolEnv()), timeout=30).content
        assert got == hashlib.sha256(secret.encode()).hexdigest()
        names = json.loads(rt.run(next(t for t in service.tools() if t.spec.name == "mcp__packed__env_names")
                                  .execute({}, ToolEnv()), timeout=30).content)
        assert "MODE" in names
    finally:
        rt.run(service.close(), timeout=30)
        rt.stop()
        service.store.delete("mcp/packed/env/PACK_TOKEN")


def test_a_users_server_with_the_same_name_wins_over_a_pack(service: McpService) -> None:
    service.add(ServerConfig("web", "http", url="https://mine.example.com/mcp"))
    webs = [s for s in service.servers() if s.name == "web"]
    assert len(webs) == 1 and webs[0].source == "user"
