"""Specialists in the UI: the chat window's *Specialists* button and the tray persona submenu,
real Qt offscreen, real files, the real services (no model is needed to list them)."""

from __future__ import annotations

from pathlib import Path

from personas import make_persona
from ui_helpers import make_bridge

WAIT = 15_000


def write_agent(folder: Path, fname: str, name: str, desc: str, extra: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fname).write_text(f"---\nname: {name}\ndescription: {desc}\n{extra}---\nDo it well.\n",
                                encoding="utf-8")


def dot(action):  # type: ignore[no-untyped-def]
    """The centre pixel's colour of a menu entry's icon, or None when it has none."""
    if action.icon().isNull():
        return None
    from hearthside.ui.windows.specialists import DOT

    return action.icon().pixmap(DOT, DOT).toImage().pixelColor(DOT // 2, DOT // 2).name()


def coloured_agents(root: Path) -> None:
    write_agent(root / "agents", "a.md", "a", "Named colour.", "color: purple\n")
    write_agent(root / "agents", "b.md", "b", "Hex colour.", "color: '#3a7'\n")
    write_agent(root / "agents", "c.md", "c", "Not a colour.", "color: not-a-colour\n")
    write_agent(root / "agents", "d.md", "d", "No colour.")


def entries(menu) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def test_the_chat_window_lists_specialists_and_choosing_one_starts_the_message(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.chat import ChatWindow

    root = make_persona(app_context)
    write_agent(root / "agents", "reviewer.md", "reviewer", "Reviews code & <b>finds</b> bugs.")
    write_agent(app_context.paths.user_agents_dir, "bad.md", "bad name", "x")
    bridge = next(make_bridge(app_context))
    w = ChatWindow(app_context, bridge, "juniper")
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: bool(w.specialists.listing.defs), timeout=WAIT)
    button = w.specialists
    assert button.text() == "Specialists (1)"
    texts = entries(button.menu())
    assert texts[0] == "reviewer — Reviews code && <b>finds</b> bugs."  # & is no mnemonic, tags are text
    assert texts[1] == "1 note(s) about the agent files"
    note = next(a for a in button.menu().actions() if a.text() == texts[1])
    assert not note.isEnabled() and "agents/bad.md is left out" in note.toolTip()
    w.input.setPlainText("look at the diff")
    button.menu().actions()[0].trigger()
    assert w.input.toPlainText() == "Ask the reviewer specialist to look at the diff"
    assert w.input.textCursor().position() == len(w.input.toPlainText())
    button.menu().actions()[0].trigger()  # twice: the hint is not repeated
    assert w.input.toPlainText() == "Ask the reviewer specialist to look at the diff"
    bridge.close()


def test_a_persona_without_specialists_shows_how_to_add_one(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.specialists import SpecialistsButton

    make_persona(app_context)
    bridge = next(make_bridge(app_context))
    b = SpecialistsButton(app_context, bridge)
    qtbot.addWidget(b)
    with qtbot.waitSignal(b.loaded, timeout=WAIT):
        b.load("juniper")
    assert b.text() == "Specialists"
    (none,) = b.menu().actions()
    assert none.text() == "No specialists yet" and not none.isEnabled() and "agents folder" in none.toolTip()
    bridge.close()


def test_the_tray_persona_submenu_lists_specialists_and_opens_the_chat_with_the_hint(  # type: ignore[no-untyped-def]
        qtbot, app_context) -> None:
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController

    root = make_persona(app_context)
    write_agent(root / "agents", "reviewer.md", "reviewer", "Reviews code.")
    write_agent(app_context.paths.user_agents_dir, "writer.md", "writer", "Writes\u202e prose.")
    shell = Shell(app_context, opener=lambda p: True)
    ctl = TrayController(shell)
    shell.refresh()
    qtbot.waitUntil(lambda: shell.rows_loaded and bool(shell.rows), timeout=WAIT)
    ctl.rebuild_menu()
    sub = next(a.menu() for a in ctl.menu.actions() if a.menu() is not None and a.text().startswith("juniper"))
    spec = next(a.menu() for a in sub.actions() if a.menu() is not None)
    assert spec.title() == "Specialists (2)"
    assert entries(spec) == ["reviewer — Reviews code.", "writer — Writes\\u202e prose."]
    spec.actions()[0].trigger()
    box = shell.windows[("chat", "juniper")].input  # the chat the tray opened
    assert box.toPlainText() == "Ask the reviewer specialist to "
    shell.quitting = True
    shell.bridge.close()


def test_a_hand_edited_agent_file_is_listed_and_approved_in_the_review_window(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.review import ReviewWindow

    root = make_persona(app_context)
    write_agent(root / "agents", "reviewer.md", "reviewer", "Reviews code.")
    app_context.drift.scan()  # first use trusts what is there
    app_context.drift.set_strict(True)
    write_agent(root / "agents", "reviewer.md", "reviewer", "Reviews everything, always.")
    assert app_context.agents.listing("juniper").defs == ()  # held back until approved
    bridge = next(make_bridge(app_context))
    w = ReviewWindow(app_context, bridge, opener=lambda url: False)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.item is not None, timeout=WAIT)
    assert [w.list.item(i).text() for i in range(w.list.count())] == [
        "agents/reviewer.md (juniper)\nchanged since you approved it"]
    assert any(r.kind == "add" and r.text == "description: Reviews everything, always." for r in w.item.rows)
    with qtbot.waitSignal(w.approved, timeout=WAIT):
        w.approve_button.click()
    qtbot.waitUntil(lambda: w.list.count() == 0, timeout=WAIT)
    assert [d.description for d in app_context.agents.listing("juniper").defs] == ["Reviews everything, always."]
    bridge.close()


def test_a_specialists_colour_is_a_dot_in_the_chat_menu_and_an_invalid_one_is_none(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.specialists import SpecialistsButton

    coloured_agents(make_persona(app_context))
    bridge = next(make_bridge(app_context))
    b = SpecialistsButton(app_context, bridge)
    qtbot.addWidget(b)
    with qtbot.waitSignal(b.loaded, timeout=WAIT):
        b.load("juniper")
    acts = [a for a in b.menu().actions() if not a.isSeparator()]
    assert [a.text().split(" — ")[0] for a in acts] == ["a", "b", "c", "d"]
    assert [dot(a) for a in acts] == ["#800080", "#33aa77", None, None]
    bridge.close()


def test_the_tray_specialists_menu_shows_the_colour_dots(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController

    coloured_agents(make_persona(app_context))
    shell = Shell(app_context, opener=lambda p: True)
    ctl = TrayController(shell)
    shell.refresh()
    qtbot.waitUntil(lambda: shell.rows_loaded and bool(shell.rows), timeout=WAIT)
    ctl.rebuild_menu()
    sub = next(a.menu() for a in ctl.menu.actions() if a.menu() is not None and a.text().startswith("juniper"))
    spec = next(a.menu() for a in sub.actions() if a.menu() is not None)
    assert [dot(a) for a in spec.actions()] == ["#800080", "#33aa77", None, None]
    shell.quitting = True
    shell.bridge.close()


def test_a_colour_never_changes_what_a_specialist_is_offered_or_may_do() -> None:
    from dataclasses import replace

    from hearthside.core.agentdefs import AgentDef, AgentDefListing
    from hearthside.core.subagent import SubagentTool

    plain = AgentDef("a", "Reads.", "Body.", tools=("Read",))
    tinted = replace(plain, color="purple")
    one, two = (SubagentTool(AgentDefListing((d,)), []) for d in (plain, tinted))
    assert one.spec == two.spec and one.read_only == two.read_only
    assert one.mutates_parent({"agent": "a"}) == two.mutates_parent({"agent": "a"})
