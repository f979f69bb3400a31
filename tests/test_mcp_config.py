"""The MCP config model and the import of Claude Desktop / Cursor / VS Code files (pure core)."""

from __future__ import annotations

import json

import pytest
from hearthside.core.mcpconfig import (
    McpConfig,
    McpConfigError,
    SecretRef,
    ServerConfig,
    header_ref,
    is_loopback_host,
    origin_of,
    parse_host_config,
    parse_stored,
    validate_server,
    with_secret,
)

CLAUDE = {
    "mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@x/files", "/tmp"],
                  "env": {"GITHUB_TOKEN": "ghp_0123456789abcdef0123", "LOG_LEVEL": "debug"}},
        "remote": {"url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer abc.def.ghi", "Accept-Language": "en"}},
    }
}

VSCODE = {
    "inputs": [{"type": "promptString", "id": "tok", "password": True}],
    "servers": {
        "gh": {"type": "http", "url": "https://api.example.com/mcp/",
               "headers": {"X-API-Key": "${input:tok}"}},
        "local": {"type": "stdio", "command": "python", "args": ["srv.py"], "cwd": "/srv"},
    },
}


def test_claude_desktop_file_moves_secret_shaped_values_out_of_the_config() -> None:
    parsed = parse_host_config(json.dumps(CLAUDE))
    files, remote = parsed.servers
    assert files.transport == "stdio" and files.args == ("-y", "@x/files", "/tmp")
    assert files.env["LOG_LEVEL"] == "debug"
    assert files.env["GITHUB_TOKEN"] == SecretRef("mcp/files/env/GITHUB_TOKEN")
    assert remote.headers["Accept-Language"] == "en"
    assert remote.headers["Authorization"] == SecretRef(header_ref("remote", "Authorization"))
    assert parsed.secrets == {
        "mcp/files/env/GITHUB_TOKEN": "ghp_0123456789abcdef0123",
        "mcp/remote/header/authorization": "Bearer abc.def.ghi",
    }
    stored = McpConfig(parsed.servers).dumps()
    assert "ghp_0123456789abcdef0123" not in stored and "abc.def.ghi" not in stored


def test_vscode_file_with_input_placeholder_needs_the_secret_entered() -> None:
    parsed = parse_host_config(json.dumps(VSCODE))
    gh, local = parsed.servers
    assert gh.transport == "http" and local.transport == "stdio" and local.cwd == "/srv"
    assert parsed.missing == ("mcp/gh/header/x-api-key",)
    assert parsed.secrets == {}


def test_a_placeholder_inside_a_value_is_a_secret_to_enter_not_a_value_to_store() -> None:
    doc = {"servers": {"vs": {"type": "http", "url": "https://api.example.com/mcp",
                              "headers": {"Authorization": "Bearer ${input:tok}"}},
                       "cli": {"command": "node", "env": {"DB_URL": "postgres://u:${input:pw}@db/x"}}}}
    parsed = parse_host_config(json.dumps(doc))
    assert parsed.secrets == {}  # nothing literal goes to the keyring
    assert set(parsed.missing) == {"mcp/vs/header/authorization", "mcp/cli/env/DB_URL"}


def test_vscode_settings_json_nesting_is_understood() -> None:
    parsed = parse_host_config(json.dumps({"mcp": {"servers": VSCODE["servers"]}}))
    assert [s.name for s in parsed.servers] == ["gh", "local"]


def test_malformed_json_names_line_and_column() -> None:
    text = '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}'
    with pytest.raises(McpConfigError) as err:
        parse_host_config(text, what="claude.json")
    msg = str(err.value)
    assert "line 3" in msg and "column 26" in msg and "nothing was imported" in msg


def test_file_without_a_servers_object_is_refused() -> None:
    with pytest.raises(McpConfigError, match="mcpServers"):
        parse_host_config('{"other": 1}')


@pytest.mark.parametrize("name", ["a__b", "__x", "x__"])
def test_server_name_with_double_underscore_is_refused(name: str) -> None:
    with pytest.raises(McpConfigError, match="__"):
        parse_host_config(json.dumps({"mcpServers": {name: {"command": "x"}}}))


@pytest.mark.parametrize("name", ["", "-a", "a b", "a/b", "x" * 49, "é"])
def test_unusable_server_names_are_refused(name: str) -> None:
    with pytest.raises(McpConfigError):
        validate_server(ServerConfig(name, "stdio", command="x"))


def test_duplicate_server_names_in_one_file_are_refused() -> None:
    text = '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}'
    with pytest.raises(McpConfigError, match="twice"):
        parse_host_config(text)


def test_duplicate_name_against_the_existing_config_is_refused() -> None:
    cfg = McpConfig((ServerConfig("a", "stdio", command="x"),))
    with pytest.raises(McpConfigError, match="already exists"):
        cfg.with_server(ServerConfig("a", "stdio", command="y"))


