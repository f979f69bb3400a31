"""The process sandbox (issue 24): stdio MCP servers run under real bubblewrap, started by the
app's own code path (``AppContext.mcp``), and cannot change the soul, a persona folder or
Hearthside's files, nor reach the keyring over D-Bus — while their own root stays writable.

The hostile server (tests/sandbox_server.py) offers tools with *no path argument*, so
Hearthside's argument guard has nothing to check: whatever stops them is the operating system.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hearthside.adapters import sandbox
from hearthside.app.context import AppContext
from hearthside.app.runtime import Runtime
from hearthside.app.writeguard import build_write_guard
from hearthside.core.mcpconfig import ServerConfig
from hearthside.core.tools import ToolEnv, ToolResult
from mcp_helpers import host_pids

SERVER = Path(__file__).resolve().parent / "sandbox_server.py"

pytestmark = pytest.mark.skipif(not sandbox.probe(refresh=True).ok, reason="bubblewrap cannot run here")


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    rt = Runtime(name="sandbox-test-runtime")
    yield rt
    rt.stop()


@pytest.fixture
def ctx(app_context: AppContext, secret_service: None) -> Iterator[AppContext]:
    app_context.personas.create("juniper")
    yield app_context
    sandbox.probe(refresh=True)  # a test that changed PATH leaves no stale answer behind


def _snapshot(*paths: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in paths}


def _attack_cfg(ctx: AppContext, name: str, root: Path, bus: str = "") -> ServerConfig:
    soul = ctx.paths.personas_dir / "juniper" / "SOUL.md"
    args = (str(SERVER), "attack", str(root), f"--soul={soul}", f"--settings={ctx.paths.settings_file}",
            f"--elsewhere={ctx.paths.config_dir.parent / 'elsewhere.txt'}", f"--bus={bus}")
    return ServerConfig(name, "stdio", command=sys.executable, args=args, timeout=30)


def _call(ctx: AppContext, runtime: Runtime, server: str, tool: str, args: dict[str, object] | None = None,
          env: ToolEnv | None = None) -> ToolResult:
    tools = {t.spec.name: t for t in ctx.mcp.tools()}
    return runtime.run(tools[f"mcp__{server}__{tool}"].execute(args or {}, env or ToolEnv()), timeout=60)


def _connect(ctx: AppContext, runtime: Runtime) -> None:
    for status in runtime.run(ctx.mcp.connect_all(), timeout=90):
        assert status.state == "connected", status.reason


def test_a_hostile_stdio_server_cannot_write_the_soul_or_settings_nor_read_the_keyring_but_writes_its_root(
    ctx: AppContext, runtime: Runtime, tmp_path: Path
) -> None:
    ctx.secrets.set("sandbox-test/secret", "keyring-secret-4471")
    ctx.settings.set("model.base_url", "http://127.0.0.1:9/v1")  # settings.toml exists
    soul = ctx.paths.personas_dir / "juniper" / "SOUL.md"
    before = _snapshot(soul, ctx.paths.settings_file)
    root = ctx.paths.config_dir.parent / "work"  # a folder in the home, given to the server
    root.mkdir()
    bus = os.environ["DBUS_SESSION_BUS_ADDRESS"]
    ctx.mcp.add(_attack_cfg(ctx, "attack", root, bus))
    try:
        _connect(ctx, runtime)
        assert ctx.mcp._connections["attack"].sandbox_plan.sandboxed
        soul_try = _call(ctx, runtime, "attack", "write_soul")
        settings_try = _call(ctx, runtime, "attack", "write_settings")
        keyring_try = _call(ctx, runtime, "attack", "read_keyring")
        own = _call(ctx, runtime, "attack", "write_own", {"name": "notes.txt", "text": "mine\n"})
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    # (a)-(c) fail, and the failure is the tool's error the model sees
    assert soul_try.is_error and "Read-only file system" in soul_try.content, soul_try.content
    assert settings_try.is_error and "Read-only file system" in settings_try.content, settings_try.content
    assert keyring_try.is_error and "could not reach the session bus" in keyring_try.content, keyring_try.content
    assert "keyring-secret-4471" not in keyring_try.content
    assert _snapshot(soul, ctx.paths.settings_file) == before
    # (d) works
    assert not own.is_error, own.content
    assert (root / "notes.txt").read_text() == "mine\n"


def test_the_keyring_bus_is_reachable_outside_the_sandbox(ctx: AppContext, runtime: Runtime) -> None:
    """The control for the test above: the same tool, sandbox off, reads the secret — so the
    failure there is the sandbox's doing, not a broken tool."""
    ctx.secrets.set("sandbox-test/secret", "keyring-secret-9902")
    ctx.settings.set("mcp.servers.open.sandbox", False)
    root = ctx.paths.config_dir.parent / "work"
    root.mkdir()
    ctx.mcp.add(_attack_cfg(ctx, "open", root, os.environ["DBUS_SESSION_BUS_ADDRESS"]))
    try:
        _connect(ctx, runtime)
        plan = ctx.mcp._connections["open"].sandbox_plan
        result = _call(ctx, runtime, "open", "read_keyring")
        outside = _call(ctx, runtime, "open", "write_elsewhere")
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    assert not plan.sandboxed and "[mcp.servers.open] sandbox = false" in plan.reason
    assert "keyring-secret-9902" in result.content, result.content
    # the per-server off switch: a file outside its roots is written (in the sandbox it is not)
    assert not outside.is_error and (ctx.paths.config_dir.parent / "elsewhere.txt").exists()
    assert "open" in ctx.mcp.sandbox_notice() and "settings.toml" in ctx.mcp.sandbox_notice()


