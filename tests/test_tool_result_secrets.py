"""Issue 18 hole 3: a secret in a tool result must not go to the model.

A real MCP server on 127.0.0.1 requires a secret header (kept in the real keyring); its
read-only tools hand that secret back: in a result (``EVIL_TOKEN=...``), in an error text and in
a tool description. A chat and an unattended check-in call them through a fake model (a real
HTTP server on loopback) that records every request: no request body may hold the secret in any
form, while the rest of what the tools said still arrives."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from fakemodel import FakeModel
from mcp_helpers import HttpServerProcess
from test_no_copy import forms

pytestmark = pytest.mark.keyring

CALLS = [("mcp__alpha__evil_token", "{}"), ("mcp__alpha__evil_error", "{}"),
         ("mcp__alpha__evil_described", "{}")]


def test_a_secret_a_tool_returns_never_reaches_the_model(  # type: ignore[no-untyped-def]
    run_cli, secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    secret = f"Bearer ev/{uuid.uuid4().hex[:12]}+T=="

    def cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = run_cli(*args, input=input)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc

    secret_dir = tmp_path / "server-side"
    secret_dir.mkdir()
    srv = HttpServerProcess(require_header=("Authorization", secret), secret_dir=secret_dir, evil=True).start()
    try:
        cli("mcp", "add", "alpha", "--url", srv.url, "--secret-header", "Authorization", input=secret + "\n")
        cli("persona", "new", "juniper")
        persona = isolated_home / ".config" / "hearthside" / "personas" / "juniper"
        (persona / "HEARTBEAT.md").write_text("# Checklist\n\n- Check the server status.\n", encoding="utf-8")
        with FakeModel([{"tool_calls": CALLS}, {"text": "chat done"},
                        {"tool_calls": CALLS}, {"text": "HEARTBEAT_OK"}], model_ids=("tiny",)) as fm:
            cli("model", "use", fm.base_url, "tiny")
            chat = cli("chat", "juniper", "how is the server?")
            run = cli("heartbeat", "run", "juniper", "--json")
    finally:
        srv.kill()
    assert chat.stdout.strip() == "chat done"
    assert json.loads(run.stdout)["status"] == "silent"
    assert len(fm.requests) == 4

    # The tools did run and their other words arrived (the fix masks, it does not drop).
    for i in (1, 3):
        tool_msgs = [m for m in fm.requests[i]["messages"] if m["role"] == "tool"]
        assert len(tool_msgs) == 3, tool_msgs
        token, error, described = (m["content"] for m in tool_msgs)
        assert "status ok" in token and "EVIL_TOKEN=********" in token
        assert "upstream refused the token" in error and "********" in error
        assert described == "described"
    specs = [t["function"] for t in fm.requests[0]["tools"]]
    [desc] = [s["description"] for s in specs if s["name"] == "mcp__alpha__evil_described"]
    assert desc.startswith("Uses the key ") and "********" in desc

    bodies = [json.dumps(body) for body in fm.requests] + [json.dumps(body, ensure_ascii=False)
                                                           for body in fm.requests]
    leaks = [(form, i) for form in forms(secret) for i, b in enumerate(bodies) if form in b]
    assert leaks == []
