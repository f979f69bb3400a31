"""Issue 22, items 4 and 5: MCP results in bounds, and no write through an MCP server.

Real MCP servers (``mcp_bounds_server.py``, the SDK's ``MCPServer``) over streamable HTTP on
127.0.0.1 and over stdio, the real CLI, and the fake model as a real HTTP server: what the
model is sent is read from the fake model's recorded requests.

- A 5 MB result reaches the model as at most the cap plus one notice saying how much was cut;
  a server's own ``max_result_chars`` is used; a bad one gets one sentence and the default.
- An image or a binary resource is described (type, size), never inlined as base64.
- A tool that runs only as a task is listed as left out, with the reason, and never offered.
- Under accept-edits, a filesystem-style ``write_file`` rooted at the home folder cannot
  write the soul, a persona folder (through ``..`` or a link) or ``settings.toml``; the model
  is told the guard's sentence, the bytes are unchanged; an ordinary path is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel
from hearthside.core.mcpresults import DEFAULT_MAX_RESULT_CHARS
from mcp_helpers import free_port, mcp_file, wait_port

SERVER = Path(__file__).resolve().parent / "mcp_bounds_server.py"


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def _tool_results(fm: FakeModel, request: int = -1) -> list[str]:
    return [m["content"] for m in fm.requests[request]["messages"] if m["role"] == "tool"]


def _chat(run_cli: Any, calls: list[tuple[str, str]], *extra: str) -> tuple[Any, FakeModel]:
    with FakeModel([{"tool_calls": calls}, {"text": "done"}]) as fm:
        chat = run_cli("chat", "kip", "hi", *extra, env=fm.env())
    assert chat.returncode == 0, chat.stderr
    return chat, fm


def _set_entry(home: Path, server: str, **values: Any) -> None:
    path = mcp_file(home)
    doc = json.loads(path.read_text())
    doc["servers"][server].update(values)
    path.write_text(json.dumps(doc))


def test_a_5mb_result_reaches_the_model_capped_with_a_notice(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, http_server: str
) -> None:
    assert run_cli("mcp", "add", "logs", "--url", http_server).returncode == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    _, fm = _chat(run_cli, [("mcp__logs__big_text", json.dumps({"size": 5_000_000}))])
    [result] = _tool_results(fm)
    notice = "[cut: 4,950,000 more characters of this result were left out"
    assert notice in result
    body, _, tail = result.rpartition("\n[cut: ")
    assert len(body) == DEFAULT_MAX_RESULT_CHARS and len(tail) < 200
    assert body.startswith("line of a very long log file")
    # the whole request to the model is the cap plus the rest of the conversation, not 5 MB
    assert len(json.dumps(fm.requests[-1])) < DEFAULT_MAX_RESULT_CHARS + 20_000

    # the server's own cap is used
    _set_entry(isolated_home, "logs", max_result_chars=2_000)
    _, fm = _chat(run_cli, [("mcp__logs__big_text", json.dumps({"size": 5_000_000}))])
    [result] = _tool_results(fm)
    assert "[cut: 4,998,000 more characters" in result and "capped at 2,000 characters" in result
    assert len(result.rpartition("\n[cut: ")[0]) == 2_000
    listed = run_cli("mcp", "list", "--json")
    assert json.loads(listed.stdout)[0]["max_result_chars"] == 2_000


def test_many_items_are_capped_and_a_small_result_is_untouched(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, http_server: str
) -> None:
    assert run_cli("mcp", "add", "logs", "--url", http_server).returncode == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    _, fm = _chat(run_cli, [("mcp__logs__many_items", '{"n": 250}'), ("mcp__logs__big_text", '{"size": 300}')])
    many, small = _tool_results(fm)
    assert many.splitlines()[:100] == [f"item {i}" for i in range(100)]
    assert "item 100" not in many and "150 more items of this result were left out" in many
    assert "[cut" not in small and len(small) == 300


@pytest.mark.parametrize("bad", [-5, "lots", 10**12, 2.5, True])
def test_a_bad_max_result_chars_is_named_and_the_default_used(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, http_server: str, bad: Any
) -> None:
    assert run_cli("mcp", "add", "logs", "--url", http_server).returncode == 0
    _set_entry(isolated_home, "logs", max_result_chars=bad)
    listed = run_cli("mcp", "list")
    assert listed.returncode == 0
    [line] = [ln for ln in listed.stderr.splitlines() if "max_result_chars" in ln]
    assert "the default of 50,000 characters is used" in line and line.count(". ") == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    _, fm = _chat(run_cli, [("mcp__logs__big_text", json.dumps({"size": 200_000}))])
    [result] = _tool_results(fm)
    assert len(result.rpartition("\n[cut: ")[0]) == DEFAULT_MAX_RESULT_CHARS
    assert "[cut: 150,000 more characters" in result


def test_images_and_blobs_are_described_not_inlined(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, http_server: str
) -> None:
    assert run_cli("mcp", "add", "charts", "--url", http_server).returncode == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    _, fm = _chat(run_cli, [("mcp__charts__picture", '{"size": 2100000}'), ("mcp__charts__blob", '{"size": 4096}')])
    picture, blob = _tool_results(fm)
    assert picture == "here is the chart\n[an image, image/png, 2.1 MB, not shown]"
    assert blob == "[a binary resource, application/zip, file:///srv/archive.zip, 4.1 kB, not shown]"
    assert "iVBOR" not in json.dumps(fm.requests[-1])  # no base64 PNG went to the model


def test_a_task_only_tool_is_listed_as_left_out_not_offered(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, http_server: str
) -> None:
    assert run_cli("mcp", "add", "jobs", "--url", http_server).returncode == 0
    tools = run_cli("mcp", "tools", "jobs")
    assert tools.returncode == 0, tools.stderr
    assert ("left out tool 'task_only': it runs only as a long-running MCP task, which Hearthside "
            "does not support yet") in tools.stdout
    assert "mcp__jobs__task_only" not in tools.stdout.split("left out tool")[0]
    test = run_cli("mcp", "test", "jobs", "--json")
    assert json.loads(test.stdout)["state"] == "connected"
    assert run_cli("persona", "new", "kip").returncode == 0
    _, fm = _chat(run_cli, [("mcp__jobs__big_text", '{"size": 10}')])
    offered = [t["function"]["name"] for t in fm.requests[0].get("tools", [])]
    assert "mcp__jobs__big_text" in offered and "mcp__jobs__task_only" not in offered


# --- item 5: the path guard -----------------------------------------------------------------


def _persona_dir(home: Path, name: str) -> Path:
    return home / ".config" / "hearthside" / "personas" / name


def _snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {p: (p.read_bytes() if p.exists() else None) for p in paths}


def test_an_mcp_write_into_the_soul_a_persona_or_settings_is_refused_under_accept_edits(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path
) -> None:
    home = isolated_home
    assert run_cli("mcp", "add", "fs", "--command", sys.executable, "--", str(SERVER), "stdio",
                   str(home)).returncode == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    kip = _persona_dir(home, "kip")
    assert (kip / "SOUL.md").is_file()
    settings = home / ".config" / "hearthside" / "settings.toml"
    if not settings.exists():
        settings.write_text("# written by hand\n")
    soul = home / ".config" / "hearthside" / "soul.md"
    (home / "kip-link").symlink_to(kip)
    watched = [kip / "SOUL.md", kip / "HEARTBEAT.md", settings, soul, kip / "new.md", kip / "linked.md"]
    before = _snapshot(watched)
    dotted = f"{kip}/../kip/SOUL.md"
    calls = [
        ("mcp__fs__write_file", json.dumps({"path": dotted, "content": "pwned"})),
        ("mcp__fs__write_file", json.dumps({"path": str(home / "kip-link" / "linked.md"), "content": "pwned"})),
        ("mcp__fs__write_file", json.dumps({"path": "kip-link/new.md", "content": "pwned"})),
        ("mcp__fs__write_file", json.dumps({"path": "~/.config/hearthside/settings.toml", "content": "pwned"})),
        ("mcp__fs__write_file", json.dumps({"path": f"file://{soul}", "content": "pwned"})),
        ("mcp__fs__write_file", json.dumps({"path": str(home / "notes" / "todo.md"), "content": "milk"})),
        ("mcp__fs__read_file", json.dumps({"path": dotted})),
    ]
    _, fm = _chat(run_cli, calls, "--accept-edits")
    results = _tool_results(fm)
    for i in range(5):
        assert results[i].startswith("Error: Refused: "), results[i]
        assert "which Hearthside never lets a tool change; reading it is still allowed." in results[i]
    assert f"{kip}/SOUL.md is inside the persona folder of kip" in results[0]
    assert "Hearthside's config folder" in results[3] or "settings.toml" in results[3]
    assert _snapshot(watched) == before  # nothing was written, byte for byte
    assert results[5] == f"Successfully wrote to {home / 'notes' / 'todo.md'}"
    assert (home / "notes" / "todo.md").read_text() == "milk"
    assert results[6] == (kip / "SOUL.md").read_text()  # reading stays allowed


def test_the_approval_prompt_shows_the_resolved_path_and_the_refusal(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path
) -> None:
    home = isolated_home
    assert run_cli("mcp", "add", "fs", "--command", sys.executable, "--", str(SERVER), "stdio",
                   str(home)).returncode == 0
    assert run_cli("persona", "new", "kip").returncode == 0
    kip = _persona_dir(home, "kip")
    before = (kip / "SOUL.md").read_bytes()
    notes = home / "notes"
    notes.mkdir()
    calls = [("mcp__fs__write_file", json.dumps({"path": f"{kip}/../kip/SOUL.md", "content": "x"})),
             ("mcp__fs__write_file", json.dumps({"path": "notes/../notes/a.md", "content": "x"}))]
    with FakeModel([{"tool_calls": calls}, {"text": "done"}]) as fm:
        chat = run_cli("chat", "kip", "hi", env=fm.env())  # no terminal: asked calls are denied
    assert chat.returncode == 0, chat.stderr
    assert f"mcp__fs__write_file: run: Refused: {kip}/SOUL.md is inside the persona folder of kip" in chat.stderr
    # the ordinary call is denied (no terminal); the prompt a terminal gets shows where it lands
    import asyncio

    from hearthside.adapters.mcp_client import McpConnection
    from hearthside.core.approval import describe_call
    from hearthside.core.mcpconfig import server_from_entry
    from hearthside.core.tools import ToolEnv
    from hearthside.core.writeguard import WriteGuard

    cfg, _, _ = server_from_entry("fs", {"command": sys.executable, "args": [str(SERVER), "stdio", str(home)]})

    async def tool_of_real_server() -> Any:
        conn = McpConnection(cfg, lambda ref: None, reconnect=False)
        try:
            assert (await conn.start()).state == "connected"
            return next(t for t in conn.tools() if t.remote_name == "write_file")
        finally:
            await conn.close()

    tool = asyncio.run(tool_of_real_server())
    guard = WriteGuard.of([(kip, "the persona folder of kip")])
    req = describe_call(tool, {"path": f"{kip}/../kip/SOUL.md", "content": "x"}, ToolEnv(write_guard=guard))
    assert req.rest[0] == ("path", f"{kip}/SOUL.md (as written: {kip}/../kip/SOUL.md)")
    assert req.refusal.startswith(f"Refused: {kip}/SOUL.md is inside the persona folder of kip")
    req = describe_call(tool, {"path": "notes/../notes/a.md", "content": "x"}, ToolEnv(write_guard=guard))
    assert req.rest[0][1].startswith(f"{notes}/a.md or ") and req.refusal == ""
    assert [t[0] for t in req.rest] == ["path", "content"]  # one-word content: checked, not shown
    assert (kip / "SOUL.md").read_bytes() == before and not (notes / "a.md").exists()
    assert os.path.isdir(notes)


def test_only_servers_on_this_computer_have_their_paths_checked(isolated_home: Path) -> None:
    """A remote server's ``path`` names a file over there (a repository, an API route such as
    ``/``): refusing it would break remote tools for nothing. A loopback one is checked."""
    from hearthside.adapters.mcp_client import McpConnection, McpTool
    from hearthside.core.mcpconfig import server_from_entry
    from hearthside.core.tools import ToolEnv
    from hearthside.core.writeguard import WriteGuard

    kip = _persona_dir(isolated_home, "kip")
    env = ToolEnv(write_guard=WriteGuard.of([(kip, "the persona folder of kip")]))
    args = {"path": f"{kip}/SOUL.md", "content": "x"}
    for url, refused in (("https://code.example/mcp", False), ("http://127.0.0.1:9/mcp", True),
                         ("http://[::1]:9/mcp", True)):
        cfg, _, _ = server_from_entry("fs", {"url": url})
        tool = McpTool(McpConnection(cfg, lambda ref: None, reconnect=False), "write_file", "", {}, False)
        assert bool(tool.refusal(args, env)) is refused, url
        read = McpTool(McpConnection(cfg, lambda ref: None, reconnect=False), "read_file", "", {}, True)
        assert read.refusal(args, env) == ""


def test_the_mcp_window_lists_the_task_only_tool_as_left_out(  # type: ignore[no-untyped-def]
    qtbot, app_context, http_server: str
) -> None:
    from hearthside.ui.windows.mcp import McpWindow
    from manage_helpers import make_bridge

    bridge = make_bridge(app_context)
    app_context.mcp.on_status = bridge.mcp_status.emit  # as the lifecycle does in the app
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.detail.text() != "Reading the servers…", timeout=20000)
        dlg = w.show_add()
        dlg.name.setText("jobs")
        dlg.kind.setCurrentIndex(0)
        dlg.url.setText(http_server)
        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            dlg.save_btn.click()
        text = w.detail.text()
        assert "Tools left out: task_only (it runs only as a long-running MCP task, which Hearthside " \
               "does not support yet)" in text, text
    finally:
        app_context.runtime.run(app_context.mcp.close(), timeout=30)
        bridge.close()
