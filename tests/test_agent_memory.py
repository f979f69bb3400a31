"""A specialist's ``memory`` (the seed's read-only v1) over real files.

``memory: user`` reads ``$XDG_CONFIG_HOME/hearthside/agent-memory/<name>/MEMORY.md``;
``memory: persona`` (or the seed's ``project``) reads ``<persona>/agents/<name>/MEMORY.md``, a
persona file: watched for drift, left out in strict mode until approved. The head (4,000
characters, with a note when cut) goes into the specialist's system prompt; a FIFO or an
unknown value is a note; Hearthside never writes a memory file."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from drift_helpers import Events, atomic_save, is_event
from fakemodel import FakeModel, by_system
from hearthside.app.agents import MEMORY_HEAD_CHARS
from hearthside.app.context import AppContext
from personas import make_persona, use_model

PERSONA = "Be brief."  # juniper's AGENTS.md (tests/personas.py)


@pytest.fixture
def app(isolated_home: Path):  # type: ignore[no-untyped-def]
    ctx = AppContext()
    yield ctx
    if ctx.built("drift"):
        ctx.drift.stop()


def agent_file(folder: Path, name: str, memory: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{name}.md"
    p.write_text(f"---\nname: {name}\ndescription: the {name} specialist\nmemory: {memory}\n---\n"
                 f"You are {name.upper()}-MARK.\n", encoding="utf-8")
    return p


def memory_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user_memory(app: AppContext, name: str) -> Path:
    return app.paths.config_dir / "agent-memory" / name / "MEMORY.md"


def child_prompt(app: AppContext, monkeypatch: pytest.MonkeyPatch, name: str) -> tuple[str, list[str]]:
    """Run a chat turn that hands a task to ``name``; the specialist's system prompt and the notes."""
    script = by_system({f"{name.upper()}-MARK": {"text": "done"},
                        PERSONA: [{"tool_calls": [("Subagent", json.dumps({"agent": name, "task": "go"}))]},
                                  {"text": "ok"}]})
    with FakeModel(default=script) as fm:
        use_model(monkeypatch, fm)
        prepared = app.sessions.prepare("juniper")
        agent = app.sessions.agent(prepared, app.sessions.model())

        async def go() -> None:
            await agent.send("please")
            await agent.model.aclose()

        asyncio.run(asyncio.wait_for(go(), 60))
    child = [r for r in fm.requests if f"{name.upper()}-MARK" in r["messages"][0]["content"]]
    assert child, fm.requests
    return child[0]["messages"][0]["content"], prepared.notes


