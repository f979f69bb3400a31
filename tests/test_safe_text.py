"""Issue 18, hole 1: text Hearthside did not write is shown as text, and no window loads a resource.

A check-in reply ``<img src="file:///dev/zero">`` in a label with Qt's default ``AutoText``
made Qt read that file on the GUI thread. Here the image is a small red PNG: if any widget
renders the markup, red pixels appear in its screenshot. Three layers keep the class closed:
the attack itself (``test_a_check_in_reply_with_an_image_…``), a walk over every window fed
hostile service text, and a lint that finds every label, tooltip, menu text and message box in
``ui/`` made without ``ui/safetext.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from ui_helpers import make_bridge, red_pixels, shown_safely

UI = Path(__file__).resolve().parents[1] / "desktop" / "hearthside" / "ui"
WAIT = 15_000


@pytest.fixture
def red_png(tmp_path: Path) -> Path:
    img = QImage(40, 40, QImage.Format.Format_RGB32)
    img.fill(QColor(255, 0, 0))
    path = tmp_path / "red.png"
    assert img.save(str(path))
    return path


def hostile(red_png: Path) -> str:
    return f'<img src="file://{red_png}" width="40" height="40"><b>key expired</b> meeting at 3pm'


# --- (a) the attack ----------------------------------------------------------------------------

def test_a_check_in_reply_with_an_image_shows_as_text_and_loads_nothing(qtbot, app_context, red_png) -> None:  # type: ignore[no-untyped-def]
    """Fails before the fix: the banner label was AutoText, so the reply's <img> was loaded and drawn."""
    from hearthside.ui.windows.chat import ChatWindow
    from personas import make_persona

    make_persona(app_context)
    bridge = next(make_bridge(app_context))
    reply = hostile(red_png)
    w = ChatWindow(app_context, bridge, "juniper", reply)
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.ready, timeout=WAIT):
        pass
    w.show_alert(reply)
    assert w.banner_text.textFormat() == Qt.TextFormat.PlainText
    assert w.banner_text.text() == f"Check-in from juniper: {reply}"
    assert red_pixels(w.banner_text) == 0
    assert "<img" in w.transcript.toPlainText()  # the conversation shows the reply as written
    assert red_pixels(w.transcript) == 0
    bridge.close()


def test_a_document_view_refuses_every_resource(qtbot, red_png) -> None:  # type: ignore[no-untyped-def]
    """Even Hearthside's own markup cannot make a view read a file, data: URL or qrc: resource."""
    from hearthside.ui.safetext import Markup, SafeBrowser

    view = SafeBrowser()
    qtbot.addWidget(view)
    view.resize(200, 120)
    view.setHtml(Markup(f'<img src="file://{red_png}" width="40" height="40"><img src="{red_png}">'
                        '<img src="qrc:/x.png"><link rel="stylesheet" href="file:///etc/passwd">'))
    view.show()
    assert red_pixels(view) == 0
    assert any(str(red_png) in r for r in view.refused)  # asked, and refused
    view.setHtml("<img src='x'>")  # a plain str is escaped: shown as the characters it is
    assert view.toPlainText() == "<img src='x'>"


def test_the_helpers_escape_what_they_are_given() -> None:
    from hearthside.ui.safetext import Markup, menu_text, rich, tip

    assert rich("<b>{}</b>", "<img src=x>") == "<b>&lt;img src=x&gt;</b>"
    assert rich("{}", rich("<i>{}</i>", "&")) == "<i>&amp;</i>"  # markup made here composes
    assert Markup("<br>").join(["<a>", rich("<b>b</b>")]) == "&lt;a&gt;<br><b>b</b>"
    assert tip("Tom & <b>Jerry</b>\nnext") == "<qt>Tom &amp; &lt;b&gt;Jerry&lt;/b&gt;<br>next</qt>"
    assert menu_text("Tom & Jerry\u202e\n") == "Tom && Jerry\\u202e\\x0a"


# --- (b) every window, hostile text in every service value it shows ------------------------------

