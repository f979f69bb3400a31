"""Malformed app files never crash or hang a command (issue 12 item 7, issue 9 hole 6).

Every file Hearthside reads for itself — settings.toml, mcp.json, memory.json, the notification
history, the install record, baselines, import files — is read bounded and non-blocking and
parsed without RecursionError. Each bad shape gives one sentence and the command goes on with
defaults where it can. The commands run in-process (tests/conftest.py, ``run_cli``) under a
60-second timeout per test: a hang (a FIFO opened for reading blocks until a writer comes) fails
the test instead of hanging the suite. Start-up with a FIFO in place runs a real ``--headless``
process.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakemodel import FakeModel
from personas import make_persona

pytestmark = pytest.mark.timeout(60)  # a hang fails the test (see above)
DEEP = 100_000


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _directory(p: Path) -> None:
    p.mkdir()


def _non_utf8(p: Path) -> None:
    p.write_bytes(b'{"x": "\xff\xfe\x80 not text"}\n')


def _nested_json(p: Path) -> None:
    p.write_text("[" * DEEP + "]" * DEEP)


def _nested_toml(p: Path) -> None:
    p.write_text("a = " + "[" * DEEP + "]" * DEEP + "\n")


BAD_JSON: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo, "link to /dev/zero": _dev_zero, "directory": _directory, "non-UTF-8": _non_utf8,
    "deeply nested": _nested_json,
}
BAD_TOML = dict(BAD_JSON, **{"deeply nested": _nested_toml})


def _ok(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr


@pytest.fixture
def model():  # type: ignore[no-untyped-def]
    with FakeModel(default={"text": "Hello from the fake model."}) as fm:
        yield dict(fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback")


@pytest.mark.parametrize("kind", sorted(BAD_TOML))
def test_a_bad_settings_file_falls_back_to_defaults(run_cli, app_context, model, kind: str) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    BAD_TOML[kind](app_context.paths.settings_file)
    for args in (("persona", "list"), ("mcp", "list"), ("memory", "list", "--persona", "juniper"),
                 ("chat", "juniper", "hi")):
        out = run_cli(*args, env=model, timeout=60)
        _ok(out)
        assert out.returncode == 0, (args, out.stderr)
    assert "Hello from the fake model." in out.stdout
    assert "settings" in out.stderr.lower()  # the one sentence that says why defaults are used


@pytest.mark.parametrize("text,named", [("personas = 5\n", "personas = 5"), ("model = 5\n", "model = 5"),
                                        ("[personas]\njuniper = 7\n", "personas.juniper = 7")])
def test_a_value_where_a_section_belongs_is_ignored_with_a_sentence(run_cli, app_context, model, text: str,
                                                                    named: str) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    app_context.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    app_context.paths.settings_file.write_text(text)
    for args in (("persona", "list"), ("chat", "juniper", "hi"), ("heartbeat", "run", "juniper")):
        out = run_cli(*args, env=model, timeout=60)
        _ok(out)
        assert out.returncode == 0, (args, out.stderr)
        assert named in out.stderr and "is not a section" in out.stderr, out.stderr
    paused = run_cli("heartbeat", "pause", "juniper", timeout=60)  # a write is refused: the file stays
    _ok(paused)
    assert paused.returncode == 1 and "so nothing was changed" in paused.stderr and named in paused.stderr
    assert app_context.paths.settings_file.read_text() == text
    assert not list(app_context.paths.settings_file.parent.glob("settings.toml.broken-*"))
    over = run_cli("settings", "start-over", timeout=60)
    assert over.returncode == 0, over.stderr
    backups = list(app_context.paths.settings_file.parent.glob("settings.toml.broken-*"))
    assert [b.read_text() for b in backups] == [text]
    assert run_cli("heartbeat", "pause", "juniper", timeout=60).returncode == 0
    assert "is not a section" not in run_cli("persona", "list").stderr


#: Issue 19 item 7: a hand edit with one mistake on line 3 (a trailing comma in an inline table).
BAD_LINE_3 = b'[model]\nname = "llama3.2"\nextra = { a = 1, }\n'


def test_a_settings_file_with_a_mistake_stays_put_and_changes_wait_for_start_over(  # type: ignore[no-untyped-def]
    run_cli, app_context
) -> None:
    """A read never moves settings.toml: each command says where it is wrong (once), every
    command that changes settings refuses with that place, the file stays byte-identical, and
    ``hearthside settings start-over`` keeps it as a 0600 backup and begins with defaults."""
    make_persona(app_context)
    path = app_context.paths.settings_file
    path.write_bytes(BAD_LINE_3)
    path.chmod(0o644)
    listed = run_cli("persona", "list", timeout=60)
    _ok(listed)
    told = [ln for ln in listed.stderr.splitlines() if "line 3, column 18" in ln]
    assert listed.returncode == 0 and len(told) == 1 and "settings start-over" in told[0], listed.stderr
    for args in (("heartbeat", "pause", "juniper"), ("heartbeat", "resume", "juniper"),
                 ("model", "use", "http://127.0.0.1:9/v1", "tiny"), ("plugins", "disable", "hearthside-files")):
        proc = run_cli(*args, timeout=60)
        _ok(proc)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        refused = [ln for ln in proc.stderr.splitlines() if ln.startswith("hearthside: ")]
        assert len(refused) == 1 and "line 3, column 18, so nothing was changed" in refused[0], (args, proc.stderr)
        assert path.read_bytes() == BAD_LINE_3 and not list(path.parent.glob("settings.toml.broken-*")), args
    assert path.stat().st_mode & 0o777 == 0o644
    over = run_cli("settings", "start-over", timeout=60)
    assert over.returncode == 0, over.stderr
    [backup] = list(path.parent.glob("settings.toml.broken-*"))
    assert str(backup) in over.stdout and backup.read_bytes() == BAD_LINE_3
    assert backup.stat().st_mode & 0o777 == 0o600
    paused = run_cli("heartbeat", "pause", "juniper", timeout=60)
    assert paused.returncode == 0 and paused.stderr == "", paused.stderr
    assert "paused" in path.read_text()
    again = run_cli("settings", "start-over", timeout=60)  # a file that parses is never dropped
    assert again.returncode == 1 and "no problem to start over from" in again.stderr
    assert "paused" in path.read_text()


@pytest.mark.parametrize("kind", sorted(BAD_JSON))
def test_a_bad_mcp_json_gives_a_sentence_and_no_servers(run_cli, app_context, model, kind: str) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    app_context.paths.mcp_file.parent.mkdir(parents=True, exist_ok=True)
    BAD_JSON[kind](app_context.paths.mcp_file)
    out = run_cli("mcp", "list", timeout=60)
    _ok(out)
    assert out.returncode == 0 and "warning:" in out.stderr and "mcp.json" in out.stderr, out.stderr
    chat = run_cli("chat", "juniper", "hi", env=model, timeout=60)
    _ok(chat)
    assert chat.returncode == 0 and "Hello from the fake model." in chat.stdout, chat.stderr


def _memory_file(app_context) -> Path:  # type: ignore[no-untyped-def]
    d = app_context.paths.memory_dir("juniper")
    d.mkdir(parents=True, exist_ok=True)
    return d / "memory.json"


def _doc_with_time(value: str) -> str:
    return ('{"format": 1, "seq": 1, "records": {"note": {"truncated": false, "revisions": [{"value": "v", '
            '"description": "d", "version": "1", "status": "active", "writer": "user", "origin": "explicit", '
            f'"updated_at": {value}}}]}}}}}}')


MEMORY_BAD = dict(BAD_JSON, **{
    "updated_at 1e300": lambda p: p.write_text(_doc_with_time("1e300")),
    "updated_at NaN": lambda p: p.write_text(_doc_with_time("NaN")),
})


@pytest.mark.parametrize("kind", sorted(MEMORY_BAD))
def test_a_bad_memory_file_gives_a_sentence_and_repair_moves_it_aside(run_cli, app_context, model, kind: str) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    path = _memory_file(app_context)
    MEMORY_BAD[kind](path)
    listed = run_cli("memory", "list", "--persona", "juniper", timeout=60)
    _ok(listed)
    assert listed.returncode == 1 and "memory repair --persona juniper" in listed.stderr, listed.stderr
    assert len(listed.stderr.strip().splitlines()) == 1
    chat = run_cli("chat", "juniper", "hi", env=model, timeout=60)
    _ok(chat)
    assert chat.returncode == 0 and "Hello from the fake model." in chat.stdout, chat.stderr
    fixed = run_cli("memory", "repair", "--persona", "juniper", timeout=60)
    _ok(fixed)
    assert fixed.returncode == 0 and "Moved the damaged file" in fixed.stdout, fixed.stderr
    assert not os.path.lexists(path) and list(path.parent.glob("memory.json.broken-*"))
    after = run_cli("memory", "list", "--persona", "juniper", timeout=60)
    assert after.returncode == 0 and "has not learned anything yet" in after.stdout


def test_a_valid_memory_file_with_sane_times_still_loads(run_cli, app_context) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    _memory_file(app_context).write_text(_doc_with_time("1700000000.5"))
    out = run_cli("memory", "list", "--persona", "juniper", timeout=60)
    assert out.returncode == 0 and "note" in out.stdout, out.stderr


@pytest.mark.parametrize("kind", sorted(BAD_JSON))
def test_a_bad_notification_history_reads_as_empty(run_cli, app_context, kind: str) -> None:  # type: ignore[no-untyped-def]
    app_context.paths.history_file.parent.mkdir(parents=True, exist_ok=True)
    BAD_JSON[kind](app_context.paths.history_file)
    out = run_cli("heartbeat", "history", "--alerts", timeout=60)
    _ok(out)
    assert out.returncode == 0, out.stderr


def test_history_lines_with_impossible_times_are_skipped(app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.notify import NotificationHistory

    h = NotificationHistory(app_context.paths.history_file)
    h.append("juniper", "real alert", "notified")
    with open(h.path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"persona": "j", "time": "soon", "text": "t", "status": "notified"}) + "\n")
        fh.write(json.dumps({"persona": "j", "time": "2026-01-01T00:00:00", "text": "t", "status": "notified"}) + "\n")
        fh.write("[" * DEEP + "]" * DEEP + "\n")
    assert [e.text for e in h.entries()] == ["real alert"]
    assert len(h.notified()) == 1


@pytest.mark.parametrize("kind", sorted(BAD_JSON))
def test_a_bad_install_record_means_nothing_recorded(run_cli, app_context, kind: str) -> None:  # type: ignore[no-untyped-def]
    app_context.paths.installed_packs_file.parent.mkdir(parents=True, exist_ok=True)
    BAD_JSON[kind](app_context.paths.installed_packs_file)
    out = run_cli("plugins", "restore", timeout=60)
    _ok(out)
    assert out.returncode == 0 and "No packs are recorded" in out.stdout, out.stderr


@pytest.mark.parametrize("kind", sorted(BAD_JSON))
def test_a_bad_import_file_imports_nothing_with_a_sentence(run_cli, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "claude_desktop_config.json"
    BAD_JSON[kind](src)
    out = run_cli("mcp", "import", str(src), timeout=60)
    _ok(out)
    if kind == "directory":  # click refuses it as bad usage, before Hearthside reads anything
        assert out.returncode == 2 and "is a directory" in out.stderr, out.stderr
    else:
        assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert json.loads(run_cli("mcp", "list", "--json").stdout) == []


def test_a_deeply_nested_baseline_record_is_damage_not_a_crash() -> None:
    from hearthside.core.drift import baseline_from_json

    with pytest.raises(ValueError, match="nested too deeply"):
        baseline_from_json("[" * DEEP + "]" * DEEP)


def test_deeply_nested_tool_arguments_from_the_model_are_a_sentence() -> None:
    from hearthside.core.agent import parse_arguments

    got = parse_arguments('{"a": ' + "[" * DEEP + "]" * DEEP + "}")
    assert isinstance(got, str) and "not valid JSON" in got


@pytest.mark.parametrize("what", ["mcp.json", "memory.json"])
def test_headless_starts_and_stops_promptly_on_sigterm_with_a_fifo_in_place(app_context, model, what: str) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    target = app_context.paths.mcp_file if what == "mcp.json" else _memory_file(app_context)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)
    env = dict(os.environ, **model)
    proc = subprocess.Popen([sys.executable, "-m", "hearthside", "--headless"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and "running headless" not in line:
            line = proc.stdout.readline() if proc.stdout else ""
            if not line and proc.poll() is not None:
                break
        assert "running headless" in line, proc.stderr.read() if proc.stderr else ""
        time.sleep(1.0)  # let the services touch the files
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 15
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


# --- issue 18 hole 9: the log file and the lock files as FIFOs ---------------------------------

def _lock_paths(app: Any) -> dict[str, Path]:
    """Every lock file Hearthside takes (``lock_for`` / ``open_lock_fd`` callers)."""
    p = app.paths
    return {
        "settings": p.settings_file.with_name(p.settings_file.name + ".lock"),
        "mcp": Path(str(p.mcp_file) + ".lock"),
        "memory write": _memory_file(app).with_name("memory.lock"),
        "memory read": _memory_file(app).with_name("memory.lock"),
        "heartbeat": p.state_dir / "heartbeat" / "juniper.lock",
        "notification history": Path(str(p.history_file) + ".lock"),
        "install": p.packs_dir / "install.lock",
    }


#: A command that takes each lock, and its exit code when the lock cannot be had.
LOCK_COMMANDS: dict[str, tuple[tuple[str, ...], int]] = {
    "settings": (("model", "use", "http://127.0.0.1:9/v1", "m"), 1),
    "mcp": (("mcp", "add", "gh", "--url", "http://127.0.0.1:9/mcp"), 1),
    "memory write": (("memory", "remember", "--persona", "juniper", "k", "v"), 1),
    "memory read": (("memory", "list", "--persona", "juniper"), 1),
    "heartbeat": (("heartbeat", "run", "juniper"), 1),
    # The check-in itself goes out; only its record in the history is lost, with a warning.
    "notification history": (("heartbeat", "run", "juniper"), 0),
    "install": (("plugins", "uninstall", "nothing-here"), 1),
}


@pytest.mark.parametrize("which", sorted(LOCK_COMMANDS))
def test_a_lock_file_that_is_a_fifo_is_refused_with_a_sentence_naming_it(
    run_cli, app_context, model, which: str
) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    lock = _lock_paths(app_context)[which]
    lock.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(lock)
    args, code = LOCK_COMMANDS[which]
    out = run_cli(*args, env=model, timeout=60)
    _ok(out)
    assert out.returncode == code, (out.stdout, out.stderr)
    said = [line for line in (out.stdout + out.stderr).splitlines() if str(lock) in line]
    assert said and "is a FIFO (named pipe), not a regular file" in said[0], (out.stdout, out.stderr)
    assert os.path.lexists(lock) and stat.S_ISFIFO(os.lstat(lock).st_mode)  # nothing of the user's is touched


def test_a_log_file_that_is_a_fifo_does_not_hang_a_command(run_cli_process, app_context) -> None:  # type: ignore[no-untyped-def]
    """A real process: ``open`` of a FIFO for writing waits for a reader forever, and every
    command opens the log first."""
    make_persona(app_context)
    log = app_context.paths.log_dir / "hearthside.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(log)
    out = run_cli_process("persona", "list", timeout=60)
    _ok(out)
    assert out.returncode == 0 and "juniper" in out.stdout, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "log" in line]
    assert len(warnings) == 1 and "hearthside.log is a FIFO or socket, not a regular file" in warnings[0], out.stderr
    assert "logging to the terminal only" in warnings[0]
    assert stat.S_ISFIFO(os.lstat(log).st_mode)


def test_starting_the_app_never_moves_a_hand_edited_file_with_a_mistake(  # type: ignore[no-untyped-def]
        app_context, model) -> None:
    """Issue 19 item 7: the app's start (the lifecycle's MCP step, the settings check) used to
    set a broken mcp.json aside and run with no servers; now both files stay byte-identical."""
    from test_mcp_cli import TRAILING_COMMA

    make_persona(app_context)
    paths = app_context.paths
    paths.mcp_file.write_bytes(TRAILING_COMMA)
    paths.settings_file.write_bytes(BAD_LINE_3)
    env = dict(os.environ, **model)
    proc = subprocess.Popen([sys.executable, "-m", "hearthside", "--headless"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        while line and "running headless" not in line:
            line = proc.stdout.readline() if proc.stdout else ""
        assert "running headless" in line  # printed once the services (MCP's step too) started
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert paths.mcp_file.read_bytes() == TRAILING_COMMA and paths.settings_file.read_bytes() == BAD_LINE_3
    assert not list(paths.config_dir.glob("*.broken-*"))
    assert "line 3, column 1" in err and "line 3, column 18" in err, err  # each said where, in the log


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link"])
def test_one_read_ladder_gives_settings_baselines_and_imports_the_same_sentence(tmp_path: Path, kind: str) -> None:
    """Issue 19 item 6: the bounded-read error ladder lives once (core.boundedread), so each
    reader names the same problem the same way instead of each its own copy of the checks."""
    from hearthside.app.baselines import BaselineStore
    from hearthside.app.mcp_store import McpConfigStore
    from hearthside.app.settings import SettingsStore
    from hearthside.core.boundedread import read_bytes_checked
    from hearthside.core.mcpconfig import McpConfigError

    def make(p: Path) -> Path:
        p.parent.mkdir(parents=True, exist_ok=True)
        {"fifo": _fifo, "directory": _directory, "dangling link": lambda q: q.symlink_to(q.parent / "gone")}[kind](p)
        return p

    def reason(p: Path) -> str:
        data, why = read_bytes_checked(p, 1024)
        assert data is None and why.startswith(str(p)), why
        return why

    settings = make(tmp_path / "settings.toml")
    store = SettingsStore(settings)
    assert store.get("x", 1) == 1 and reason(settings) in store.error
    record = make(tmp_path / "baselines" / "unit" / "files" / "USER.md.json")
    assert reason(record) in BaselineStore(tmp_path / "baselines").load("unit", "USER.md")[1]
    host = make(tmp_path / "claude_desktop_config.json")
    with pytest.raises(McpConfigError) as got:
        McpConfigStore._read_import(host)
    assert reason(host) in str(got.value) and "nothing was imported" in str(got.value)
