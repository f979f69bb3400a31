"""Issue 9 holes 1 and 10 (MCP part) and issue 12 items 2 and 3, against real MCP servers on
127.0.0.1 and the real GNOME Keyring, through the real ``hearthside`` command.

- A hand-edited or imported ``mcp.json`` naming another secret (the model API key, another
  server's header) is refused when it is read: the key is never sent, ``remove`` never deletes it.
- ``mcp add --url ...?api_key=...`` keeps the value out of ``mcp.json``.
- An import moves every secret-shaped value (DSN password, ``--token VALUE``, a JSON of headers
  in a harmless-looking env name, an ``envFile``) into the keyring; the child still gets them.
- Tools with names past the ``mcp__<server>__<tool>`` budget get a short name and are listed.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest
from fakemodel import FakeModel
from hearthside.adapters.secrets import KeyringSecretStore
from hearthside.core.mcpconfig import (
    MAX_TOOL_NAME,
    McpConfigError,
    parse_host_config,
    parse_stored,
    short_tool_name,
)
from mcp_helpers import LONG_TOOL_NAMES, HttpServerProcess, mcp_file, secret_key, stdio_command, stored_secret

pytestmark = pytest.mark.keyring


def _everything(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_hand_edited_reference_to_the_model_key_is_refused_never_sent_never_deleted(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    model_key = f"mk-{uuid.uuid4().hex}"
    assert run_cli("model", "set-key", input=model_key + "\n").returncode == 0
    srv = HttpServerProcess(record_headers=tmp_path / "headers.jsonl").start()
    try:
        path = mcp_file(isolated_home)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": 1, "servers": {"docs": {
            "type": "http", "url": srv.url, "headers": {"X-Trace": {"secret": "model/api_key"}}}}}))
        written = path.read_bytes()
        listed = run_cli("mcp", "list")
        test = run_cli("mcp", "test", "docs")
        removed = run_cli("mcp", "remove", "docs")
    finally:
        srv.kill()
    # one sentence naming the server and the reference
    warning = [ln for ln in listed.stderr.splitlines() if "model/api_key" in ln]
    assert warning and "'docs'" in warning[0] and "not its own" in warning[0], listed.stderr
    assert test.returncode == 1 and removed.returncode == 1
    sent = [h for h in srv.headers_seen() if any(model_key in v for v in h.values())]
    assert sent == []
    assert KeyringSecretStore().get("model/api_key") == model_key
    # the refused file stays where the user wrote it, byte for byte (issue 19 item 7), and every
    # write is refused with the same sentence until it is fixed or the user starts over
    assert path.read_bytes() == written and not list(path.parent.glob("mcp.json.broken-*"))
    assert "not its own" in removed.stderr and "start-over" in removed.stderr, removed.stderr
    assert run_cli("mcp", "start-over").returncode == 0
    [backup] = list(path.parent.glob("mcp.json.broken-*"))
    assert backup.read_bytes() == written and backup.stat().st_mode & 0o777 == 0o600
    assert KeyringSecretStore().get("model/api_key") == model_key


def test_an_import_naming_another_secret_imports_nothing_and_remove_spares_it(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    model_key = f"mk-{uuid.uuid4().hex}"
    assert run_cli("model", "set-key", input=model_key + "\n").returncode == 0
    assert run_cli("mcp", "add", "alpha", "--url", "http://127.0.0.1:9/mcp", "--secret-header",
                   "Authorization", input="Bearer alpha-secret-1\n").returncode == 0
    for ref in ("model/api_key", "mcp/alpha/header/authorization", "mcp/docs/env/X"):
        host = tmp_path / f"claude-{ref.replace('/', '_')}.json"
        host.write_text(json.dumps({"mcpServers": {"docs": {
            "url": "http://127.0.0.1:9/mcp", "headers": {"X-Trace": {"secret": ref}}}}}))
        proc = run_cli("mcp", "import", str(host))
        assert proc.returncode == 1 and ref in proc.stderr and "'docs'" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert "docs" not in mcp_file(isolated_home).read_text()
    # even its own reference: a file from another app never holds one (issue 18 hole 2)
    host = tmp_path / "own.json"
    host.write_text(json.dumps({"mcpServers": {"docs": {
        "url": "http://127.0.0.1:9/mcp", "headers": {"X-Trace": {"secret": "mcp/docs/header/x-trace"}}}}}))
    proc = run_cli("mcp", "import", str(host))
    assert proc.returncode == 1 and "nothing was imported" in proc.stderr
    assert "docs" not in mcp_file(isolated_home).read_text()
    assert KeyringSecretStore().get("model/api_key") == model_key
    assert stored_secret(mcp_file(isolated_home), "mcp/alpha/header/authorization") == "Bearer alpha-secret-1"


def test_a_query_secret_given_to_mcp_add_goes_to_the_keyring_not_mcp_json(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path
) -> None:
    secret = f"q{uuid.uuid4().hex}"
    proc = run_cli("mcp", "add", "q", "--url", f"https://example.invalid/mcp?region=eu&api_key={secret}")
    assert proc.returncode == 0, proc.stderr
    text = mcp_file(isolated_home).read_text()
    assert secret not in text and "region=eu" in text
    assert json.loads(text)["servers"]["q"]["url_secrets"] == {"api_key": {"secret": "mcp/q/query/api_key"}}
    key = secret_key(mcp_file(isolated_home), "mcp/q/query/api_key")
    assert KeyringSecretStore().get(key) == secret
    assert secret not in proc.stdout + proc.stderr and "?api_key" in proc.stdout
    assert run_cli("mcp", "remove", "q").returncode == 0
    assert KeyringSecretStore().get(key) is None


def test_an_import_moves_every_secret_shaped_value_and_the_child_still_gets_them(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    uid = uuid.uuid4().hex[:12]
    token = f"tok-{uid}-value"
    dsn = f"postgresql://reader:pw{uid}@localhost:5432/notes"
    notion = json.dumps({"Authorization": f"Bearer ntn_{uid}", "Notion-Version": "2022-06-28"})
    env_file_secret = f"ef-{uid}-secret"
    cmd, args = stdio_command()
    launch = [*args, "--argv-tool", "--token", token, dsn, "--data", "${workspaceFolder}/data"]
    vscode = tmp_path / "proj" / ".vscode"
    vscode.mkdir(parents=True)
    (tmp_path / "proj" / ".env").write_text(f"# settings\nexport API_TOKEN='{env_file_secret}'\nREGION=eu\n")
    host = vscode / "mcp.json"
    host.write_text(json.dumps({
        "inputs": [{"id": "pat", "type": "promptString", "password": True}],
        "servers": {
            "notes": {"type": "stdio", "command": cmd, "args": launch,
                      "env": {"OPENAPI_MCP_HEADERS": notion}, "envFile": "${workspaceFolder}/.env"},
            "gh": {"type": "stdio", "command": cmd, "args": [*args, "--pat", "${input:pat}"],
                   "envFile": "missing.env"},
        }}))
    proc = run_cli("mcp", "import", str(host))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    stored = mcp_file(isolated_home).read_text()
    for value in (token, f"pw{uid}", f"ntn_{uid}", env_file_secret):
        assert value not in stored and value not in out
    doc = json.loads(stored)["servers"]
    assert doc["notes"]["env"]["REGION"] == "eu"
    assert doc["notes"]["env"]["API_TOKEN"] == {"secret": "mcp/notes/env/API_TOKEN"}
    assert doc["notes"]["env"]["OPENAPI_MCP_HEADERS"] == {"secret": "mcp/notes/env/OPENAPI_MCP_HEADERS"}
    token_pos, dsn_pos = launch.index(token) + 1, launch.index(dsn) + 1
    assert doc["notes"]["args"][token_pos - 1] == {"secret": f"mcp/notes/arg/{token_pos}"}
    assert doc["notes"]["args"][dsn_pos - 1] == {"secret": f"mcp/notes/arg/{dsn_pos}"}
    # the summary names every moved value, by name only
    for name in (f"arg:{token_pos}", f"arg:{dsn_pos}", "OPENAPI_MCP_HEADERS", "API_TOKEN"):
        assert f"server notes, {name}" in proc.stdout, proc.stdout
    # the prompt, the variable and the unreadable envFile are each reported
    assert "server gh still needs its secret arg:" in proc.stdout
    assert "${workspaceFolder}" in proc.stdout and "argument" in proc.stdout
    assert "missing.env" in proc.stdout and "could not be read" in proc.stdout
    listed = run_cli("mcp", "list")
    assert token not in listed.stdout and "********" in listed.stdout

    # The child is launched with the real values (and only it gets them).
    with FakeModel([{"tool_calls": [("mcp__notes__argv_digest", "{}"),
                                    ("mcp__notes__env_digest", '{"name": "OPENAPI_MCP_HEADERS"}'),
                                    ("mcp__notes__env_digest", '{"name": "API_TOKEN"}')]},
                    {"text": "done"}]) as fm:
        assert run_cli("persona", "new", "juniper").returncode == 0
        chat = run_cli("chat", "juniper", "hi", env=fm.env())
    assert chat.returncode == 0, chat.stderr
    results = [m["content"] for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    want_argv = hashlib.sha256(json.dumps(launch[1:]).encode()).hexdigest()  # argv[0] is the script
    assert want_argv in results[0]
    assert hashlib.sha256(notion.encode()).hexdigest() in results[1]
    assert hashlib.sha256(env_file_secret.encode()).hexdigest() in results[2]
    assert run_cli("mcp", "remove", "notes").returncode == 0
    assert KeyringSecretStore().get(f"mcp/notes/arg/{dsn_pos}") is None


def test_secret_shaped_stdio_args_given_to_mcp_add_are_stored_as_references(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path
) -> None:
    token = f"t{uuid.uuid4().hex}"
    proc = run_cli("mcp", "add", "db", "--command", "server", "--", "--api-key", token, "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert token not in mcp_file(isolated_home).read_text()
    listed = run_cli("mcp", "list", "--json")
    [entry] = json.loads(listed.stdout)
    assert entry["args"] == ["--api-key", "********", "--verbose"] and token not in listed.stdout
    assert stored_secret(mcp_file(isolated_home), "mcp/db/arg/2") == token


def test_short_tool_names_are_deterministic_unique_and_fit() -> None:
    server = "s" * 48  # the longest server name leaves the least room
    a = short_tool_name(server, LONG_TOOL_NAMES[0])
    b = short_tool_name(server, LONG_TOOL_NAMES[1])
    assert a != b and a == short_tool_name(server, LONG_TOOL_NAMES[0])
    assert all(len(n) <= MAX_TOOL_NAME for n in (a, b))
    c = short_tool_name(server, LONG_TOOL_NAMES[0], taken={a})
    assert c != a and len(c) <= MAX_TOOL_NAME


def test_long_tool_names_are_renamed_and_listed_not_dropped(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path
) -> None:
    with HttpServerProcess(long_names=True) as srv:
        assert run_cli("mcp", "add", "everything", "--url", srv.url).returncode == 0
        test = run_cli("mcp", "test", "everything")
        tools = run_cli("mcp", "tools", "everything")
        as_json = run_cli("mcp", "tools", "everything", "--json")
    assert test.returncode == 0 and tools.returncode == 0, test.stderr + tools.stderr
    docs = {d["tool"]: d["name"] for d in json.loads(as_json.stdout)}
    for full in LONG_TOOL_NAMES:
        assert full in docs, f"{full} was dropped"
        short = docs[full]
        assert len(short) <= MAX_TOOL_NAME and short.startswith("mcp__everything__")
        assert f"{short}  <-  {full}" in test.stdout
        assert f"{short} [full name: {full}]" in tools.stdout
    assert "3 tool name(s) were too long" in test.stdout


def test_a_renamed_tool_is_called_by_its_full_name(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path
) -> None:
    full = LONG_TOOL_NAMES[1]
    short = short_tool_name("everything", full, taken={short_tool_name("everything", LONG_TOOL_NAMES[0])})
    with HttpServerProcess(long_names=True) as srv:
        assert run_cli("mcp", "add", "everything", "--url", srv.url).returncode == 0
        assert run_cli("persona", "new", "juniper").returncode == 0
        with FakeModel([{"tool_calls": [(short, "{}")]}, {"text": "done"}]) as fm:
            chat = run_cli("chat", "juniper", "hi", "--accept-edits", env=fm.env())
    assert chat.returncode == 0, chat.stderr
    [result] = [m["content"] for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    assert f"called {full}" in result


def test_a_foreign_reference_is_refused_by_the_parser_in_every_place() -> None:
    for entry in (
        {"url": "https://x.example/mcp", "headers": {"A": {"secret": "model/api_key"}}},
        {"url": "https://x.example/mcp", "url_secrets": {"k": {"secret": "mcp/other/query/k"}}},
        {"command": "x", "env": {"K": {"secret": "mcp/docs/env/OTHER"}}},
        {"command": "x", "args": ["a", {"secret": "mcp/docs/arg/1"}]},
    ):
        with pytest.raises(McpConfigError, match="not its own"):
            parse_stored(json.dumps({"servers": {"docs": entry}}))
        with pytest.raises(McpConfigError, match="nothing was imported"):
            parse_host_config(json.dumps({"mcpServers": {"docs": entry}}))


def test_secret_shapes_in_an_import_are_found_by_the_redactors_one_list() -> None:
    from hearthside.core.mcpconfig import SecretRef
    from hearthside.core.redact import looks_secret, redact_shapes

    notion = json.dumps({"Authorization": "Bearer ntn_abc123def456", "Notion-Version": "2022-06-28"})
    parsed = parse_host_config(json.dumps({"mcpServers": {"s": {
        "command": "srv",
        "args": ["--api-key=k-123456789", "--verbose", "mysql://root:hunter22@db/x", "--region", "eu",
                 "--password", "p455w0rd!", "${userHome}/data"],
        "env": {"HEADERS": notion, "LOG_LEVEL": "debug", "GH": "ghp_" + "a" * 36},
    }}}))
    [cfg] = parsed.servers
    kinds = ["ref" if isinstance(a, SecretRef) else a for a in cfg.args]
    assert kinds == ["ref", "--verbose", "ref", "--region", "eu", "--password", "ref", "${userHome}/data"]
    assert isinstance(cfg.env["HEADERS"], SecretRef) and isinstance(cfg.env["GH"], SecretRef)
    assert cfg.env["LOG_LEVEL"] == "debug"
    assert set(parsed.secrets.values()) == {"--api-key=k-123456789", "mysql://root:hunter22@db/x",
                                            "p455w0rd!", notion, "ghp_" + "a" * 36}
    assert any("${userHome}" in n and "argument 8" in n for n in parsed.notes)
    # one list: whatever the import moves is what the log redaction masks, and the reverse
    for value in ("mysql://root:hunter22@db/x", notion, "ghp_" + "a" * 36):
        assert looks_secret(value) and redact_shapes(value) != value
    assert not looks_secret("--verbose") and not looks_secret("https://example.com/mcp")


def test_an_env_file_that_cannot_be_read_is_reported_never_dropped_silently() -> None:
    parsed = parse_host_config(json.dumps({"servers": {"s": {"command": "srv", "envFile": "${userHome}/.env"}}}),
                               read_env_file=lambda p: (None, "no such file"))
    assert any("envFile" in n and "could not be read" in n and "set-secret s KEY" in n for n in parsed.notes)
    got = parse_host_config(json.dumps({"servers": {"s": {"command": "srv", "envFile": ".env",
                                                          "env": {"MODE": "explicit"}}}}),
                            read_env_file=lambda p: ("MODE=file\nexport DB_PASSWORD=\"x y z\"\n# c\n", ""))
    [cfg] = got.servers
    assert cfg.env["MODE"] == "explicit" and got.secrets == {"mcp/s/env/DB_PASSWORD": "x y z"}


def test_an_argument_secret_can_be_entered_with_set_secret(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"servers": {"gh": {"command": "srv", "args": ["--pat", "${input:pat}"]}}}))
    proc = run_cli("mcp", "import", str(host))
    assert "set-secret gh arg:2" in proc.stdout, proc.stdout
    value = f"pat-{uuid.uuid4().hex}"
    proc = run_cli("mcp", "set-secret", "gh", "arg:2", input=value + "\n")
    assert proc.returncode == 0 and value not in proc.stdout, proc.stderr
    assert stored_secret(mcp_file(isolated_home), "mcp/gh/arg/2") == value
    bad = run_cli("mcp", "set-secret", "gh", "arg:9", input="x\n")
    assert bad.returncode == 1 and "arg:N" in bad.stderr
