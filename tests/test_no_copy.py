"""The no-copy test: after a scripted session that adds, imports, uses, rotates and removes
secrets through the CLI (real subprocesses, real GNOME Keyring, real MCP servers that check
the header, and the model API key sent to a fake model on 127.0.0.1 in a chat that calls an
MCP tool, then continued, with the model echoing the keys it should never have had), no file
(the kept conversations included) under the config, data and state dirs, no log, no CLI output
and no request body sent to the model contains any secret — raw, base64 or URL-encoded."""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.parse
import uuid
from pathlib import Path

import pytest
from fakemodel import FakeModel
from hearthside.adapters.secrets import KeyringSecretStore
from mcp_helpers import HttpServerProcess, secret_key, stdio_command

pytestmark = pytest.mark.keyring


def forms(value: str) -> set[str]:
    out = set()
    for v in (value, value.split(" ", 1)[-1]):
        raw = v.encode()
        for b in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            out.add(b.decode())
            out.add(b.decode().rstrip("="))
        out.update({urllib.parse.quote(v, safe=""), urllib.parse.quote_plus(v), urllib.parse.quote(v)})
        out.add(v)
    return out


def model_bodies(fm: FakeModel) -> dict[str, bytes]:
    """Every request body the fake model received, as sent (JSON escapes) and unescaped, so the
    search covers what went to the model as well as what was written or printed."""
    out: dict[str, bytes] = {}
    for i, body in enumerate(fm.requests):
        out[f"model request {i}"] = json.dumps(body).encode()
        out[f"model request {i} (unescaped)"] = json.dumps(body, ensure_ascii=False).encode()
    assert out, "the model received no request, so the model check would prove nothing"
    return out


