"""MCP sessions against real servers on 127.0.0.1 (the SDK's MCPServer over streamable HTTP
and stdio) and raw misbehaving HTTP servers, with secrets in the real GNOME Keyring."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hearthside.adapters.mcp_client import SAFE_ENV_KEYS, McpConnection, OriginBoundTransport
from hearthside.app.mcp import McpService
from hearthside.app.runtime import Runtime
from hearthside.core.errors import ErrorKind
from hearthside.core.mcpconfig import McpConfigError, SecretRef, ServerConfig, origin_of
from hearthside.core.tools import Catalog, ToolEnv
from mcp_helpers import HttpServerProcess, RawServer, stdio_command

pytestmark = pytest.mark.keyring

TOKEN = "Bearer client-test-token-7Qx9"


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    rt = Runtime(name="test-runtime")
    yield rt
    rt.stop()


@pytest.fixture
def service(app_context, secret_service) -> Iterator[McpService]:  # type: ignore[no-untyped-def]
    svc = McpService(app_context.paths, lambda: app_context.secrets, ping_interval=0.3, backoff=(0.2, 1.0))
    yield svc


def names(tools: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(t.spec.name for t in tools)


def test_http_server_with_keyring_secret_connects_on_the_runtime_thread(
    service: McpService, runtime: Runtime, tmp_path: Path
) -> None:
    with HttpServerProcess(require_header=("Authorization", TOKEN), secret_dir=tmp_path) as srv:
        service.add(ServerConfig("demo", "http", url=srv.url, timeout=10), {"Authorization": TOKEN})
        statuses = runtime.run(service.connect_all(), timeout=60)
        try:
            assert [(s.name, s.state) for s in statuses] == [("demo", "connected")]
            tools = {t.spec.name: t for t in service.tools()}
            assert set(tools) == {"mcp__demo__echo", "mcp__demo__write_note", "mcp__demo__env_digest",
                                  "mcp__demo__env_names", "mcp__demo__pid", "mcp__demo__nap"}
            assert tools["mcp__demo__echo"].read_only is True
            assert tools["mcp__demo__write_note"].read_only is False
            result = runtime.run(tools["mcp__demo__echo"].execute({"text": "hello"}, ToolEnv()), timeout=30)
            assert result.content == "hello" and not result.is_error
            cat = Catalog()
            service.register_into(cat)
            assert cat.source_of("mcp__demo__echo") == "mcp:demo" and len(cat) == 6
        finally:
            runtime.run(service.close(), timeout=30)


def test_server_that_never_answers_times_out_while_the_others_keep_working(
    service: McpService, runtime: Runtime
) -> None:
    with HttpServerProcess() as good, RawServer("silent") as silent:
        service.add(ServerConfig("silent", "http", url=silent.url, timeout=1.5))
        service.add(ServerConfig("good", "http", url=good.url, timeout=10))
        try:
            statuses = {s.name: s for s in runtime.run(service.connect_all(), timeout=60)}
            assert statuses["silent"].state == "failed"
            assert "timed out after 1.5 s" in statuses["silent"].reason
            assert statuses["good"].state == "connected"
            echo = next(t for t in service.tools() if t.spec.name == "mcp__good__echo")
            assert runtime.run(echo.execute({"text": "still here"}, ToolEnv()), timeout=30).content == "still here"
            assert not any(t.spec.name.startswith("mcp__silent__") for t in service.tools())
        finally:
            runtime.run(service.close(), timeout=30)


def test_server_answering_401_fails_with_an_authentication_reason(service: McpService, runtime: Runtime) -> None:
    with RawServer("401") as srv:
        service.add(ServerConfig("locked", "http", url=srv.url, timeout=10), {"Authorization": TOKEN})
        try:
            (status,) = runtime.run(service.connect_all(), timeout=60)
            assert status.state == "failed"
            assert "authentication" in status.reason and "401" in status.reason
            assert status.kind is ErrorKind.AUTHENTICATION
            # the command-line advice is kept apart from the sentence; the CLI says both
            assert "set-secret" not in status.reason and "set-secret locked Authorization" in status.advice
            assert status.told == status.reason + status.advice
            assert srv.requests and srv.requests[0]["authorization"] == TOKEN  # sent to its own origin
        finally:
            runtime.run(service.close(), timeout=30)


def test_redirect_to_another_port_never_carries_the_secret_there(service: McpService, runtime: Runtime) -> None:
    with RawServer("record") as other, RawServer("redirect", location="") as first:
        first.location = other.url
        service.add(ServerConfig("hop", "http", url=first.url, timeout=15), {"Authorization": TOKEN})
        try:
            (status,) = runtime.run(service.connect_all(), timeout=60)
        finally:
            runtime.run(service.close(), timeout=30)
        assert status.state == "failed"
        assert first.requests and first.requests[0]["authorization"] == TOKEN
        # Nothing at all, so no secret, reached the other port: the cross-origin redirect was not
        # followed. (The next test has a client that does follow one; the secret still stays.)
        assert other.requests == []


def test_origin_bound_transport_drops_secrets_even_when_a_client_follows_the_redirect() -> None:
    import httpx2

    async def go(first: RawServer, other: RawServer) -> int:
        transport = OriginBoundTransport(origin_of(first.url), {"Authorization": TOKEN})
        async with httpx2.AsyncClient(transport=transport, follow_redirects=True,
                                      headers={"X-Api-Key": "default-header-secret"}) as client:
            resp = await client.post(first.url, json={})
            return resp.status_code

    with RawServer("record") as other, RawServer("redirect") as first:
        first.location = other.url
        code = asyncio.run(asyncio.wait_for(go(first, other), 30))
        assert code == 401  # the recording server answered: the redirect was followed
        assert first.requests[0]["authorization"] == TOKEN
        assert other.requests, "the redirect target got no request"
        for r in other.requests:
            assert "authorization" not in r and "x-api-key" not in r


@pytest.mark.slow
def test_server_listing_a_thousand_tools_registers_all_of_them(service: McpService, runtime: Runtime) -> None:
    with HttpServerProcess(tools=1000) as srv:
        service.add(ServerConfig("big", "http", url=srv.url, timeout=60))
        try:
            (status,) = runtime.run(service.connect_all(), timeout=120)
            assert status.state == "connected" and status.tools == 1006
            cat = Catalog()
            service.register_into(cat)
            assert len(cat) == 1006
            assert cat.source_of("mcp__big__bulk_0999") == "mcp:big"
            tool = cat.lookup("mcp__big__bulk_0500")
            assert tool is not None
            assert runtime.run(tool.execute({"x": 7}, ToolEnv()), timeout=30).content == "tool 500: 7"
        finally:
            runtime.run(service.close(), timeout=30)


def test_stdio_child_gets_only_its_own_env_plus_the_safe_set(
    service: McpService, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTHSIDE_PARENT_ONLY", "must-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "parent-key-must-not-leak")
    secret = "stdio-env-secret-5521"
    cmd, args = stdio_command()
    service.add(ServerConfig("local", "stdio", command=cmd, args=tuple(args), env={"PLAIN": "1"}, timeout=20),
                {"API_TOKEN": secret})
    try:
        (status,) = runtime.run(service.connect_all(), timeout=60)
        assert status.state == "connected", status.reason
        tools = {t.spec.name: t for t in service.tools()}
        env_names = json.loads(runtime.run(tools["mcp__local__env_names"].execute({}, ToolEnv()), 30).content)
        # PWD: bubblewrap names the working folder it started the server in (not a credential)
        assert set(env_names) <= set(SAFE_ENV_KEYS) | {"PLAIN", "API_TOKEN", "PWD"}
        assert {"PLAIN", "API_TOKEN", "PATH"} <= set(env_names)
        digest = runtime.run(tools["mcp__local__env_digest"].execute({"name": "API_TOKEN"}, ToolEnv()), 30)
        assert digest.content == hashlib.sha256(secret.encode()).hexdigest()
        cfg_text = service.paths.mcp_file.read_text()
        assert secret not in cfg_text and "mcp/local/env/API_TOKEN" in cfg_text
    finally:
        runtime.run(service.close(), timeout=30)


def test_stdio_server_that_exits_at_once_fails_with_what_it_said(runtime: Runtime) -> None:
    cfg = ServerConfig("quits", "stdio", command=sys.executable,
                       args=("-c", "import sys; sys.stderr.write('missing config file\\n'); sys.exit(3)"),
                       timeout=20)
    conn = McpConnection(cfg, lambda ref: None, reconnect=False)

    async def go():  # type: ignore[no-untyped-def]
        try:
            return await conn.start()
        finally:
            await conn.close()

    status = runtime.run(go(), timeout=60)
    assert status.state == "failed"
    assert "exited" in status.reason and "missing config file" in status.reason


def test_stdio_command_that_does_not_exist_fails_with_a_reason(runtime: Runtime) -> None:
    cfg = ServerConfig("nope", "stdio", command="/nonexistent/hearthside-mcp-server", timeout=5)
    conn = McpConnection(cfg, lambda ref: None, reconnect=False)
    status = runtime.run(conn.start(), timeout=30)
    runtime.run(conn.close(), timeout=30)
    assert status.state == "failed" and "not found" in status.reason


@pytest.mark.slow
def test_killed_server_turns_failed_then_reconnects_when_it_returns(
    service: McpService, runtime: Runtime
) -> None:
    srv = HttpServerProcess().start()
    service.add(ServerConfig("flaky", "http", url=srv.url, timeout=10))
    try:
        (status,) = runtime.run(service.connect_all(), timeout=60)
        assert status.state == "connected"
        conn = service._connections["flaky"]
        srv.kill()
        status = runtime.run(conn.wait_for("failed", 30), timeout=40)
        assert status.state == "failed" and service.tools() == []
        srv.start()
        status = runtime.run(conn.wait_for("connected", 60), timeout=70)
        assert status.state == "connected"
        assert conn.attempts >= 2
        echo = next(t for t in service.tools() if t.spec.name == "mcp__flaky__echo")
        assert runtime.run(echo.execute({"text": "back"}, ToolEnv()), timeout=30).content == "back"
    finally:
        runtime.run(service.close(), timeout=30)
        srv.kill()


def test_server_whose_secret_was_never_entered_says_how_to_enter_it(
    service: McpService, runtime: Runtime
) -> None:
    cfg = ServerConfig("nokey", "http", url="http://127.0.0.1:9/mcp",
                       headers={"Authorization": SecretRef("mcp/nokey/header/authorization")}, timeout=5)
    service.save(service.load().with_server(cfg))
    try:
        (status,) = runtime.run(service.connect_all(), timeout=60)
        assert status.state == "failed"
        assert "not set" in status.reason and "hearthside mcp set-secret nokey Authorization" in status.told
        assert status.kind is ErrorKind.SECRET_MISSING and "hearthside" not in status.reason
    finally:
        runtime.run(service.close(), timeout=30)


def test_disabled_server_is_not_connected(service: McpService, runtime: Runtime) -> None:
    service.add(ServerConfig("off", "http", url="http://127.0.0.1:9/mcp", enabled=False))
    statuses = runtime.run(service.connect_all(), timeout=30)
    assert [(s.name, s.state) for s in statuses] == [("off", "disabled")]
    runtime.run(service.close(), timeout=30)


def test_secret_value_with_crlf_is_refused_and_not_stored(service: McpService) -> None:
    service.add(ServerConfig("crlf", "http", url="https://mcp.example.com/mcp"))
    with pytest.raises(McpConfigError, match="line break"):
        service.set_secret("crlf", "Authorization", "Bearer ok\r\nX-Evil: 1")
    assert service.store.get("mcp/crlf/header/authorization") is None
    assert "Authorization" not in service.paths.mcp_file.read_text()


def test_a_tool_called_from_another_event_loop_runs_on_the_session_loop(
    service: McpService, runtime: Runtime
) -> None:
    with HttpServerProcess() as srv:
        service.add(ServerConfig("loops", "http", url=srv.url, timeout=10))
        try:
            runtime.run(service.connect_all(), timeout=60)
            echo = next(t for t in service.tools() if t.spec.name == "mcp__loops__echo")
            result = asyncio.run(asyncio.wait_for(echo.execute({"text": "other loop"}, ToolEnv()), 30))
            assert result.content == "other loop" and not result.is_error
        finally:
            runtime.run(service.close(), timeout=30)


def test_redirect_reason_names_the_location_it_did_not_follow(service: McpService, runtime: Runtime) -> None:
    with RawServer("record") as other, RawServer("redirect") as first:
        first.location = other.url
        service.add(ServerConfig("hop2", "http", url=first.url, timeout=15))
        try:
            (status,) = runtime.run(service.connect_all(), timeout=60)
        finally:
            runtime.run(service.close(), timeout=30)
        assert status.state == "failed"
        assert "not followed" in status.reason and str(other.port) in status.reason


def test_secret_query_parameter_is_sent_only_when_connecting(service: McpService, runtime: Runtime) -> None:
    with RawServer("401") as srv:
        value = "query-secret-8842+x"
        url = srv.url + "?api_key=" + value.replace("+", "%2B") + "&mode=a"
        service.save(service.load())  # an empty config file
        from hearthside.app.mcp_store import with_entry_id
        from hearthside.core.mcpconfig import parse_host_config

        parsed = parse_host_config(json.dumps({"mcpServers": {"qs": {"url": url, "timeout": 15}}}))
        cfg = with_entry_id(parsed.servers[0])
        for ref, v in parsed.secrets.items():
            service.config.store_secret(cfg, ref, v)
        service.save(service.load().with_server(cfg))
        assert value not in service.paths.mcp_file.read_text()
        try:
            (status,) = runtime.run(service.connect_all(), timeout=60)
        finally:
            runtime.run(service.close(), timeout=30)
            service.config.delete_secret(cfg, "mcp/qs/query/api_key")
        assert status.state == "failed" and "authentication" in status.reason
        first = srv.requests[0][":request"]
        assert "api_key=query-secret-8842%2Bx" in first and "mode=a" in first


@pytest.mark.slow
def test_killed_stdio_server_is_restarted(service: McpService, runtime: Runtime) -> None:
    import signal

    cmd, args = stdio_command()
    service.add(ServerConfig("child", "stdio", command=cmd, args=tuple(args), timeout=20))
    try:
        (status,) = runtime.run(service.connect_all(), timeout=60)
        assert status.state == "connected", status.reason
        conn = service._connections["child"]
        # the server's own pid is its sandbox's; the group Hearthside started is the host's
        (first_group,) = conn._groups
        os.killpg(first_group, signal.SIGKILL)
        assert runtime.run(conn.wait_for("failed", 30), timeout=40).state == "failed"
        assert runtime.run(conn.wait_for("connected", 60), timeout=70).state == "connected"
        pid_tool = next(t for t in service.tools() if t.spec.name == "mcp__child__pid")
        assert runtime.run(pid_tool.execute({}, ToolEnv()), timeout=30).content.strip().isdigit()
        assert conn._groups - {first_group}, "no new server process was started"
    finally:
        runtime.run(service.close(), timeout=30)


@pytest.mark.slow
def test_a_call_longer_than_the_timeout_fails_and_the_session_keeps_working(
    service: McpService, runtime: Runtime
) -> None:
    with HttpServerProcess() as srv:
        service.add(ServerConfig("slow", "http", url=srv.url, timeout=4))
        try:
            runtime.run(service.connect_all(), timeout=60)
            tools = {t.spec.name: t for t in service.tools()}
            late = runtime.run(tools["mcp__slow__nap"].execute({"seconds": 12}, ToolEnv()), timeout=30)
            assert late.is_error and "did not answer within 4 s" in late.content
            quick = runtime.run(tools["mcp__slow__nap"].execute({"seconds": 0.1}, ToolEnv()), timeout=30)
            assert quick.content == "rested" and not quick.is_error
        finally:
            runtime.run(service.close(), timeout=30)