def test_a_server_outside_its_roots_is_refused_and_the_home_stays_untouched(
    ctx: AppContext, runtime: Runtime
) -> None:
    root = ctx.paths.config_dir.parent / "work"
    root.mkdir()
    ctx.mcp.add(_attack_cfg(ctx, "boxed", root))
    try:
        _connect(ctx, runtime)
        result = _call(ctx, runtime, "boxed", "write_elsewhere")
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    # refused (a home outside /tmp is read-only), or — the test home lives under /tmp — written
    # into the server's private /tmp, which nothing outside sees; never into the real folder
    assert (result.is_error and "Read-only file system" in result.content) or str(Path("/tmp")) in result.content
    assert not (ctx.paths.config_dir.parent / "elsewhere.txt").exists()


def test_the_official_style_filesystem_server_given_the_home_cannot_write_a_persona_file(
    ctx: AppContext, runtime: Runtime, isolated_home: Path
) -> None:
    soul = ctx.paths.personas_dir / "juniper" / "SOUL.md"
    before = _snapshot(soul)
    ctx.mcp.add(ServerConfig("files", "stdio", command=sys.executable,
                             args=(str(SERVER), "filesystem", str(isolated_home)), timeout=30))
    guard = ToolEnv(write_guard=build_write_guard(ctx.paths, ctx.personas, ctx.soul_path()))
    try:
        _connect(ctx, runtime)
        conn = ctx.mcp._connections["files"]
        # past Hearthside's guard (as a server that hid the path would be): the OS refuses
        raw = runtime.run(conn.call_tool("write_file", {"path": str(soul), "content": "pwned"}), timeout=60)
        # through the tool as the model calls it: the argument guard refuses first
        guarded = _call(ctx, runtime, "files", "write_file", {"path": str(soul), "content": "pwned"}, guard)
        fine = _call(ctx, runtime, "files", "write_file",
                     {"path": str(isolated_home / "todo.txt"), "content": "buy milk"}, guard)
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    assert raw.is_error and "Read-only file system" in raw.content, raw.content
    assert guarded.is_error and "Refused" in guarded.content
    assert _snapshot(soul) == before
    assert not fine.is_error and (isolated_home / "todo.txt").read_text() == "buy milk"


def _abstract_bus() -> tuple[subprocess.Popen[bytes], str]:
    address = f"unix:abstract=/tmp/hearthside-test-{os.getpid()}-{time.monotonic_ns()}"
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", f"--address={address}", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert bus.stdout is not None
    return bus, bus.stdout.readline().decode().strip()


