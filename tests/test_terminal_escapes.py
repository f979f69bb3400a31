"""Issue 9 hole 4: no terminal control sequence from a model, a file or a server reaches the
terminal. Every text-printing command is fed content carrying ``ESC[8m`` (conceal), OSC 52
(clipboard), OSC 0 (window title), a C1 CSI (U+009B), BEL, DEL and NEL, through the real
``hearthside`` command, and neither stdout nor stderr may carry any of them — in text output
or in ``--json`` output (where ``json.dumps`` escapes C0 but leaves DEL and C1 raw)."""

from __future__ import annotations

import json
from pathlib import Path

from fakemodel import FakeModel
from hearthside.core.termsafe import StreamCleaner, escape_json_controls, strip_controls
from mcp_helpers import HttpServerProcess
from personas import FILES, make_persona

EVIL = ("Fine.\x1b[8mHIDDEN you> \x1b[0m \x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x1b\\ "
        "\x9b31mred \x9d0;t\x9c \x07bell\x7f del\x85nel end")
RAW = ("\x1b", "\x9b", "\x9d", "\x9c", "\x07", "\x7f", "\x85")


def _clean(*texts: str) -> None:
    for t in texts:
        bad = sorted({repr(c) for c in t if c in RAW})
        assert not bad, f"control characters reached the terminal: {bad} in {t!r}"


def test_strip_controls_removes_whole_sequences_and_keeps_text() -> None:
    assert strip_controls(EVIL) == "Fine.HIDDEN you>    red  bell delnel end"
    assert strip_controls("a\tb\nc\r\n") == "a\tb\nc\n"
    assert strip_controls("unterminated \x1b]0;title") == "unterminated "
    assert escape_json_controls(json.dumps("\x9b\x7f", ensure_ascii=False)) == '"\\u009b\\u007f"'


def test_stream_cleaner_catches_sequences_split_across_pieces() -> None:
    cleaner = StreamCleaner(lambda s: s)
    shown = "".join(cleaner.feed(EVIL[i:i + 3]) for i in range(0, len(EVIL), 3)) + cleaner.flush()
    _clean(shown)
    assert "HIDDEN" in shown and shown.endswith("end")


def test_every_text_printing_command_strips_control_sequences(  # type: ignore[no-untyped-def]
    app_context, run_cli, isolated_home: Path
) -> None:
    outputs: list[str] = []

    def cli(*args: str, env: dict[str, str] | None = None, ok: bool = True) -> str:
        proc = run_cli(*args, env=env)
        if ok:
            assert proc.returncode == 0, (args, proc.stderr)
        outputs.extend([proc.stdout, proc.stderr])
        return proc.stdout

    folder = make_persona(app_context, "juniper", {**FILES, "USER.md": "Ada " + EVIL})
    # the soul and a persona file carry the sequences (as a shared folder could)
    soul = app_context.paths.soul_file
    soul.write_text("Be kind. " + EVIL + "\n", encoding="utf-8")
    cli("soul", "show")
    cli("soul", "status", ok=False)
    cli("soul", "approve", ok=False)
    soul.write_text("Be kinder. " + EVIL + "\nmore\n", encoding="utf-8")
    cli("soul", "diff", str(soul), ok=False)
    cli("persona", "compose", str(folder))
    cli("persona", "compose", str(folder), "--json")

    # the model's answers: chat (streamed in 7-character pieces), a check-in and its history
    with FakeModel([{"text": EVIL}, {"text": "Alert: " + EVIL},
                    {"tool_calls": [("memory_remember", json.dumps({"key": "notes/evil", "value": EVIL,
                                                                "description": "d " + EVIL}))]},
                    {"text": "saved"}]) as fm:
        chat = cli("chat", "juniper", "hi", env=fm.env())
        cli("heartbeat", "run", "juniper", env=fm.env())
        cli("chat", "juniper", "remember", "--accept-edits", env=fm.env())
    assert "HIDDEN" in chat  # the text stays, only the sequences go
    cli("heartbeat", "history")
    cli("heartbeat", "history", "--json")
    cli("heartbeat", "history", "--alerts")
    cli("heartbeat", "history", "--alerts", "--json")

    # memory: written by the model above, and by hand
    cli("memory", "remember", "--persona", "juniper", "notes/hand", EVIL, ok=False)
    assert "notes/evil" in cli("memory", "list", "--persona", "juniper")
    cli("memory", "list", "--persona", "juniper", "--json")
    cli("memory", "search", "--persona", "juniper", "Fine")
    cli("memory", "inspect", "--persona", "juniper", "notes/evil", ok=False)
    cli("memory", "inspect", "--persona", "juniper", "notes/evil", "--json", ok=False)

    # MCP: a command line typed with sequences, a server whose tool description carries them
    cli("mcp", "add", "odd", "--command", "run\x1b]0;pwned\x07", "--", "arg\x9b31m")
    cli("mcp", "list")
    cli("mcp", "list", "--json")
    with HttpServerProcess(long_names=True) as srv:
        cli("mcp", "add", "shady", "--url", srv.url)
        tools = cli("mcp", "tools", "shady")
        cli("mcp", "tools", "shady", "--json")
    assert "innocent" in tools

    _clean(*outputs)


def test_plugins_list_strips_control_sequences_from_a_packs_error(  # type: ignore[no-untyped-def]
    run_cli, app_paths
) -> None:
    import packfactory
    from hearthside.pluginhost.packsenv import PacksEnv

    code = (
        "from hearthside import hookimpl\n\n\n"
        "@hookimpl\n"
        "def hearthside_tools(register):\n"
        f"    raise ValueError({EVIL!r})\n"
    )
    root = packfactory.workdir() / "escapes"
    proj = packfactory.write_project(root / "src", "hs-escapes", "escapes", code, {})
    packfactory.pip_wheel([proj], root / "wheels")
    env = PacksEnv(app_paths.packs_dir)
    env.ensure()
    wheel = next((root / "wheels").glob("hs_escapes-*.whl"))
    proc = packfactory.pip_into(env.python, "install", "--no-deps", "--no-index", str(wheel))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = run_cli("plugins", "list")
    as_json = run_cli("plugins", "list", "--json")
    assert "HIDDEN" in listed.stdout  # the error is shown, without its sequences
    _clean(listed.stdout, listed.stderr, as_json.stdout, as_json.stderr)
