"""A specialist's ``mcpServers`` through a real ``hearthside chat``: real MCP servers on
127.0.0.1, the model a fake server on loopback.

* a reference (a configured server's name) gives the specialist that server's tools, and only
  the named servers' MCP tools;
* an inline streamable-HTTP server is connected for the specialist alone: its header secret
  comes from the keyring and reaches the server, its tools never enter the persona's
  conversation, its connection is closed when the specialist finishes, and the secret is in
  no file, log, output or model request;
* a plain-http inline server that is not on this computer is refused with a sentence."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel, by_system
from mcp_helpers import HttpServerProcess
from personas import make_persona
from test_no_copy import forms

PERSONA = "Be brief."  # juniper's AGENTS.md


def agent_file(folder: Path, name: str, servers: str) -> None:
    (folder / "agents").mkdir(exist_ok=True)
    (folder / "agents" / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: Uses its servers.\nmcpServers:\n{servers}---\n{name.upper()}-MARK\n",
        encoding="utf-8")


def call(tool: str, **args: Any) -> tuple[str, str]:
    return (tool, json.dumps(args))


def marked(fm: FakeModel, marker: str) -> list[dict[str, Any]]:
    return [r for r in fm.requests if marker in r["messages"][0]["content"]]


def names(req: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in req.get("tools") or []}


def tool_messages(req: dict[str, Any]) -> list[str]:
    return [m["content"] for m in req["messages"] if m["role"] == "tool"]


def client_connections(port: int) -> int:
    """Established TCP connections to ``port`` on 127.0.0.1 (from any process of this host)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            remote, state = parts[2], parts[3]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def test_a_reference_gives_the_specialist_that_servers_tools_and_only_those(  # type: ignore[no-untyped-def]
        app_context, run_cli) -> None:
    folder = make_persona(app_context)
    agent_file(folder, "notetaker", "  - notes\n")
    with HttpServerProcess() as notes, HttpServerProcess() as other:
        assert run_cli("mcp", "add", "notes", "--url", notes.url).returncode == 0
        assert run_cli("mcp", "add", "other", "--url", other.url).returncode == 0
        script = by_system({
            "NOTETAKER-MARK": [{"tool_calls": [call("mcp__notes__echo", text="from the notes server")]},
                               {"text": "The server said: from the notes server."}],
            PERSONA: [{"tool_calls": [call("Subagent", agent="notetaker", task="ask the notes server")]},
                      {"text": "done"}]})
        with FakeModel(default=script) as fm:
            proc = run_cli("chat", "juniper", "use the notes", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    persona = names(marked(fm, PERSONA)[0])
    assert {"mcp__notes__echo", "mcp__other__echo"} <= persona
    child = names(marked(fm, "NOTETAKER-MARK")[0])
    assert "mcp__notes__echo" in child and not any(n.startswith("mcp__other__") for n in child)
    assert tool_messages(marked(fm, "NOTETAKER-MARK")[-1]) == ["from the notes server"]
    assert tool_messages(marked(fm, PERSONA)[-1]) == ["The server said: from the notes server."]


def test_a_reference_to_a_server_not_connected_is_said_in_the_result(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "notetaker", "  - nowhere\n")
    script = by_system({"NOTETAKER-MARK": {"text": "Nothing to ask."},
                        PERSONA: [{"tool_calls": [call("Subagent", agent="notetaker", task="ask")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "use the notes", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert tool_messages(marked(fm, PERSONA)[-1]) == [(
        "Nothing to ask.\n\n(the MCP server nowhere its definition names is not connected in this session, "
        "so its tools were left out)")]


@pytest.mark.keyring
def test_an_inline_server_is_the_specialists_alone_with_its_keyring_secret_and_closes_after_it(  # type: ignore[no-untyped-def]
        app_context, run_cli, secret_service, isolated_home: Path, tmp_path: Path) -> None:
    from hearthside.adapters.secrets import KeyringSecretStore
    from hearthside.app.agents import agent_secret_ref

    secret = f"Bearer spc-{uuid.uuid4().hex}"
    folder = make_persona(app_context)
    KeyringSecretStore().set(agent_secret_ref("persona/juniper", "librarian", "private", "Authorization"), secret)
    seen: dict[str, int] = {}
    with HttpServerProcess(require_header=("Authorization", secret), secret_dir=tmp_path,
                           record_headers=tmp_path / "headers.jsonl") as srv:
        agent_file(folder, "librarian", f"  private:\n    type: http\n    url: {srv.url}\n"
                                        "    headers:\n      Authorization: \"${keyring}\"\n")

        def persona_after(body: dict[str, Any]) -> dict[str, Any]:
            seen["after"] = client_connections(srv.port)
            return {"text": "done"}

        def librarian_asks(body: dict[str, Any]) -> dict[str, Any]:
            seen["during"] = client_connections(srv.port)
            return {"tool_calls": [call("mcp__private__echo", text="shelf 4")]}

        script = by_system({
            "LIBRARIAN-MARK": [librarian_asks, {"text": "It is on shelf 4."}],
            PERSONA: [{"tool_calls": [call("Subagent", agent="librarian", task="where is the book?")]},
                      persona_after]})
        with FakeModel(default=script) as fm:
            proc = run_cli("chat", "juniper", "find my book", env=fm.env())
        headers = srv.headers_seen()
    assert proc.returncode == 0, proc.stderr
    assert headers and all(h.get("authorization") == secret for h in headers)  # the secret arrived
    assert seen["during"] >= 1 and seen["after"] == 0  # connected for the specialist, closed after it
    assert "mcp__private__echo" in names(marked(fm, "LIBRARIAN-MARK")[0])
    assert tool_messages(marked(fm, "LIBRARIAN-MARK")[-1]) == ["shelf 4"]
    for req in marked(fm, PERSONA):  # never in the main conversation
        assert not any(n.startswith("mcp__private__") for n in names(req))
    assert tool_messages(marked(fm, PERSONA)[-1]) == ["It is on shelf 4."]
    blobs = {str(p): p.read_bytes() for p in isolated_home.rglob("*") if p.is_file() and not p.is_symlink()}
    assert any("log" in Path(p).parts for p in blobs), "no log was written, so the log check proves nothing"
    blobs["stdout"], blobs["stderr"] = proc.stdout.encode(), proc.stderr.encode()
    for i, body in enumerate(fm.requests):
        blobs[f"model request {i}"] = json.dumps(body).encode()
    hits = [(form, where) for form in forms(secret) for where, data in blobs.items() if form.encode() in data]
    assert hits == []


def test_a_plain_http_inline_server_elsewhere_is_refused(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = make_persona(app_context)
    agent_file(folder, "librarian", "  faraway:\n    type: http\n    url: http://books.example/mcp\n")
    script = by_system({"LIBRARIAN-MARK": {"text": "No server."},
                        PERSONA: [{"tool_calls": [call("Subagent", agent="librarian", task="ask")]}, {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        proc = run_cli("chat", "juniper", "find my book", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert not any(n.startswith("mcp__faraway__") for n in names(marked(fm, "LIBRARIAN-MARK")[0]))
    assert tool_messages(marked(fm, PERSONA)[-1]) == [(
        "No server.\n\n(its MCP server faraway was not connected: its URL uses plain http to books.example, "
        "which is not this computer; a specialist's server must use https (or http on this computer))")]
