"""``hearthside mcp registry`` against a loopback server speaking the MCP Registry API v0.1: search
with cursor paging, adding a remote server (then connecting to it) and a package (its command
shown and confirmed first, its secret to the keyring), and registries that answer badly."""

from __future__ import annotations

import json
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hearthside.adapters.secrets import KeyringSecretStore
from mcp_helpers import HttpServerProcess, mcp_file, secret_key

pytestmark = pytest.mark.keyring


def entry(name: str, **server: Any) -> dict[str, Any]:
    return {"server": {"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
                       "name": name, "description": f"The {name} server", "version": "1.2.3", **server},
            "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": True}}}


class FakeRegistry:
    """A registry on 127.0.0.1: ``servers`` paged two at a time, or one bad behaviour."""

    def __init__(self, servers: list[dict[str, Any]], behaviour: str = "") -> None:
        self.servers = servers
        self.behaviour = behaviour
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.paths.append(self.path)
                status, body = outer.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, path: str) -> tuple[int, bytes]:
        if self.behaviour == "500":
            return 500, b'{"error": "boom"}'
        if self.behaviour == "garbage":
            return 200, b"{not json at all"
        if self.behaviour == "huge":
            return 200, b'{"servers": [' + b" " * (10 * 1024 * 1024) + b"]}"
        parts = urllib.parse.urlsplit(path)
        q = dict(urllib.parse.parse_qsl(parts.query))
        if parts.path == "/v0.1/servers":
            hits = [s for s in self.servers if q.get("search", "") in s["server"]["name"]]
            start = int(q.get("cursor") or 0)
            page = hits[start:start + 2]
            nxt = str(start + 2) if start + 2 < len(hits) else None
            return 200, json.dumps({"servers": page, "metadata": {"nextCursor": nxt, "count": len(page)}}).encode()
        prefix = "/v0.1/servers/"
        if parts.path.startswith(prefix) and "/versions/" in parts.path:
            name, _, _version = parts.path[len(prefix):].partition("/versions/")
            name = urllib.parse.unquote(name)
            for s in self.servers:
                if s["server"]["name"] == name:
                    return 200, json.dumps(s).encode()
        return 404, b'{"error": "not found"}'

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def settings_for(isolated_home: Path):  # type: ignore[no-untyped-def]
    def point_at(url: str) -> None:
        cfg = isolated_home / ".config" / "hearthside"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "settings.toml").write_text(f'[mcp]\nregistry_url = "{url}"\n')
    return point_at


@pytest.fixture
def registry(settings_for) -> Iterator[FakeRegistry]:  # type: ignore[no-untyped-def]
    servers = [
        entry("io.github.example/weather", packages=[{
            "registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.2.3",
            "transport": {"type": "stdio"},
            "environmentVariables": [{"name": "WEATHER_API_KEY", "isSecret": True, "isRequired": True,
                                      "description": "Your key"},
                                     {"name": "UNITS", "default": "metric", "description": "Units"}]}]),
        entry("io.github.example/weather-py", packages=[{
            "registryType": "pypi", "identifier": "weather-mcp", "version": "0.4.0", "transport": {"type": "stdio"}}]),
        entry("io.github.example/weather-remote", remotes=[{"type": "streamable-http", "url": "PLACEHOLDER"}]),
        entry("io.github.example/docker-only", packages=[{"registryType": "oci", "identifier": "x/y"}]),
    ]
    reg = FakeRegistry(servers)
    settings_for(reg.url)
    yield reg
    reg.close()