def test_an_abstract_session_bus_is_cut_off_by_the_network_namespace_unless_the_network_is_on(
    ctx: AppContext, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An abstract socket has no path to hide: with one as the session bus, a server gets no
    network by default; the user's ``network = true`` lets it through (and so the bus too)."""
    bus, address = _abstract_bus()
    try:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        root = ctx.paths.config_dir.parent / "work"
        root.mkdir()
        ctx.mcp.add(_attack_cfg(ctx, "cut", root))
        ctx.mcp.add(_attack_cfg(ctx, "net", root))
        ctx.settings.set("mcp.servers.net.network", True)
        try:
            _connect(ctx, runtime)
            cut = _call(ctx, runtime, "cut", "bus_hello", {"address": address})
            net = _call(ctx, runtime, "net", "bus_hello", {"address": address})
        finally:
            runtime.run(ctx.mcp.close(), timeout=60)
    finally:
        bus.terminate()
        bus.wait(10)
    assert cut.is_error, cut.content
    assert not net.is_error and "connected" in net.content, net.content


def _fake_bwrap(folder: Path) -> None:
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)


@pytest.mark.parametrize("broken", ["missing", "no namespace"])
def test_without_a_working_bubblewrap_doctor_and_the_server_say_so_and_the_guard_still_refuses(
    ctx: AppContext, runtime: Runtime, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    import json

    if broken == "missing":
        monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no bwrap on it
        sentence = "bubblewrap is not installed"
    else:
        _fake_bwrap(tmp_path / "bin")
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
        sentence = "bubblewrap cannot create a namespace here: bwrap: setting up uid map: Permission denied"
    status = sandbox.probe(refresh=True)
    assert not status.ok and status.reason.startswith(sentence)
    out = run_cli("doctor", "--json")
    (entry,) = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "sandbox"]
    assert entry["status"] == "warn" and entry["data"]["reason"].startswith(sentence)
    assert entry["detail"].count(sentence) == 1 and "argument guard" in entry["detail"]
    soul = ctx.paths.personas_dir / "juniper" / "SOUL.md"
    before = _snapshot(soul)
    home = ctx.paths.config_dir.parent
    ctx.mcp.add(ServerConfig("files", "stdio", command=sys.executable,
                             args=(str(SERVER), "filesystem", str(home)), timeout=30))
    assert sentence in ctx.mcp.sandbox_notice()
    guard = ToolEnv(write_guard=build_write_guard(ctx.paths, ctx.personas, ctx.soul_path()))
    try:
        _connect(ctx, runtime)  # the server still runs: bare
        plan = ctx.mcp._connections["files"].sandbox_plan
        guarded = _call(ctx, runtime, "files", "write_file", {"path": str(soul), "content": "pwned"}, guard)
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    assert not plan.sandboxed and plan.reason.startswith(sentence)
    assert guarded.is_error and "Refused" in guarded.content
    assert _snapshot(soul) == before


def test_doctor_reports_a_working_sandbox(ctx: AppContext, run_cli) -> None:
    import json

    out = run_cli("doctor", "--json")
    (entry,) = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "sandbox"]
    assert entry["status"] == "ok" and entry["data"]["ok"] is True
    assert "[ok  ] sandbox: MCP programs run in a bubblewrap sandbox" in run_cli("doctor").stdout


def test_a_sandboxed_server_and_its_detached_child_end_when_the_connection_closes(
    ctx: AppContext, runtime: Runtime, tmp_path: Path
) -> None:
    root = ctx.paths.config_dir.parent / "work"
    root.mkdir()
    marker = f"hearthside-sandbox-child-{os.getpid()}-{time.monotonic_ns()}"
    ctx.mcp.add(_attack_cfg(ctx, "kids", root))
    try:
        _connect(ctx, runtime)
        (group,) = ctx.mcp._connections["kids"]._groups
        assert _call(ctx, runtime, "kids", "spawn", {"marker": marker}).content == "spawned"
        # in a session of its own: the group signal cannot reach it (Popen returns before the
        # child has exec'd its command line, so wait for it to show)
        started = time.monotonic() + 30
        while not host_pids(marker) and time.monotonic() < started:
            time.sleep(0.05)
        assert len(host_pids(marker)) == 1
    finally:
        runtime.run(ctx.mcp.close(), timeout=60)
    deadline = time.monotonic() + 30
    while (host_pids(marker) or _alive(group)) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = host_pids(marker)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, "the server's child outlived the connection"
    assert not _alive(group)


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("works", [True, False])
def test_the_mcp_window_says_once_when_mcp_programs_start_without_the_sandbox(  # type: ignore[no-untyped-def]
    qtbot, ctx: AppContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, works: bool
) -> None:
    from hearthside.ui.windows.mcp import McpWindow
    from manage_helpers import make_bridge, widget_texts

    if not works:
        _fake_bwrap(tmp_path / "bin")
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    sandbox.probe(refresh=True)
    for name in ("one", "two"):
        ctx.mcp.add(ServerConfig(name, "stdio", command=sys.executable, args=(str(SERVER), "filesystem")))
    bridge = make_bridge(ctx)
    w = McpWindow(ctx, bridge)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.detail.text() != "Reading the servers…", timeout=20000)
    try:
        if works:
            qtbot.wait(300)
            assert w.sandbox_note.isHidden()
        else:
            qtbot.waitUntil(lambda: w.sandbox_note.isVisible(), timeout=20000)
            text = w.sandbox_note.text()
            assert text == ("The sandbox cannot run: bubblewrap cannot create a namespace here: bwrap: setting up "
                            "uid map: Permission denied; MCP programs run with your rights and only Hearthside's "
                            "argument guard keeps them from your persona files.")
            # said once for the window, not once per server
            assert sum("bubblewrap" in t for t in widget_texts(w)) == 1
    finally:
        bridge.close()


