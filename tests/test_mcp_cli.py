"""``hearthside mcp`` in real subprocesses, with the real keyring and real servers on 127.0.0.1."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from hearthside.adapters.secrets import KeyringSecretStore
from mcp_helpers import HttpServerProcess, mcp_file, secret_key, stdio_command, stored_secret

pytestmark = pytest.mark.keyring


@pytest.mark.slow
def test_add_list_tools_test_rotate_and_remove_over_the_cli(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    token = f"Bearer cli-{uuid.uuid4().hex}"
    with HttpServerProcess(require_header=("Authorization", token), secret_dir=tmp_path) as srv:
        add = run_cli("mcp", "add", "demo", "--url", srv.url, "--secret-header", "Authorization",
                      "--timeout", "15", input=token + "\n")
        assert add.returncode == 0, add.stderr
        assert "Authorization: ********" in add.stdout

        listing = run_cli("mcp", "list", "--json")
        assert listing.returncode == 0, listing.stderr
        (entry,) = json.loads(listing.stdout)
        assert entry["headers"] == {"Authorization": "********"}
        assert entry["secrets"] == [{"key": "Authorization", "kind": "header", "set": True, "description": ""}]

        tools = run_cli("mcp", "tools", "demo", "--json")
        assert tools.returncode == 0, tools.stderr
        by_name = {t["name"]: t for t in json.loads(tools.stdout)}
        assert by_name["mcp__demo__echo"]["read_only"] is True
        assert by_name["mcp__demo__write_note"]["read_only"] is False

        assert run_cli("mcp", "test", "demo").returncode == 0

        rotate = run_cli("mcp", "set-secret", "demo", "Authorization", input="Bearer wrong-one-123\n")
        assert rotate.returncode == 0 and "********" in rotate.stdout
        failed = run_cli("mcp", "test", "demo", "--json")
        assert failed.returncode == 1
        doc = json.loads(failed.stdout)
        assert doc["state"] == "failed" and "authentication" in doc["reason"]

        assert run_cli("mcp", "remove", "demo").returncode == 0
        assert KeyringSecretStore().get("mcp/demo/header/authorization") is None
        assert json.loads(mcp_file(isolated_home).read_text())["servers"] == {}


def test_secret_on_the_command_line_is_refused_and_nothing_is_written(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("mcp", "add", "x", "--url", "https://h.example/mcp", "--header", "Authorization=Bearer argv-123")
    assert proc.returncode == 2
    assert "never taken from the command line" in proc.stderr
    assert not mcp_file(isolated_home).exists()


def test_import_of_malformed_json_names_line_and_column_and_imports_nothing(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "claude_desktop_config.json"
    bad.write_text('{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}\n')
    proc = run_cli("mcp", "import", str(bad))
    assert proc.returncode == 1
    assert "line 4, column 5" in proc.stderr and "nothing was imported" in proc.stderr
    assert not mcp_file(isolated_home).exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "binary"])
def test_import_of_something_that_is_not_a_config_file_fails_fast(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path, kind: str
) -> None:
    import os

    target = tmp_path / "mcp.json"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "binary":
        target.write_bytes(b'{"mcpServers": {"\xff": {}}}')
    else:
        target = Path("/dev/zero")
    proc = run_cli("mcp", "import", str(target), timeout=60)
    # A directory is caught by the argument parser itself (bad usage, exit 2).
    assert proc.returncode == (2 if kind == "directory" else 1), proc.stderr
    reason = {"fifo": "named pipe", "dev-zero": "character device", "directory": "is a directory",
              "binary": "not UTF-8"}[kind]
    assert reason in proc.stderr and "Traceback" not in proc.stderr
    assert not mcp_file(isolated_home).exists()


@pytest.mark.parametrize(
    "servers,message",
    [
        ({"bad__name": {"command": "x"}}, "__"),
        ({"web": {"url": "http://mcp.example.com/mcp", "headers": {"Authorization": "Bearer plain-http"}}},
         "plain http"),
        ({"crlf": {"url": "https://mcp.example.com/mcp", "headers": {"X-Trace": "a\r\nX-Evil: 1"}}},
         "line break"),
    ],
)
def test_import_refuses_bad_servers_whole(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path, servers: dict, message: str
) -> None:
    f = tmp_path / "mcp.json"
    f.write_text(json.dumps({"mcpServers": {"fine": {"command": "x"}, **servers}}))
    proc = run_cli("mcp", "import", str(f))
    assert proc.returncode == 1 and message in proc.stderr
    assert not mcp_file(isolated_home).exists()


def test_import_refuses_a_name_that_already_exists(run_cli, isolated_home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("mcp", "add", "dup", "--command", "true").returncode == 0
    before = mcp_file(isolated_home).read_text()
    f = tmp_path / "cursor.json"
    f.write_text(json.dumps({"mcpServers": {"other": {"command": "y"}, "dup": {"command": "z"}}}))
    proc = run_cli("mcp", "import", str(f))
    assert proc.returncode == 1 and "already exists, so nothing was imported" in proc.stderr
    assert "hearthside mcp remove dup" in proc.stderr and "pick another name" not in proc.stderr
    assert mcp_file(isolated_home).read_text() == before


def test_import_moves_secrets_to_the_keyring_and_leaves_the_file_alone(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    token = f"ghp_{uuid.uuid4().hex}"
    f = tmp_path / "vscode-mcp.json"
    original = json.dumps({"servers": {
        "gh": {"type": "stdio", "command": "gh-mcp", "env": {"GITHUB_TOKEN": token}},
        "api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"X-API-Key": "${input:key}"}},
    }})
    f.write_text(original)
    proc = run_cli("mcp", "import", str(f), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["added"] == ["gh", "api"] and doc["secrets_moved"] == 1
    assert doc["missing"] == [{"server": "api", "key": "X-API-Key"}]
    assert "plaintext copy still exists" in doc["notes"][0]
    assert f.read_text() == original
    listing = run_cli("mcp", "list").stdout
    assert "env secret GITHUB_TOKEN is set" in listing
    assert "header secret X-API-Key is NOT SET" in listing
    assert token not in mcp_file(isolated_home).read_text()
    key = secret_key(mcp_file(isolated_home), "mcp/gh/env/GITHUB_TOKEN")
    assert KeyringSecretStore().get(key) == token
    assert run_cli("mcp", "remove", "gh").returncode == 0
    assert KeyringSecretStore().get(key) is None


def test_crlf_in_a_header_is_refused(run_cli, secret_service, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("mcp", "add", "h", "--url", "https://h.example/mcp", "--header", "X-Trace=a\r\nX-Evil: 1")
    assert proc.returncode == 1 and "line break" in proc.stderr
    assert not mcp_file(isolated_home).exists()
    assert run_cli("mcp", "add", "h", "--url", "https://h.example/mcp").returncode == 0
    proc = run_cli("mcp", "set-secret", "h", "Authorization", input="Bearer ok\rX-Evil: 1\n")
    assert proc.returncode == 1 and "line break" in proc.stderr
    assert KeyringSecretStore().get("mcp/h/header/authorization") is None


def test_unparsable_mcp_json_is_reported_with_its_place_and_never_moved(  # type: ignore[no-untyped-def]
        run_cli, isolated_home: Path) -> None:
    path = mcp_file(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text("{ not json")
    proc = run_cli("mcp", "list", "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []  # the same one list as always; the warning is on stderr
    assert "not valid JSON" in proc.stderr and "line 1, column 3" in proc.stderr
    assert path.read_text() == "{ not json" and not list(path.parent.glob("mcp.json.broken-*"))


#: Issue 19 item 7: a hand edit with one trailing comma (line 3, column 1 is the closing brace).
TRAILING_COMMA = (b'{"version": 1, "servers": {\n  "docs": {"type": "http", "url": "https://docs.example/mcp"},\n'
                  b'}}\n')


def test_a_hand_edit_with_a_trailing_comma_stays_put_refuses_writes_until_start_over(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    """A read never moves the user's file: ``mcp list`` says where it is wrong (once) and uses
    no servers; every command that would write mcp.json refuses with the same place; the file
    is byte-identical throughout; ``mcp start-over`` keeps it as a 0600 backup and works."""
    path = mcp_file(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(TRAILING_COMMA)
    path.chmod(0o644)
    listed = run_cli("mcp", "list")
    assert listed.returncode == 0 and "No MCP servers yet" in listed.stdout
    told = [ln for ln in listed.stderr.splitlines() if "line 3, column 1" in ln]
    assert len(told) == 1 and "start-over" in told[0] and len(listed.stderr.strip().splitlines()) == 1, listed.stderr
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": {"other": {"command": "y"}}}))
    for args, input_ in ((("add", "new", "--url", "https://new.example/mcp"), None), (("import", str(host)), None),
                         (("remove", "docs"), None), (("disable", "docs"), None),
                         (("set-secret", "docs", "Authorization"), "Bearer typed-123\n"),
                         (("forget-orphans",), None), (("test", "docs"), None)):
        proc = run_cli("mcp", *args, input=input_)
        assert proc.returncode == 1, (args, proc.stdout)
        [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("hearthside: ")]
        assert "line 3, column 1" in line and "start-over" in line, (args, proc.stderr)
        assert path.read_bytes() == TRAILING_COMMA and not list(path.parent.glob("mcp.json.broken-*")), args
    assert KeyringSecretStore().get("mcp/docs/header/authorization") is None
    assert path.stat().st_mode & 0o777 == 0o644  # not even its mode was touched

    over = run_cli("mcp", "start-over")
    assert over.returncode == 0, over.stderr
    [backup] = list(path.parent.glob("mcp.json.broken-*"))
    assert str(backup) in over.stdout and backup.read_bytes() == TRAILING_COMMA
    assert backup.stat().st_mode & 0o777 == 0o600  # it may hold a pasted secret
    again = run_cli("mcp", "list", "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == [] and again.stderr == ""
    assert run_cli("mcp", "add", "new", "--url", "https://new.example/mcp").returncode == 0
    assert [d["name"] for d in json.loads(run_cli("mcp", "list", "--json").stdout)] == ["new"]
    refused = run_cli("mcp", "start-over")  # a file that parses is never dropped
    assert refused.returncode == 1 and "no problem to start over from" in refused.stderr
    assert len(list(path.parent.glob("mcp.json.broken-*"))) == 1


def test_unknown_server_is_a_handled_failure(run_cli) -> None:  # type: ignore[no-untyped-def]
    for args in (("tools", "ghost"), ("test", "ghost"), ("remove", "ghost")):
        proc = run_cli("mcp", *args)
        assert proc.returncode == 1 and "no MCP server named 'ghost'" in proc.stderr


def test_secret_pasted_into_mcp_json_by_hand_is_moved_into_the_keyring(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path
) -> None:
    token = f"Bearer hand-{uuid.uuid4().hex}"
    path = mcp_file(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"servers": {"hand": {"type": "http", "url": "https://h.example/mcp",
                                                     "headers": {"Authorization": token}}}}))
    proc = run_cli("mcp", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert token not in proc.stdout + proc.stderr
    assert token not in path.read_text()
    assert json.loads(path.read_text())["servers"]["hand"]["headers"]["Authorization"] == {
        "secret": "mcp/hand/header/authorization"}
    store = KeyringSecretStore()
    key = secret_key(path, "mcp/hand/header/authorization")
    assert store.get(key) == token
    store.delete(key)


@pytest.mark.slow
@pytest.mark.subprocess_cli  # the lock is held by another process
def test_a_change_waits_for_another_process_holding_the_config_lock(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path
) -> None:
    import filelock

    path = mcp_file(isolated_home)
    path.parent.mkdir(parents=True)
    lock = filelock.FileLock(str(path) + ".lock")
    with lock:
        proc = run_cli("mcp", "add", "later", "--command", "true")
    assert proc.returncode == 1 and "another Hearthside process is changing" in proc.stderr
    assert not path.exists()
    assert run_cli("mcp", "add", "later", "--command", "true").returncode == 0


def test_secret_header_over_plain_http_to_another_host_is_refused_before_asking_for_it(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path
) -> None:
    secret = f"Bearer never-asked-{uuid.uuid4().hex}"
    proc = run_cli("mcp", "add", "far", "--url", "http://mcp.example.com/mcp", "--secret-header",
                   "Authorization", input=secret + "\n")
    assert proc.returncode == 1 and "plain http" in proc.stderr and "--allow-insecure-http" in proc.stderr
    assert not mcp_file(isolated_home).exists()
    assert KeyringSecretStore().get("mcp/far/header/authorization") is None
    opted = run_cli("mcp", "add", "far", "--url", "http://mcp.example.com/mcp", "--secret-header",
                    "Authorization", "--allow-insecure-http", input=secret + "\n")
    assert opted.returncode == 0, opted.stderr
    assert json.loads(mcp_file(isolated_home).read_text())["servers"]["far"]["allow_insecure_http"] is True
    assert stored_secret(mcp_file(isolated_home), "mcp/far/header/authorization") == secret
    assert run_cli("mcp", "remove", "far").returncode == 0


@pytest.mark.slow
def test_disable_and_enable_keep_the_server_and_switch_it(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("mcp", "add", "sw", "--command", "true").returncode == 0
    off = run_cli("mcp", "disable", "sw")
    assert off.returncode == 0 and "disabled" in off.stdout
    assert json.loads(run_cli("mcp", "list", "--json").stdout)[0]["enabled"] is False
    on = run_cli("mcp", "enable", "sw")
    assert on.returncode == 0 and "enabled" in on.stdout
    assert json.loads(run_cli("mcp", "list", "--json").stdout)[0]["enabled"] is True
    ghost = run_cli("mcp", "disable", "ghost")
    assert ghost.returncode == 1 and "no MCP server named 'ghost'" in ghost.stderr


@pytest.mark.slow
def test_testing_a_disabled_server_that_works_says_personas_do_not_use_it(run_cli) -> None:  # type: ignore[no-untyped-def]
    cmd, args = stdio_command()
    assert run_cli("mcp", "add", "quiet", "--disabled", "--command", cmd, "--", *args).returncode == 0
    test = run_cli("mcp", "test", "quiet")
    assert test.returncode == 0 and "quiet is connected" in test.stdout, test.stderr
    assert "note: quiet is disabled" in test.stdout and "hearthside mcp enable quiet" in test.stdout
    assert run_cli("mcp", "enable", "quiet").returncode == 0
    assert "disabled" not in run_cli("mcp", "test", "quiet").stdout


@pytest.mark.slow
def test_names_that_say_token_do_not_get_the_rest_of_their_line_masked(run_cli) -> None:  # type: ignore[no-untyped-def]
    cmd, args = stdio_command()
    assert run_cli("mcp", "add", "api-token", "--command", cmd, "--", *args, "--token-tool").returncode == 0
    test = run_cli("mcp", "test", "api-token")
    assert test.returncode == 0, test.stderr
    assert "api-token is connected, 7 tool(s)" in test.stdout
    tools = run_cli("mcp", "tools", "api-token")
    assert tools.returncode == 0, tools.stderr
    assert "mcp__api-token__get_token - Return a made-up session id" in tools.stdout
    assert "mcp__api-token__echo (read-only) - Echo the text back." in tools.stdout


@pytest.mark.parametrize("args", [("mcp", "set-secret", "pst", "Authorization"), ("model", "set-key")])
def test_a_secret_pasted_as_an_argument_is_refused_without_echoing_it(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, args: tuple[str, ...]
) -> None:
    assert run_cli("mcp", "add", "pst", "--url", "https://h.example/mcp").returncode == 0
    pasted = f"Bearer pasted-{uuid.uuid4().hex}"
    proc = run_cli(*args, pasted, input="")
    assert proc.returncode == 2 and "never taken from the command line" in proc.stderr
    assert pasted.split()[1] not in proc.stdout + proc.stderr
    store = KeyringSecretStore()
    assert store.get(secret_key(mcp_file(isolated_home), "mcp/pst/header/authorization")) is None
    assert pasted not in (store.get("model/api_key") or "")


def test_import_tells_the_user_about_an_sse_server(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "mcp.json"
    f.write_text(json.dumps({"servers": {"old": {"type": "sse", "url": "https://mcp.example.com/sse"}}}))
    proc = run_cli("mcp", "import", str(f))
    assert proc.returncode == 0, proc.stderr
    assert "note: server 'old' was set up for the older SSE transport" in proc.stdout