@pytest.mark.slow
def test_no_secret_is_copied_anywhere_after_a_full_session(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    uid = uuid.uuid4().hex[:10]
    added = f"Bearer add/{uid}+A=="            # characters that change under URL-encoding
    rotated = f"Bearer rot/{uid}+R=="
    imported_header = f"imp-{uid}-header?&"
    imported_env = f"ghp_{uid}envEnvEnvEnv"
    extra = f"xk-{uid}-set-secret"
    in_url = f"qs/{uid}+Q=="
    model_key = f"mk/{uid}+K1=="               # the model API key, entered with model set-key
    model_key2 = f"mk/{uid}+K2=="              # ... and rotated
    secrets = [added, rotated, imported_header, imported_env, extra, in_url, model_key, model_key2]

    outputs: list[str] = []

    def cli(*args: str, input: str | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = run_cli(*args, input=input, env={"HEARTHSIDE_LOG_LEVEL": "DEBUG"})
        outputs.extend([proc.stdout, proc.stderr])
        if ok:
            assert proc.returncode == 0, (args, proc.stderr)
        return proc

    secret_dir = tmp_path / "server-side"  # outside the app's dirs: the servers' own copies
    secret_dir.mkdir()
    outside = tmp_path / "host-configs"
    outside.mkdir()
    srv = HttpServerProcess(require_header=("Authorization", added), secret_dir=secret_dir).start()
    srv2 = HttpServerProcess(require_header=("X-Api-Key", imported_header), secret_dir=secret_dir).start()
    try:
        # add (secret from stdin) and use it: the server only answers with the right header
        cli("mcp", "add", "alpha", "--url", srv.url, "--secret-header", "Authorization", input=added + "\n")
        cli("mcp", "test", "alpha")
        cli("mcp", "tools", "alpha", "--json")

        # import a Cursor-style file with a header secret and a stdio env secret
        cmd, args = stdio_command()
        host_file = outside / "mcp.json"
        host_file.write_text(json.dumps({"mcpServers": {
            "beta": {"url": srv2.url, "headers": {"X-Api-Key": imported_header}},
            "gamma": {"command": cmd, "args": args, "env": {"SERVICE_TOKEN": imported_env}},
            "delta": {"url": srv2.url + "?access_token=" + urllib.parse.quote(in_url, safe="")},
        }}))
        cli("mcp", "import", str(host_file))
        cli("mcp", "import", str(host_file), ok=False)  # the duplicate attempt errors cleanly
        cli("mcp", "test", "beta")
        refused = cli("mcp", "test", "delta", ok=False)  # the query secret travels; the server says 401
        assert refused.returncode == 1 and "authentication" in refused.stderr
        cli("mcp", "tools", "gamma", "--json")
        cli("mcp", "set-secret", "gamma", "OTHER_TOKEN", input=extra + "\n")
        cli("mcp", "tools", "gamma")

        # rotate: the server now wants the new value; the old one must fail, the new one work
        srv.kill()
        srv = HttpServerProcess(require_header=("Authorization", rotated), secret_dir=secret_dir,
                                port=srv.port, evil=True).start()
        failed = cli("mcp", "test", "alpha", ok=False)
        assert failed.returncode == 1 and "authentication" in failed.stderr
        cli("mcp", "set-secret", "alpha", "Authorization", input=rotated + "\n")
        cli("mcp", "test", "alpha")
        cli("mcp", "list")
        cli("mcp", "list", "--json")

        # the model API key: stored, used in a chat that calls the secret-guarded MCP server's
        # tool (and a tool that hands the server's secret back), rotated, used again, forgotten
        with FakeModel([{"tool_calls": [("mcp__alpha__echo", '{"text": "ping-through-mcp"}'),
                                        ("mcp__alpha__evil_token", "{}")]},
                        {"text": "done"},
                        # the model echoes the keys it should never have had: the kept
                        # conversation (and everything else) must hold them masked
                        {"text": f"again: {model_key2} {rotated}"}], model_ids=("tiny",)) as fm:
            cli("persona", "new", "juniper")
            cli("model", "use", fm.base_url, "tiny")
            cli("model", "set-key", input=model_key + "\n")
            cli("model", "show", "--json")
            first = cli("chat", "juniper", "hi")
            assert first.stdout.strip() == "done"
            cli("model", "set-key", input=model_key2 + "\n")
            cli("chat", "juniper", "--continue", "hi again")
            cli("model", "forget-key")
        auths = [h.get("authorization") for h in fm.headers]
        assert auths == [f"Bearer {model_key}"] * 2 + [f"Bearer {model_key2}"]
        echoed, evil = fm.requests[1]["messages"][-2:]
        assert echoed["role"] == "tool" and "ping-through-mcp" in json.dumps(echoed)
        assert evil["role"] == "tool" and "EVIL_TOKEN=********" in evil["content"]

        # a doctor run and a failing add with a secret in argv are output too
        cli("doctor", "--json", ok=False)
        cli("mcp", "add", "argv", "--url", srv.url, "--header", f"Authorization={extra}", ok=False)

        # remove everything: the keyring entries go too
        for name in ("alpha", "beta", "gamma", "delta"):
            cli("mcp", "remove", name)
    finally:
        srv.kill()
        srv2.kill()

    store = KeyringSecretStore()
    for ref in ("mcp/alpha/header/authorization", "mcp/beta/header/x-api-key",
                "mcp/gamma/env/SERVICE_TOKEN", "mcp/gamma/env/OTHER_TOKEN", "mcp/delta/query/access_token",
                "model/api_key"):
        assert store.get(ref) is None, ref

    files = [p for p in isolated_home.rglob("*") if p.is_file() and not p.is_symlink()]
    kept = [p for p in files if "conversations" in p.parts and p.suffix == ".jsonl"]
    assert kept, "no conversation was kept, so the conversations check would prove nothing"
    kept_text = b"".join(p.read_bytes() for p in kept)
    assert b"ping-through-mcp" in kept_text and b"again: ********" in kept_text
    assert "left out" not in json.dumps(fm.requests[2]) and "done" in json.dumps(fm.requests[2])  # continued
    logs = [p for p in files if "log" in p.parts]
    assert logs, "the session wrote no log, so the log check would prove nothing"
    assert any("alpha" in p.read_text(errors="replace") for p in logs)
    blobs = {str(p): p.read_bytes() for p in files}
    blobs.update({f"output {i}": o.encode() for i, o in enumerate(outputs)})
    blobs.update(model_bodies(fm))
    hits = []
    for secret in secrets:
        for form in forms(secret):
            for where, data in blobs.items():
                if form.encode() in data:
                    hits.append((secret, form, where))
    assert hits == []
    # The import source file is the one place a plaintext copy may remain, and the user was told.
    assert imported_env in host_file.read_text()
    assert any("plaintext copy still exists" in o for o in outputs)


class _WheelServer:
    """Serves one folder over http on 127.0.0.1 (ignoring the credentials in the URL, which is
    what a private package host would check), for ``plugins install http://user:TOKEN@...``."""

    def __init__(self, folder: Path) -> None:
        import functools
        import http.server
        import threading

        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *a: None  # type: ignore[attr-defined]
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_no_secret_echoed_or_pasted_is_copied_into_any_file_or_output(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    """Issue 9 hole 10: what the model echoes and what the user pastes where it does not belong.
    The search covers every file under the isolated home — ``notifications.jsonl``, the install
    record, the ``.broken-*`` backup of ``mcp.json``, the log, pip's cache — and everything
    ``chat``, ``heartbeat``, ``memory``, ``mcp`` and ``plugins`` printed."""
    import packfactory

    uid = uuid.uuid4().hex[:10]
    model_key = f"mk/{uid}+E1=="          # echoed back by the model in chat and a check-in
    query_secret = f"qs{uid}QUERY"         # mcp add --url 'https://...?api_key=...'
    arg_token = f"at{uid}ARGTOKEN"         # mcp add --command srv -- --token VALUE
    dsn_password = f"pw{uid}DSN"           # mcp add --command srv -- postgresql://u:pw@h/db
    url_token = f"ut{uid}URLTOKEN"         # plugins install http://user:TOKEN@host/x.whl
    pasted = f"Bearer pasted{uid}"         # typed by hand into mcp.json, which is then broken
    secrets = [model_key, query_secret, arg_token, dsn_password, url_token]
    outputs: list[str] = []

    def cli(*args: str, input: str | None = None, ok: bool = True, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        proc = run_cli(*args, input=input, env={"HEARTHSIDE_LOG_LEVEL": "DEBUG", **(env or {})})
        outputs.extend([proc.stdout, proc.stderr])
        if ok:
            assert proc.returncode == 0, (args, proc.stderr)
        return proc

    # The model echoes its own key back (split across streamed pieces) in a chat and a check-in.
    echo = f"Sure. Your key is {model_key} and nobody should see it."
    remember = json.dumps({"key": "notes/key", "value": f"The user's key: {model_key}", "description": "key"})
    with FakeModel([{"text": echo}, {"text": "Alert: " + echo},
                    {"tool_calls": [("memory_remember", remember)]}, {"text": "noted"}],
                   model_ids=("tiny",)) as fm:
        cli("persona", "new", "juniper")
        heartbeat = isolated_home / ".config" / "hearthside" / "personas" / "juniper" / "HEARTBEAT.md"
        heartbeat.write_text("# Checklist\n\n- Tell me my key.\n", encoding="utf-8")
        cli("model", "use", fm.base_url, "tiny")
        cli("model", "set-key", input=model_key + "\n")
        chat = cli("chat", "juniper", "what is my key?")
        run = cli("heartbeat", "run", "juniper")
        cli("chat", "juniper", "remember my key", "--accept-edits")
    tool_turn = [m for m in fm.requests[3]["messages"] if m["role"] == "tool"]
    assert "refused" in json.dumps(tool_turn) and "stored secrets" in json.dumps(tool_turn)
    assert "nobody should see it" in chat.stdout and "********" in chat.stdout
    assert "nobody should see it" in run.stdout
    cli("heartbeat", "history")
    cli("heartbeat", "history", "--json")
    cli("heartbeat", "history", "--alerts")
    cli("heartbeat", "history", "--alerts", "--json")
    cli("memory", "list", "--persona", "juniper")
    cli("memory", "search", "--persona", "juniper", "key")
    history = isolated_home / ".local" / "state" / "hearthside" / "notifications.jsonl"
    assert "nobody should see it" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600

    # Secrets typed on the command line of mcp add go to the keyring, not mcp.json.
    cli("mcp", "add", "q", "--url", f"https://example.invalid/mcp?api_key={query_secret}")
    cli("mcp", "add", "db", "--command", "srv", "--", "--token", arg_token,
        f"postgresql://reader:{dsn_password}@localhost/notes")
    cli("mcp", "list")
    cli("mcp", "list", "--json")
    store = KeyringSecretStore()
    mcp_file = isolated_home / ".config" / "hearthside" / "mcp.json"
    assert store.get(secret_key(mcp_file, "mcp/q/query/api_key")) == query_secret
    assert store.get(secret_key(mcp_file, "mcp/db/arg/2")) == arg_token

    # A pack from a private host: the token is used for the download and stored nowhere.
    wheels = tmp_path / "wheels"
    ep, code, files = packfactory.PACKS["hs-good"]
    packfactory.pip_wheel([packfactory.write_project(tmp_path / "src", "hs-good", ep, code, files)], wheels)
    wheel = next(wheels.glob("hs_good-*.whl")).name
    host = _WheelServer(wheels)
    try:
        cli("plugins", "install", f"http://hsuser:{url_token}@127.0.0.1:{host.port}/{wheel}",
            env={"PIP_NO_INDEX": "1"})
    finally:
        host.close()
    record = isolated_home / ".local" / "state" / "hearthside" / "installed-packs.json"
    assert f"http://127.0.0.1:{host.port}/{wheel}" in record.read_text()
    cli("plugins", "list")

    # A secret pasted into mcp.json by hand, then the file broken: a read leaves it as it is,
    # and the copy kept when the user starts over is 0600.
    mcp_file = isolated_home / ".config" / "hearthside" / "mcp.json"
    mcp_file.write_text('{"servers": {"x": {"url": "https://h.example/mcp", "headers": '
                        f'{{"Authorization": "{pasted}"}}}}}}, oops')
    mcp_file.chmod(0o644)
    cli("mcp", "list")
    assert not list(mcp_file.parent.glob("mcp.json.broken-*"))
    cli("mcp", "start-over")
    [backup] = list(mcp_file.parent.glob("mcp.json.broken-*"))
    assert backup.stat().st_mode & 0o777 == 0o600

    for name in ("q", "db"):
        cli("mcp", "remove", name, ok=False)  # the user started over: they are gone
    cli("model", "forget-key")

    files = [p for p in isolated_home.rglob("*") if p.is_file() and not p.is_symlink()]
    kept = [p for p in files if "conversations" in p.parts and p.suffix == ".jsonl"]
    assert kept, "no conversation was kept, so the conversations check would prove nothing"
    assert b"Your key is ******** and nobody should see it" in b"".join(p.read_bytes() for p in kept)
    assert any("log" in p.parts for p in files)
    blobs = {str(p): p.read_bytes() for p in files}
    blobs.update({f"output {i}": o.encode() for i, o in enumerate(outputs)})
    blobs.update(model_bodies(fm))
    hits = [(s, f, where) for s in secrets for f in forms(s) for where, data in blobs.items()
            if f.encode() in data]
    assert hits == []
    # The pasted value stays only in the user's own (0600) copy of the file they wrote.
    where_pasted = [w for w, data in blobs.items() if pasted.split(" ", 1)[1].encode() in data]
    assert where_pasted == [str(backup)]