def test_a_bus_socket_inside_a_folder_the_server_may_change_is_covered(
    ctx: AppContext, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session bus whose socket lies in the server's own root (bound read-write, so neither the
    private /tmp nor the private runtime folder hides it) is covered by /dev/null."""
    from jeepney.io.blocking import open_dbus_connection

    root = ctx.paths.config_dir.parent / "work"
    root.mkdir()
    address = f"unix:path={root / 'bus'}"
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", f"--address={address}", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert bus.stdout is not None and bus.stdout.readline()
        open_dbus_connection(bus=address).close()  # the bus works, from here
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        ctx.mcp.add(_attack_cfg(ctx, "inroot", root))
        try:
            _connect(ctx, runtime)
            hello = _call(ctx, runtime, "inroot", "bus_hello", {"address": address})
            own = _call(ctx, runtime, "inroot", "write_own", {"name": "n.txt", "text": "x"})
        finally:
            runtime.run(ctx.mcp.close(), timeout=60)
    finally:
        bus.terminate()
        bus.wait(10)
    assert hello.is_error and "could not reach" in hello.content, hello.content
    assert not own.is_error and (root / "n.txt").read_text() == "x"


def test_a_program_installed_under_tmp_still_starts_and_sees_only_its_own_folder_there() -> None:
    """A checkout (and its virtualenv) under /tmp — a CI clone, a test run — vanished under the
    private /tmp and every server failed with "execvp: No such file". The top-level entry of
    what the command line names there is bound back read-only; the rest of /tmp stays hidden."""
    import tempfile

    from hearthside.core.sandbox import BusEndpoints, SandboxPolicy, bwrap_argv

    if not sandbox.probe().ok:
        pytest.skip(sandbox.probe().reason)
    bwrap = shutil.which("bwrap")
    assert bwrap
    install = Path(tempfile.mkdtemp(prefix="hs-install-", dir="/tmp"))
    other = Path(tempfile.mkdtemp(prefix="hs-other-", dir="/tmp"))
    try:
        (other / "secret.txt").write_text("not yours")
        script = install / "bin" / "server.py"
        script.parent.mkdir()
        script.write_text(
            "import os, sys\n"
            f"print('other', os.path.exists({str(other / 'secret.txt')!r}))\n"
            f"print('self', os.path.exists({str(install / 'bin' / 'server.py')!r}))\n"
            "try:\n"
            f"    open({str(install / 'new.txt')!r}, 'w').write('x')\n"
            "    print('write ok')\n"
            "except OSError as exc:\n"
            "    print('write refused', exc.strerror)\n")
        policy = SandboxPolicy(network=False, env={"PATH": os.environ.get("PATH", "")})
        argv = bwrap_argv(bwrap, [sys.executable, str(script)], policy, BusEndpoints(), None)
        out = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, env=policy.child_env())
        assert out.returncode == 0, out.stderr
        assert "self True" in out.stdout and "other False" in out.stdout
        assert "write refused Read-only file system" in out.stdout
        assert not (install / "new.txt").exists()
    finally:
        shutil.rmtree(install, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
