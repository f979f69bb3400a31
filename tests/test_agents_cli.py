"""``hearthside agents list [--persona P] [--json]``: name, description, tier, tools, and why one
is left out — over real files, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from drift_helpers import config_dir, make_persona


def write(folder: Path, fname: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fname).write_text(text, encoding="utf-8")


def test_agents_list_shows_both_tiers_tools_and_notes(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_persona(isolated_home, "alice")
    write(root / "agents", "reviewer.md",
          "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\n---\nx\n")
    write(config_dir(isolated_home) / "agents", "writer.md", "---\nname: writer\ndescription: Writes.\n---\n")
    write(config_dir(isolated_home) / "agents", "reviewer.md", "---\nname: reviewer\ndescription: Other.\n---\n")
    write(config_dir(isolated_home) / "agents", "bomb.md", "---\nname: &a b\ndescription: *a\n---\n")
    proc = run_cli("agents", "list", "--persona", "alice", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(a["name"], a["tier"], a["tools"]) for a in doc["agents"]] == [
        ("reviewer", "persona", ["Read", "Grep"]), ("writer", "user", None)]
    assert any("agents/bomb.md is left out" in n and "aliases" in n for n in doc["notes"])
    assert any("specialist 'reviewer' (user tier) is left out" in n for n in doc["notes"])
    text = run_cli("agents", "list", "--persona", "alice")
    assert text.returncode == 0
    assert "reviewer  (persona)  Reviews code.\n    tools: Read, Grep\n" in text.stdout
    assert "writer  (user)  Writes.\n    tools: the default set\n" in text.stdout
    assert "Notes:\n  - " in text.stdout
    user_only = json.loads(run_cli("agents", "list", "--json").stdout)
    assert [a["name"] for a in user_only["agents"]] == ["reviewer", "writer"] and user_only["persona"] is None


def test_agents_list_with_nothing_says_where_files_go(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    make_persona(isolated_home, "alice")
    proc = run_cli("agents", "list", "--persona", "alice")
    assert proc.returncode == 0
    assert proc.stdout.startswith("No specialists. Put agent files (NAME.md with 'name' and 'description' front "
                                  "matter) in ")
    assert str(config_dir(isolated_home) / "personas" / "alice" / "agents") in proc.stdout


def test_agents_list_for_an_unknown_persona_is_one_sentence(run_cli) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("agents", "list", "--persona", "nobody")
    assert proc.returncode == 1
    assert "There is no persona named 'nobody'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_description_with_terminal_escapes_is_printed_safely(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    write(config_dir(isolated_home) / "agents", "x.md", '---\nname: x\ndescription: "red \\e[31m text"\n---\n')
    proc = run_cli("agents", "list")
    assert proc.returncode == 0 and "\x1b" not in proc.stdout and "x  (user)  red" in proc.stdout
