"""The no-copy test: after a scripted session that adds, imports, uses, rotates and removes
secrets through the CLI (real subprocesses, real GNOME Keyring, real MCP servers that check
the header, and the model API key sent to a fake model on 127.0.0.1 in a chat that calls an
MCP tool), no file under the config, data and state dirs, no log and no CLI output contains
any secret — raw, base64 or URL-encoded."""

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
from mcp_helpers import HttpServerProcess, stdio_command

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
                                port=srv.port).start()
        failed = cli("mcp", "test", "alpha", ok=False)
        assert failed.returncode == 1 and "authentication" in failed.stderr
        cli("mcp", "set-secret", "alpha", "Authorization", input=rotated + "\n")
        cli("mcp", "test", "alpha")
        cli("mcp", "list")
        cli("mcp", "list", "--json")

        # the model API key: stored, used in a chat that calls the secret-guarded MCP server's
        # tool, rotated, used again, forgotten
        with FakeModel([{"tool_calls": [("mcp__alpha__echo", '{"text": "ping-through-mcp"}')]},
                        {"text": "done"}, {"text": "again"}], model_ids=("tiny",)) as fm:
            cli("persona", "new", "juniper")
            cli("model", "use", fm.base_url, "tiny")
            cli("model", "set-key", input=model_key + "\n")
            cli("model", "show", "--json")
            first = cli("chat", "juniper", "hi")
            assert first.stdout.strip() == "done"
            cli("model", "set-key", input=model_key2 + "\n")
            cli("chat", "juniper", "hi again")
            cli("model", "forget-key")
        auths = [h.get("authorization") for h in fm.headers]
        assert auths == [f"Bearer {model_key}"] * 2 + [f"Bearer {model_key2}"]
        tool_turn = fm.requests[1]["messages"][-1]
        assert tool_turn["role"] == "tool" and "ping-through-mcp" in json.dumps(tool_turn)

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
    logs = [p for p in files if "log" in p.parts]
    assert logs, "the session wrote no log, so the log check would prove nothing"
    assert any("alpha" in p.read_text(errors="replace") for p in logs)
    blobs = {str(p): p.read_bytes() for p in files}
    blobs.update({f"output {i}": o.encode() for i, o in enumerate(outputs)})
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