def test_header_value_with_crlf_is_refused() -> None:
    doc = {"mcpServers": {"a": {"url": "https://h/mcp", "headers": {"X-Trace": "1\r\nEvil: yes"}}}}
    with pytest.raises(McpConfigError, match="line break"):
        parse_host_config(json.dumps(doc))
    with pytest.raises(McpConfigError, match="not a valid HTTP header name"):
        with_secret(ServerConfig("a", "http", url="https://h/mcp"), "Authorization\r\nX")


def test_secret_header_over_plain_http_to_another_host_is_refused() -> None:
    doc = {"mcpServers": {"a": {"url": "http://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}
    with pytest.raises(McpConfigError, match="plain http"):
        parse_host_config(json.dumps(doc))


def test_secret_header_over_http_is_allowed_on_loopback_and_with_explicit_opt_out() -> None:
    for url in ("http://127.0.0.1:9/mcp", "http://localhost:9/mcp", "http://[::1]:9/mcp"):
        cfg = ServerConfig("a", "http", url=url, headers={"Authorization": SecretRef("r")})
        assert validate_server(cfg) is cfg
    opted = ServerConfig("a", "http", url="http://10.0.0.5/mcp", headers={"Authorization": SecretRef("r")},
                         allow_insecure_http=True)
    assert validate_server(opted) is opted
    with pytest.raises(McpConfigError):
        validate_server(ServerConfig("a", "http", url="http://10.0.0.5/mcp",
                                     headers={"Authorization": SecretRef("r")}))


def test_plain_http_without_secrets_is_fine_anywhere() -> None:
    cfg = ServerConfig("a", "http", url="http://mcp.example.com/mcp", headers={"Accept": "x"})
    assert validate_server(cfg) is cfg


def test_url_with_credentials_in_it_is_refused() -> None:
    with pytest.raises(McpConfigError, match="user name or password"):
        validate_server(ServerConfig("a", "http", url="https://u:p@h/mcp"))


def test_origin_and_loopback_rules() -> None:
    assert origin_of("https://H.example/x") == ("https", "h.example", 443)
    assert origin_of("http://h:8080/x") == ("http", "h", 8080)
    assert is_loopback_host("127.0.0.2") and is_loopback_host("::1") and is_loopback_host("localhost")
    assert not is_loopback_host("127.example.com") and not is_loopback_host("10.0.0.1")


def test_stored_config_round_trips_and_keeps_only_references() -> None:
    parsed = parse_host_config(json.dumps(CLAUDE))
    text = McpConfig(parsed.servers).dumps()
    again, plain = parse_stored(text)
    assert plain == {}
    assert again.servers == parsed.servers


def test_hand_edited_plain_secret_in_stored_config_is_pulled_out() -> None:
    text = json.dumps({"servers": {"a": {"type": "http", "url": "https://h/mcp",
                                         "headers": {"Authorization": "Bearer pasted-by-hand"}}}})
    cfg, plain = parse_stored(text)
    assert plain == {"mcp/a/header/authorization": "Bearer pasted-by-hand"}
    assert isinstance(cfg.servers[0].headers["Authorization"], SecretRef)


def test_with_secret_converts_an_existing_header_case_insensitively() -> None:
    cfg = ServerConfig("a", "http", url="https://h/mcp", headers={"authorization": "old"})
    new, ref = with_secret(cfg, "Authorization")
    assert ref == "mcp/a/header/authorization"
    assert dict(new.headers) == {"authorization": SecretRef(ref)}


def test_secret_query_parameter_in_an_imported_url_moves_out_of_the_url() -> None:
    from hearthside.core.mcpconfig import url_with_secrets

    doc = {"mcpServers": {"q": {"url": "https://mcp.example.com/mcp?api_key=k3y-Value%2B1&profile=work"}}}
    parsed = parse_host_config(json.dumps(doc))
    (cfg,) = parsed.servers
    assert cfg.url == "https://mcp.example.com/mcp?profile=work"
    assert cfg.url_secrets == {"api_key": SecretRef("mcp/q/query/api_key")}
    assert parsed.secrets == {"mcp/q/query/api_key": "k3y-Value+1"}
    assert "k3y" not in McpConfig(parsed.servers).dumps()
    again, _ = parse_stored(McpConfig(parsed.servers).dumps())
    assert again.servers == parsed.servers
    assert url_with_secrets(cfg.url, {"api_key": "k3y-Value+1"}) == (
        "https://mcp.example.com/mcp?profile=work&api_key=k3y-Value%2B1")


def test_secret_query_parameter_over_plain_http_to_another_host_is_refused() -> None:
    doc = {"mcpServers": {"q": {"url": "http://mcp.example.com/mcp?token=abcdef"}}}
    with pytest.raises(McpConfigError, match="plain http"):
        parse_host_config(json.dumps(doc))


def test_an_sse_server_is_imported_with_a_note_about_the_transport() -> None:
    doc = {"servers": {"old": {"type": "sse", "url": "https://mcp.example.com/sse"},
                       "new": {"type": "http", "url": "https://mcp.example.com/mcp"}}}
    parsed = parse_host_config(json.dumps(doc))
    assert [s.transport for s in parsed.servers] == ["http", "http"]
    (note,) = parsed.notes
    assert "'old'" in note and "SSE" in note and "streamable HTTP" in note