def test_search_lists_servers_and_follows_the_cursor(run_cli, registry: FakeRegistry) -> None:  # type: ignore[no-untyped-def]
    first = run_cli("mcp", "registry", "search", "weather", "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert [s["name"] for s in doc["servers"]] == ["io.github.example/weather", "io.github.example/weather-py"]
    assert doc["servers"][0]["kind"] == "package" and doc["next_cursor"] == "2"
    second = run_cli("mcp", "registry", "search", "weather", "--cursor", doc["next_cursor"])
    assert second.returncode == 0, second.stderr
    assert "io.github.example/weather-remote 1.2.3 [remote]" in second.stdout
    assert any("search=weather" in p and "cursor=2" in p for p in registry.paths)


def test_a_package_shows_its_command_asks_first_and_keeps_its_secret_in_the_keyring(  # type: ignore[no-untyped-def]
    run_cli, registry: FakeRegistry, isolated_home: Path
) -> None:
    declined = run_cli("mcp", "registry", "add", "io.github.example/weather", input="n\n")
    assert declined.returncode == 1
    assert "running: npx -y @example/weather-mcp@1.2.3" in declined.stdout
    assert "nothing was added" in declined.stderr and not mcp_file(isolated_home).exists()

    key = f"wk-{uuid.uuid4().hex}"
    done = run_cli("mcp", "registry", "add", "io.github.example/weather", "--yes", input=key + "\n")
    assert done.returncode == 0, done.stderr
    text = mcp_file(isolated_home).read_text()
    assert key not in text and key not in done.stdout + done.stderr
    server = json.loads(text)["servers"]["weather"]
    assert server["command"] == "npx" and server["args"] == ["-y", "@example/weather-mcp@1.2.3"]
    assert server["env"] == {"UNITS": "metric", "WEATHER_API_KEY": {"secret": "mcp/weather/env/WEATHER_API_KEY"}}
    stored = secret_key(mcp_file(isolated_home), "mcp/weather/env/WEATHER_API_KEY")
    assert KeyringSecretStore().get(stored) == key
    assert run_cli("mcp", "remove", "weather").returncode == 0
    assert KeyringSecretStore().get(stored) is None


def test_a_pypi_package_becomes_its_uvx_command(run_cli, registry: FakeRegistry, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_cli("mcp", "registry", "add", "io.github.example/weather-py", "--name", "wpy", "--yes")
    assert done.returncode == 0, done.stderr
    assert "running: uvx weather-mcp==0.4.0" in done.stdout
    assert json.loads(mcp_file(isolated_home).read_text())["servers"]["wpy"]["args"] == ["weather-mcp==0.4.0"]


@pytest.mark.slow
def test_a_remote_server_is_added_as_streamable_http_and_connects(  # type: ignore[no-untyped-def]
    run_cli, registry: FakeRegistry, isolated_home: Path, tmp_path: Path
) -> None:
    with HttpServerProcess(secret_dir=tmp_path) as srv:
        registry.servers[2]["server"]["remotes"][0]["url"] = srv.url
        done = run_cli("mcp", "registry", "add", "io.github.example/weather-remote", "--yes")
        assert done.returncode == 0, done.stderr
        assert f"running: streamable HTTP at {srv.url}" in done.stdout
        test = run_cli("mcp", "test", "weather-remote")
        assert test.returncode == 0, test.stderr
        assert "weather-remote is connected" in test.stdout


def test_a_server_hearthside_cannot_run_and_an_unknown_one_are_one_sentence(  # type: ignore[no-untyped-def]
    run_cli, registry: FakeRegistry, isolated_home: Path
) -> None:
    oci = run_cli("mcp", "registry", "add", "io.github.example/docker-only", "--yes")
    assert oci.returncode == 1 and "no npm or PyPI package (oci)" in oci.stderr
    missing = run_cli("mcp", "registry", "add", "io.github.example/nope", "--yes")
    assert missing.returncode == 1 and "has no such server" in missing.stderr
    for p in (oci, missing):
        assert len(p.stderr.strip().splitlines()) == 1
    assert not mcp_file(isolated_home).exists()


@pytest.mark.parametrize(("behaviour", "said"), [
    ("500", "answered HTTP 500"),
    ("garbage", "did not answer with valid JSON"),
    ("huge", "sent a page larger than 4 MB"),
])
def test_a_registry_that_answers_badly_is_one_sentence_and_nothing_is_added(  # type: ignore[no-untyped-def]
    run_cli, settings_for, isolated_home: Path, behaviour: str, said: str
) -> None:
    reg = FakeRegistry([], behaviour)
    try:
        settings_for(reg.url)
        for args in (("search", "x"), ("add", "io.github.example/weather", "--yes")):
            got = run_cli("mcp", "registry", *args)
            assert got.returncode == 1 and said in got.stderr, got.stderr
            assert len(got.stderr.strip().splitlines()) == 1
    finally:
        reg.close()
    assert not mcp_file(isolated_home).exists()