def test_every_window_shows_hostile_service_text_as_text(qtbot, app_context, red_png, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.plugins import PluginService
    from hearthside.ui.windows.about import AboutWindow
    from hearthside.ui.windows.mcp import McpWindow
    from hearthside.ui.windows.memory import MemoryWindow
    from hearthside.ui.windows.notifications import NotificationsWindow
    from hearthside.ui.windows.plugins import PluginsWindow
    from hearthside.ui.windows.review import ReviewWindow
    from hearthside.ui.windows.settings import SettingsWindow
    from hearthside.ui.windows.welcome import WelcomeWindow
    from personas import make_persona

    bad = hostile(red_png)
    make_persona(app_context)
    bridge = next(make_bridge(app_context))
    windows: list[Any] = []

    def shown(w: Any) -> Any:
        qtbot.addWidget(w)
        w.resize(900, 700)
        w.show()
        windows.append(w)
        return w

    # memory: a value, a description and a key the model wrote
    app_context.memory.store("juniper").remember("notes/x", bad, bad, writer="model")
    mem = shown(MemoryWindow(app_context, bridge, "juniper"))
    qtbot.waitUntil(lambda: bool(mem.keys()), timeout=WAIT)
    mem.select_key("notes/x")
    qtbot.waitUntil(lambda: "&lt;img" in mem.detail.text(), timeout=WAIT)
    mem.message.say(bad, "error")
    assert len(shown_safely(mem)) >= 2

    # review: a persona file changed by hand, its text and a finding shown in the diff
    from hearthside.app.review import snapshot  # noqa: F401 - the service the window reads
    review = shown(ReviewWindow(app_context, bridge, opener=lambda _u: True))
    review.status.setText(bad)  # a service error sentence
    review.notes.setText(bad)
    qtbot.waitUntil(lambda: True, timeout=100)
    assert len(shown_safely(review)) >= 2

    # plugins: a pack whose error is markup
    plugins = shown(PluginsWindow(app_context, bridge))
    qtbot.waitUntil(lambda: plugins.tree.topLevelItemCount() > 0, timeout=WAIT)
    real = PluginService.report

    def with_bad_error(self: Any) -> list[Any]:
        import dataclasses

        reps = real(self)
        return [dataclasses.replace(reps[0], status="failed", error=bad), *reps[1:]]

    monkeypatch.setattr(PluginService, "report", with_bad_error)
    with qtbot.waitSignal(plugins.loaded, timeout=WAIT):
        plugins.reload()
    plugins.tree.setCurrentItem(plugins.tree.topLevelItem(0))
    plugins.message.say(bad, "error")
    plugins.phase.setText(bad)
    assert len(shown_safely(plugins)) >= 3

    # MCP: a server's initialize error on the message line and in the details
    mcp = shown(McpWindow(app_context, bridge))
    mcp.message.say(bad, "error")
    assert len(shown_safely(mcp)) >= 1

    # settings and welcome: the Test result names a /v1/models id
    settings = shown(SettingsWindow(app_context, bridge))
    settings.message.say("✓ connected, model " + bad, "ok")
    assert len(shown_safely(settings)) >= 1
    welcome = shown(WelcomeWindow(app_context, bridge, start_at="model"))
    welcome.test_result.setText("✗ " + bad)
    welcome.current.setText(bad)
    welcome.persona_error.setText(bad)
    assert len(shown_safely(welcome)) >= 3

    # notifications (check-in replies) and about (the doctor report) need the shell
    from hearthside.ui.app import Shell

    shell = Shell(app_context, opener=lambda p: True)
    notes = shown(NotificationsWindow(app_context, bridge, shell.open_notice))

    class Entry:
        time = "2026-01-01T10:00:00+00:00"
        persona = bad
        text = bad
        status = "unread"
        kind = "checkin"
        path = ""

    notes.show_entries([Entry()])
    for r in range(notes.table.rowCount()):
        for c in range(notes.table.columnCount()):
            item = notes.table.item(r, c)
            assert "<img" not in item.toolTip()
    assert "&lt;img" in notes.table.item(0, 2).toolTip()
    shown_safely(notes)
    about = shown(AboutWindow(app_context, bridge))
    about.report.setPlainText(bad)
    shown_safely(about)
    shell.quitting = True
    shell.bridge.close()
    bridge.close()


# --- (c) the lint: every label, tooltip, menu text and message box goes through safetext ----------

#: Constructors that guess "is this HTML?" (AutoText) or render HTML: never used directly in ui/.
BANNED_CLASSES = {"QLabel": "use safetext.PlainLabel (or RichLabel with rich(...))",
                  "QTextBrowser": "use safetext.SafeBrowser", "QTextEdit": "use safetext.SafeBrowser",
                  "QMessageBox": "use safetext.message_box"}
#: Calls whose text argument must be a literal or go through a safetext helper.
TEXT_CALLS = {"setToolTip": ("tip", "safe_tip"), "addAction": ("menu_text",), "QAction": ("menu_text",),
              "QMenu": ("menu_text",), "setTitle": ("menu_text",), "addMenu": ("menu_text",),
              "setLabelText": ("one_line",)}
BANNED_CALLS = {"setTextFormat": "the format is fixed by PlainLabel / RichLabel",
                "setInformativeText": "use safetext.informative (plain text)"}
PRAGMA = "# safe:"


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _trusted(node: ast.AST, helpers: tuple[str, ...]) -> bool:
    """A literal string, a call to one of ``helpers``, or either branch of a conditional thereof."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Call):
        return _name(node.func) in helpers
    if isinstance(node, ast.IfExp):
        return _trusted(node.body, helpers) and _trusted(node.orelse, helpers)
    return False


def _text_arg(call: ast.Call, fn: str) -> ast.AST | None:
    if not call.args:
        return None
    if fn == "setToolTip":
        return call.args[-1]  # setToolTip(text) and item.setToolTip(column, text)
    first = call.args[0]
    if fn in ("addAction", "addMenu") and not isinstance(first, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.IfExp)):
        return None  # addAction(an_action) / addMenu(a_menu): a widget, not text
    return first


def lint_ui(root: Path = UI) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "safetext.py":
            continue
        src = path.read_text(encoding="utf-8")
        lines = src.splitlines()
        where = path.relative_to(root.parents[1])
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if _name(base) in BANNED_CLASSES:
                        why = BANNED_CLASSES[_name(base)]
                        problems.append(f"{where}:{node.lineno}: subclasses {_name(base)}: {why}")
            if not isinstance(node, ast.Call):
                continue
            fn = _name(node.func)
            line = lines[node.lineno - 1]
            if PRAGMA in line:
                continue
            if fn in BANNED_CLASSES and (isinstance(node.func, ast.Name)
                                         or _name(getattr(node.func, "value", None)) != "QMessageBox"):
                problems.append(f"{where}:{node.lineno}: {fn}(...): {BANNED_CLASSES[fn]}")
            elif isinstance(node.func, ast.Attribute) and _name(node.func.value) == "QMessageBox" and fn in (
                    "information", "warning", "critical", "question", "about"):
                problems.append(f"{where}:{node.lineno}: QMessageBox.{fn}: use safetext.message_box")
            elif fn in BANNED_CALLS:
                problems.append(f"{where}:{node.lineno}: {fn}(...): {BANNED_CALLS[fn]}")
            elif fn in TEXT_CALLS:
                arg = _text_arg(node, fn)
                if arg is not None and not _trusted(arg, TEXT_CALLS[fn]):
                    problems.append(f"{where}:{node.lineno}: {fn}(...) with a computed text: wrap it in "
                                    f"{' or '.join(TEXT_CALLS[fn])}(...) (or say why it is safe: {PRAGMA} ...)")
            elif fn == "showMessage" and any(not _trusted(a, ("balloon_text",)) for a in node.args[:2]):
                problems.append(f"{where}:{node.lineno}: showMessage(...) with a computed title or body: wrap "
                                "each in balloon_text(...) (a D-Bus tray hands them to a server that renders markup)")
            elif fn == "addRow" and node.args and isinstance(node.args[0], (ast.JoinedStr, ast.BinOp)):
                problems.append(f"{where}:{node.lineno}: addRow(computed label): the form makes an AutoText QLabel")
    return problems


def test_every_label_tooltip_menu_and_message_box_in_ui_goes_through_safetext() -> None:
    problems = lint_ui()
    assert not problems, "\n".join(problems)


def test_the_lint_finds_what_it_is_meant_to(tmp_path: Path) -> None:
    ui = tmp_path / "hearthside" / "ui"
    ui.mkdir(parents=True)
    (ui / "w.py").write_text(
        "from PySide6.QtWidgets import QLabel\n"
        "a = QLabel(name)\n"
        "b.setToolTip(error)\n"
        "c.setToolTip(tip(error))\n"
        "m.addAction(f'{persona}', go)\n"
        "m.addAction(menu_text(persona), go)\n"
        "d.setTextFormat(x)\n"
        "class L(QLabel): pass\n"
        "e.setToolTip(kept)  # safe: the field's own tip\n"
        "t.showMessage(balloon_text(n.title), n.body, icon, 10)\n"
        "t.showMessage(balloon_text(n.title), balloon_text(n.body), icon, 10)\n", encoding="utf-8")
    found = lint_ui(ui)
    assert sorted(int(p.split(":")[1]) for p in found) == [2, 3, 5, 7, 8, 10], found
