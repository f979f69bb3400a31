"""Issue 18, hole 2 and three items of hole 9, against real MCP servers on 127.0.0.1, the real
GNOME Keyring, the real ``hearthside`` command and the real MCP window (Qt offscreen).

- An imported host file never carries a secret reference: refused, nothing added.
- A secret whose server entry is gone from ``mcp.json`` (deleted by hand, or the file damaged
  and set aside) is orphaned: a re-created entry of the same name never sends it, ``doctor``
  lists it by reference, ``mcp forget-orphans`` and the MCP window delete it.
- Tokens in a URL's path, fragment, ``?auth=`` or ``?sig=`` go to the keyring, are masked when
  shown and are put back only when connecting.
- ``http://evil.localhost`` is not loopback: a secret is refused over plain http to it.
- A stdio server stuck in a call, and the child it started, end when ``hearthside chat`` stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fakemodel import FakeModel
from hearthside.adapters.secrets import KeyringSecretStore
from hearthside.app.model import key_may_travel
from hearthside.core.mcpconfig import (
    McpConfigError,
    SecretRef,
    ServerConfig,
    is_loopback_host,
    validate_server,
)
from hearthside.core.redact import redact
from mcp_helpers import HttpServerProcess, RawServer, host_pids, mcp_file, parent_pid, secret_key, stdio_command

pytestmark = pytest.mark.keyring


def _wait(pred, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())


# --- hole 2 (a): an import never carries a reference -------------------------------------------


@pytest.mark.parametrize("where", [
    {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": {"secret": "mcp/gh/header/authorization"}}},
    {"url": "http://127.0.0.1:9/mcp", "url_secrets": {"k": {"secret": "mcp/gh/query/k"}}},
    {"command": "x", "env": {"GITHUB_TOKEN": {"secret": "mcp/gh/env/GITHUB_TOKEN"}}},
    {"command": "x", "args": [{"secret": "mcp/gh/arg/1"}]},
])
def test_an_imported_file_with_a_secret_reference_is_refused_and_adds_nothing(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path, where: dict
) -> None:
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": {"fine": {"command": "y"}, "gh": where}}))
    proc = run_cli("mcp", "import", str(host))
    assert proc.returncode == 1, proc.stdout
    [line] = proc.stderr.strip().splitlines()
    assert "'gh'" in line and "nothing was imported" in line and "mcp/gh/" in line
    assert not mcp_file(isolated_home).exists()


# --- hole 2 (b): a secret left behind is orphaned ----------------------------------------------


@pytest.mark.parametrize("how", ["deleted by hand", "damaged and started over"])
def test_a_secret_left_behind_is_never_sent_listed_by_doctor_and_deleted(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path, how: str
) -> None:
    token = f"Bearer gh-{uuid.uuid4().hex}"
    path = mcp_file(isolated_home)
    assert run_cli("mcp", "add", "gh", "--url", "https://api.example.com/mcp", "--secret-header",
                   "Authorization", input=token + "\n").returncode == 0
    old_key = secret_key(path, "mcp/gh/header/authorization")
    assert KeyringSecretStore().get(old_key) == token
    if how == "deleted by hand":
        path.write_text(json.dumps({"version": 1, "servers": {}}))
    else:
        path.write_text('{"servers": {"gh": ')
        assert run_cli("mcp", "list").returncode == 0 and path.exists()  # a read never moves it
        assert run_cli("mcp", "start-over").returncode == 0  # the user's choice sets it aside
        assert list(path.parent.glob("mcp.json.broken-*"))
    srv = HttpServerProcess(record_headers=tmp_path / "headers.jsonl").start()
    try:
        # The entry comes back (typed by hand, or pasted from somewhere) with a new URL and the
        # old reference, with and without a made-up id.
        for extra in ({}, {"id": uuid.uuid4().hex}):
            path.write_text(json.dumps({"version": 1, "servers": {"gh": {
                "type": "http", "url": srv.url, **extra,
                "headers": {"Authorization": {"secret": "mcp/gh/header/authorization"}}}}}))
            test = run_cli("mcp", "test", "gh")
            assert test.returncode == 1 and "is not set" in test.stderr, test.stderr
    finally:
        srv.kill()
    seen = srv.headers_seen()
    assert not [h for h in seen if token.split()[1] in json.dumps(h)]  # nothing reached it at all

    doctor = run_cli("doctor", "--json")
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "mcp-secrets"]
    assert check["status"] == "warn" and check["data"]["orphaned"] == ["mcp/gh/header/authorization"]
    assert token.split()[1] not in doctor.stdout + doctor.stderr
    forget = run_cli("mcp", "forget-orphans")
    assert forget.returncode == 0 and "1 orphaned secret(s) deleted" in forget.stdout
    assert KeyringSecretStore().get(old_key) is None
    # the re-created entry's own secret is kept: it is not an orphan
    assert run_cli("mcp", "set-secret", "gh", "Authorization", input="Bearer new-one-123456\n").returncode == 0
    assert run_cli("mcp", "forget-orphans").stdout.startswith("0 orphaned")
    new_key = secret_key(path, "mcp/gh/header/authorization")
    assert KeyringSecretStore().get(new_key) == "Bearer new-one-123456"
    assert run_cli("mcp", "remove", "gh").returncode == 0
    assert KeyringSecretStore().get(new_key) is None


def test_the_mcp_window_offers_to_delete_orphaned_secrets(qtbot, app_context, secret_service) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.mcp import McpWindow
    from manage_helpers import make_bridge

    svc = app_context.mcp
    svc.add(ServerConfig("gone", "http", url="https://gone.example.com/mcp"), {"X-API-Key": "k-" + uuid.uuid4().hex})
    key = secret_key(app_context.paths.mcp_file, "mcp/gone/header/x-api-key")
    with svc.editing():
        svc.save(svc.load().without("gone"))  # as if removed by hand: the keyring entry stays
    bridge = make_bridge(app_context)
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.orphans_btn.isVisible(), timeout=20000)
        assert w.orphans_btn.text() == "1 saved secret(s) belong to no server — Delete"
        with qtbot.waitSignal(w.finished_action, timeout=20000, check_params_cb=lambda a: a == "orphans"):
            w.orphans_btn.click()
        assert KeyringSecretStore().get(key) is None
        qtbot.waitUntil(lambda: not w.orphans_btn.isVisible(), timeout=20000)
    finally:
        bridge.close()


# --- hole 9: URL tokens ----------------------------------------------------------------------


def test_tokens_in_a_url_path_fragment_auth_and_sig_go_to_the_keyring_and_back_only_when_connecting(  # type: ignore[no-untyped-def]
    app_context, secret_service, tmp_path: Path
) -> None:
    path_token = uuid.uuid4().hex + "Zq7"
    auth, sig = "au" + uuid.uuid4().hex, "sg" + uuid.uuid4().hex
    frag = "fr" + uuid.uuid4().hex
    svc = app_context.mcp
    with RawServer("401") as srv:
        url = f"http://127.0.0.1:{srv.port}/v1/{path_token}/mcp?region=eu&auth={auth}&sig={sig}#{frag}"
        added = svc.add(ServerConfig("tk", "http", url=url, timeout=15))
        text = app_context.paths.mcp_file.read_text()
        for secret in (path_token, auth, sig, frag):
            assert secret not in text
            assert secret not in added.url and secret not in redact(url)
        assert "region=eu" in added.url and "/v1/********/mcp" in added.url
        [entry] = svc.entries()
        assert {s.key for s in entry.secrets} == {"/2", "#", "?auth", "?sig"}
        assert all(s.is_set for s in entry.secrets)
        try:
            app_context.runtime.run(svc.connect_all(), timeout=60)
        finally:
            app_context.runtime.run(svc.close(), timeout=30)
            svc.remove("tk")
        first = srv.requests[0][":request"]
    assert f"/v1/{path_token}/mcp?" in first and f"auth={auth}" in first and f"sig={sig}" in first


# --- hole 9: loopback ------------------------------------------------------------------------


def test_only_literal_loopback_or_localhost_itself_counts_as_this_computer() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"):
        assert is_loopback_host(host), host
    for host in ("evil.localhost", "localhost.evil.com", "127.0.0.1.nip.io", "localhost.", "10.0.0.1", ""):
        assert not is_loopback_host(host), host
    cfg = ServerConfig("ev", "http", url="http://evil.localhost:8000/mcp",
                       headers={"Authorization": SecretRef("mcp/ev/header/authorization")})
    with pytest.raises(McpConfigError, match="plain http"):
        validate_server(cfg)
    assert not key_may_travel("http://evil.localhost:11434/v1")
    assert key_may_travel("http://127.0.0.1:11434/v1") and key_may_travel("http://localhost:11434/v1")


# --- hole 9: a stuck stdio server ends with Hearthside ---------------------------------------


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie whose parent is gone is reaped by init soon; a live process has a state != Z
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


@pytest.mark.parametrize("ignore_term", [False, True])
def test_a_stdio_server_stuck_in_a_call_and_its_child_end_when_chat_stops(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path, ignore_term: bool
) -> None:
    pidfile = tmp_path / "pids"
    cmd, args = stdio_command()
    extra = ["--hang-tool"] + (["--ignore-term"] if ignore_term else [])
    # tmp_path as an argument: the server's own root, writable inside the sandbox (the rest of
    # /tmp is private to it)
    assert run_cli("mcp", "add", "stuck", "--command", cmd, "--", *args, *extra, str(tmp_path)).returncode == 0
    call = ("mcp__stuck__hang", json.dumps({"pidfile": str(pidfile)}))
    with FakeModel([{"tool_calls": [call]}, {"text": "never"}], model_ids=("tiny",)) as fm:
        assert run_cli("persona", "new", "juniper").returncode == 0
        assert run_cli("model", "use", fm.base_url, "tiny").returncode == 0
        chat = subprocess.Popen([sys.executable, "-m", "hearthside", "chat", "juniper", "go"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ))
        try:
            assert _wait(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 2, 90), \
                chat.stderr.read1().decode() if chat.poll() is not None else "no pids"  # type: ignore[union-attr]
            (child,) = host_pids(str(pidfile))  # the pids in the file are the sandbox's own
            server = parent_pid(child)
            chat.send_signal(signal.SIGINT)  # Ctrl-C while the tool call never ends
            chat.wait(60)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait(10)
    try:
        assert _wait(lambda: _gone(server) and _gone(child), 30), "the server or its child outlived chat"
    finally:
        for pid in (server, child):
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