def test_a_user_tier_memory_goes_into_the_specialists_prompt_read_only(app: AppContext,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    make_persona(app)
    agent_file(app.paths.user_agents_dir, "planner", "user")
    mem = memory_file(user_memory(app, "planner"), "The user likes plans in three steps.\n")
    before = (mem.read_bytes(), mem.stat().st_mtime_ns)
    prompt, notes = child_prompt(app, monkeypatch, "planner")
    assert "The user likes plans in three steps." in prompt
    assert "(agent-memory/planner/MEMORY.md; read-only, you cannot change it)" in prompt
    assert not [n for n in notes if "MEMORY.md" in n]
    assert (mem.read_bytes(), mem.stat().st_mtime_ns) == before  # read, never written


def test_no_memory_file_is_a_cold_start_and_nothing_is_made(app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_persona(app)
    agent_file(app.paths.user_agents_dir, "planner", "user")
    agent_file(folder / "agents", "critic", "persona")
    prompt, notes = child_prompt(app, monkeypatch, "planner")
    assert "Your memory" not in prompt and not [n for n in notes if "memory" in n.lower()]
    assert not (app.paths.config_dir / "agent-memory").exists()  # Hearthside makes no memory folder
    assert not (folder / "agents" / "critic").exists()


@pytest.mark.parametrize("value", ["persona", "project", "Persona"])
def test_a_persona_tier_memory_is_read_from_the_persona_folder(app: AppContext, monkeypatch: pytest.MonkeyPatch,
                                                               value: str) -> None:
    folder = make_persona(app)
    agent_file(folder / "agents", "critic", value)
    memory_file(folder / "agents" / "critic" / "MEMORY.md", "Juniper's letters are formal.\n")
    prompt, _notes = child_prompt(app, monkeypatch, "critic")
    assert "Juniper's letters are formal." in prompt
    assert "(agents/critic/MEMORY.md; read-only" in prompt


def test_an_unknown_memory_value_is_a_note_and_no_memory(app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_persona(app)
    agent_file(folder / "agents", "critic", "/etc")
    memory_file(folder / "agents" / "critic" / "MEMORY.md", "SHOULD-NOT-APPEAR\n")
    prompt, notes = child_prompt(app, monkeypatch, "critic")
    assert "SHOULD-NOT-APPEAR" not in prompt
    assert ("specialist critic: memory '/etc' is not one of user, persona or project; it starts without a memory"
            in notes)


def test_a_huge_memory_gives_only_its_head_with_a_note(app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_persona(app)
    agent_file(folder / "agents", "critic", "persona")
    line = "remember this line, it is forty chars.\n"
    memory_file(folder / "agents" / "critic" / "MEMORY.md", "HEAD-MARK\n" + line * (5 * 1024 * 1024 // len(line)))
    prompt, notes = child_prompt(app, monkeypatch, "critic")
    assert "HEAD-MARK" in prompt
    assert f"[… cut: the first {MEMORY_HEAD_CHARS:,} of" in prompt
    assert len(prompt) < MEMORY_HEAD_CHARS + 1000  # the head, the note and the specialist's own text
    assert f"agents/critic/MEMORY.md is longer than {MEMORY_HEAD_CHARS:,} characters; only its head is used" in notes


def test_a_fifo_or_a_link_out_is_left_out_with_a_note_without_blocking(app: AppContext, tmp_path: Path) -> None:
    folder = make_persona(app)
    agent_file(folder / "agents", "critic", "persona")
    agent_file(app.paths.user_agents_dir, "planner", "user")
    fifo = folder / "agents" / "critic" / "MEMORY.md"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    outside = memory_file(tmp_path / "elsewhere" / "MEMORY.md", "OUTSIDE-MARK\n")
    user_memory(app, "planner").parent.mkdir(parents=True)
    user_memory(app, "planner").symlink_to(outside)
    got: dict[str, Any] = {}
    t = threading.Thread(target=lambda: got.update(r=app.agents.memories("juniper", app.agents.listing("juniper"))),
                         daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "reading a FIFO memory file blocked"
    memories, notes = got["r"]
    assert memories == {}
    assert any(n.startswith("agents/critic/MEMORY.md is left out:") and "FIFO" in n for n in notes), notes
    assert any(n.startswith("agent-memory/planner/MEMORY.md is left out: it leads to") for n in notes), notes


def test_a_persona_memory_is_watched_for_drift_and_strict_mode_holds_it_until_approved(app: AppContext) -> None:
    folder = make_persona(app)
    agent_file(folder / "agents", "critic", "persona")
    path = memory_file(folder / "agents" / "critic" / "MEMORY.md", "First notes.\n")
    drift = app.drift
    events = Events()
    drift.subscribe(events)
    drift.start()
    first = {s.file: s.state for s in drift.status() if s.persona == "juniper"}
    assert first["agents/critic/MEMORY.md"] == "approved"  # trusted on first use, like the agent file
    atomic_save(path, "Edited by hand.\n")
    events.wait_for(is_event("juniper", "agents/critic/MEMORY.md", "drifted"))
    drift.set_strict(True)
    memories, notes = app.agents.memories("juniper", app.agents.listing("juniper"))
    assert memories == {}
    assert any(n.startswith("agents/critic/MEMORY.md left out: it changed since you approved it (strict mode)")
               for n in notes), notes
    assert "specialist file agents/critic/MEMORY.md left out: it changed since you approved it (strict mode)" \
        in drift.held_back(folder).notes()
    drift.approve([str(path)])  # `hearthside soul approve PATH` resolves the memory file
    memories, notes = app.agents.memories("juniper", app.agents.listing("juniper"))
    assert "Edited by hand." in memories["critic"] and not notes
    memory_file(folder / "agents" / "other" / "MEMORY.md", "new\n")
    events.wait_for(is_event("juniper", "agents/other/MEMORY.md", "new"))
