"""Packs' commands on the ``hearthside`` command line (plugin API 1.1, ``hearthside_commands``).

Real packs built and pip-installed into the test's packs venv, the real console script in a new
process. A pack's command works and prints through Hearthside's output filter; a pack that fails
has no commands and asking for one says which pack and why; a command named like a built-in or
like another pack's is refused; built-in commands never load the packs.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

import cmdpacks

ALL = ("hs-agenda", "hs-cmdbroken", "hs-cmdmcp", "hs-zagenda")


@pytest.fixture
def packs(isolated_home: Path) -> Path:
    cmdpacks.install_cmd_packs(isolated_home / ".local" / "share", *ALL)
    return isolated_home


def _last_line(stderr: str) -> str:
    """The command's own message: the log's warnings about the failed packs come before it."""
    assert "Traceback" not in stderr, stderr
    return stderr.splitlines(keepends=True)[-1]


def _list(run_cli) -> dict[str, dict]:  # type: ignore[no-untyped-def, type-arg]
    proc = run_cli("plugins", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout)}


def test_a_pack_command_runs_and_keeps_its_config_in_the_pack_data_dir(run_cli, packs: Path) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("agenda", "add", "work", "https://example.org/work.ics")
    assert (proc.returncode, proc.stdout) == (0, "added work\n"), proc.stderr
    proc = run_cli("agenda", "list")
    assert (proc.returncode, proc.stdout) == (0, "work\thttps://example.org/work.ics\n"), proc.stderr
    config = packs / ".local" / "share" / "hearthside" / "pack-data" / "agenda" / "config.json"
    assert json.loads(config.read_text()) == {"calendars": {"work": "https://example.org/work.ics"}}
    helped = run_cli("--help")
    assert helped.returncode == 0 and "agenda" in helped.stdout and "The agenda pack's calendars." in helped.stdout
    assert "brokencmd" not in helped.stdout
    sub = run_cli("agenda", "--help")
    assert sub.returncode == 0 and "add" in sub.stdout and "list" in sub.stdout
    listed = _list(run_cli)["agenda"]
    assert listed["status"] == "ok", listed
    assert listed["contributes"]["commands"] == ["agenda"]
    assert listed["contributes"]["forms"] == ["Calendars"]


@pytest.mark.keyring
def test_a_pack_command_prints_through_the_output_filter(run_cli, packs: Path, secret_service) -> None:  # type: ignore[no-untyped-def]
    import hearthside.plugin as api

    value = f"pw-{uuid.uuid4().hex}"
    api.pack_secrets("agenda").set("caldav/work", value)
    try:
        proc = run_cli("agenda", "show-secret", "caldav/work")
    finally:
        api.pack_secrets("agenda").delete("caldav/work")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "secret ******** end\n"
    assert value not in proc.stdout + proc.stderr and "\x1b" not in proc.stdout


def test_a_pack_command_that_raises_is_one_line_not_a_traceback(run_cli, packs: Path) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("agenda", "crash")
    assert proc.returncode == 1
    assert _last_line(proc.stderr) == ("hearthside: the agenda pack's command `agenda crash` failed: "
                           "ZeroDivisionError: the pack's own bug\n")


def test_a_broken_pack_has_no_commands_and_says_why_when_one_is_asked_for(run_cli, packs: Path) -> None:  # type: ignore[no-untyped-def]
    why = "its hearthside_commands hook failed: RuntimeError: the calendar library is missing"
    for name in ("brokencmd", "cmdbroken"):  # the command it tried to add, and the pack's name
        proc = run_cli(name)
        assert proc.returncode == 2, proc
        assert _last_line(proc.stderr) == (f"hearthside: the pack 'cmdbroken' that provides `{name}` failed to load: {why}; "
                               "see 'hearthside plugins list'\n")
    reports = _list(run_cli)
    assert reports["cmdbroken"]["status"] == "failed"
    assert reports["cmdbroken"]["error"] == why
    assert reports["agenda"]["status"] == "ok"  # the other packs carry on
    # A command no pack knows is click's usual usage error.
    proc = run_cli("nosuchthing")
    assert proc.returncode == 2 and "No such command 'nosuchthing'" in proc.stderr


def test_a_command_named_like_a_built_in_or_another_packs_disables_the_newcomer(run_cli, packs: Path) -> None:  # type: ignore[no-untyped-def]
    reports = _list(run_cli)
    assert reports["cmdmcp"]["status"] == "failed"
    assert reports["cmdmcp"]["error"] == ("its command 'mcp' has the name of a built-in hearthside command; "
                                          "ask its author to rename it")
    assert reports["zagenda"]["status"] == "failed"
    assert reports["zagenda"]["error"] == ("its command 'agenda' has the same name as a command of the pack "
                                           "'agenda'; disable one of the two packs")
    mcp = run_cli("mcp", "--help")
    assert mcp.returncode == 0 and "hijacked" not in mcp.stdout and "list" in mcp.stdout
    proc = run_cli("agenda", "list")
    assert proc.returncode == 0 and "the other agenda" not in proc.stdout


def test_safe_mode_leaves_pack_commands_out_with_the_reason(run_cli, packs: Path) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("--safe-mode", "agenda", "list")
    assert proc.returncode == 2
    assert "the pack 'agenda' that provides `agenda` is not loaded: safe mode" in proc.stderr


def test_built_in_commands_never_load_the_packs(run_cli, packs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "imported"
    env = {"HS_AGENDA_IMPORTED": str(marker)}
    for args in (("--version",), ("persona", "list"), ("soul", "--help")):
        proc = run_cli(*args, env=env)
        assert proc.returncode == 0, (args, proc.stderr)
        assert not marker.exists(), args
    proc = run_cli("agenda", "list", env=env)
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "imported\n"


def test_the_built_in_command_names_the_host_reserves_are_the_clis() -> None:
    from hearthside.cli import LAZY_COMMANDS
    from hearthside.pluginhost.host import BUILTIN_COMMANDS

    assert set(LAZY_COMMANDS) | {"help"} == BUILTIN_COMMANDS
