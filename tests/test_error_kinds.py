"""Errors carry a kind: the windows decide on ``kind``, never by searching the English of a
message, and a sentence's command-line advice is a separate field the CLI adds and the windows
leave out.

The MCP window is driven with real statuses (the service's own values, delivered through the
bridge's status signal as the live connections deliver them) and with a real server whose secret
was never entered; the notifications window with a real history file. The lint at the end keeps
``ui/`` from branching on message text again.
"""

from __future__ import annotations

import ast
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hearthside.core.errors import ErrorKind, ServiceError, kind_of, sentence_of
from hearthside.core.mcpconfig import McpConfigError, SecretRef, ServerConfig, ServerStatus

sys.path.insert(0, str(Path(__file__).parent))
from manage_helpers import make_bridge, widget_texts

UI = Path(__file__).resolve().parents[1] / "desktop" / "hearthside" / "ui"


# --- the types ----------------------------------------------------------------------------

def test_a_service_error_says_its_sentence_and_advice_on_the_command_line_and_keeps_them_apart() -> None:
    err = ServiceError("there is no MCP server named 'x'", ErrorKind.NOT_FOUND, " (see 'hearthside mcp list')")
    assert str(err) == "there is no MCP server named 'x' (see 'hearthside mcp list')"  # what the CLI prints
    assert sentence_of(err) == "there is no MCP server named 'x'" and kind_of(err) is ErrorKind.NOT_FOUND
    assert sentence_of(ValueError("plain")) == "plain" and kind_of(ValueError("plain")) is ErrorKind.NONE


def test_no_such_server_is_a_not_found_error_whose_cli_text_is_unchanged(app_context) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(McpConfigError) as got:
        app_context.mcp.get("nope")
    assert got.value.kind is ErrorKind.NOT_FOUND
    assert str(got.value) == "there is no MCP server named 'nope' (see 'hearthside mcp list')"
    assert "hearthside" not in got.value.sentence


def test_no_such_persona_is_not_found_and_the_window_sentence_has_no_command(app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.personas import PersonaError

    with pytest.raises(PersonaError) as got:
        app_context.personas.get("Nobody")
    assert got.value.kind is ErrorKind.NOT_FOUND
    assert str(got.value) == ("There is no persona named 'Nobody'. Run 'hearthside persona list' to see them, "
                              "or 'hearthside persona new Nobody' to create it.")
    assert sentence_of(got.value) == "There is no persona named 'Nobody'."


def test_a_status_as_json_keeps_the_whole_reason_and_names_its_kind() -> None:
    st = ServerStatus("a", "failed", "authentication failed (HTTP 401): the server refused the credentials",
                      kind=ErrorKind.AUTHENTICATION,
                      advice="; set the secret again with 'hearthside mcp set-secret a K'")
    d = st.as_dict()
    assert d["reason"] == st.reason + st.advice and d["kind"] == "authentication"


# --- the MCP window ----------------------------------------------------------------------

@pytest.fixture
def mcp_window(qtbot, app_context):  # type: ignore[no-untyped-def]
    from hearthside.ui.windows.mcp import McpWindow

    bridge = make_bridge(app_context)
    app_context.mcp.add(ServerConfig("words", "http", url="http://127.0.0.1:9/mcp", timeout=5))
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.tree.topLevelItemCount() == 1 and w.selected() is not None, timeout=20000)
    yield w, bridge
    app_context.runtime.run(app_context.mcp.close(), timeout=30)
    bridge.close()


def _status_cell(w) -> str:  # type: ignore[no-untyped-def]
    it = w.tree.topLevelItem(0)
    return it.text(3) if it is not None else ""


def _deliver(qtbot, w, bridge, st: ServerStatus) -> None:  # type: ignore[no-untyped-def]
    bridge.mcp_status.emit(st)
    qtbot.waitUntil(lambda: w.statuses.get("words") == st, timeout=5000)


def test_the_mcp_window_offers_the_fix_for_the_kind_not_for_words_in_the_reason(qtbot, mcp_window) -> None:  # type: ignore[no-untyped-def]
    w, bridge = mcp_window
    # A server's own error message that happens to say "authentication", "refused" and "not
    # connected yet": it is not a failure of those kinds, and the window must not say it is.
    said = "the server answered with an error: authentication refused, not connected yet to the database"
    _deliver(qtbot, w, bridge, ServerStatus("words", "failed", said))
    assert _status_cell(w) == "failed"
    assert said in w.detail.text()
    assert "Replace secret" not in w.detail.text() and "choose Test" not in w.detail.text()
    # An authentication failure, however it is worded: the window's own fix, not the CLI's.
    _deliver(qtbot, w, bridge, ServerStatus(
        "words", "failed", "the server refused the credentials (HTTP 403)", kind=ErrorKind.AUTHENTICATION,
        advice="; set the secret again with 'hearthside mcp set-secret words Authorization'"))
    assert "Choose Replace secret… and enter the token or key the server expects." in w.detail.text()
    assert "hearthside mcp" not in " ".join(widget_texts(w))
    # Unreachable and timed out: check the server.
    for kind in (ErrorKind.UNREACHABLE, ErrorKind.TIMED_OUT):
        _deliver(qtbot, w, bridge, ServerStatus("words", "failed", f"it went wrong ({kind})", kind=kind))
        assert "Check that the server is running and the address is right" in w.detail.text()
    # Never tried: the list says so and the detail offers Test.
    _deliver(qtbot, w, bridge, ServerStatus("words", "failed", "not connected yet", kind=ErrorKind.NOT_CONNECTED_YET))
    assert _status_cell(w) == "not connected yet"
    assert "Choose Test to connect now." in w.detail.text()


@pytest.mark.keyring
def test_a_server_whose_secret_was_never_entered_gets_the_windows_fix_and_no_cli_advice(  # type: ignore[no-untyped-def]
        qtbot, app_context, secret_service) -> None:
    from hearthside.ui.windows.mcp import McpWindow

    bridge = make_bridge(app_context)
    cfg = ServerConfig("nokey", "http", url="http://127.0.0.1:9/mcp",
                       headers={"Authorization": SecretRef("mcp/nokey/header/authorization")}, timeout=5)
    app_context.mcp.save(app_context.mcp.load().with_server(cfg))
    w = McpWindow(app_context, bridge)
    qtbot.addWidget(w)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.selected() is not None, timeout=20000)
        with qtbot.waitSignal(w.finished_action, timeout=30000, check_params_cb=lambda a: a == "test"):
            w.test("nokey")
        assert w.statuses["nokey"].kind is ErrorKind.SECRET_MISSING
        assert "is not set" in w.message.text() and "Choose Replace secret… and enter it." in w.message.text()
        assert "hearthside mcp set-secret" not in " ".join(widget_texts(w))
    finally:
        app_context.runtime.run(app_context.mcp.close(), timeout=30)
        bridge.close()


# --- the notification history -------------------------------------------------------------

def test_history_lines_carry_their_kind_and_the_soul_is_no_name(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    h = app_context.notifications
    t = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    # A check-in reply that starts like a drift line is still a check-in alert.
    h.append("Kip", "Edited by hand: your calendar, so I moved the 3pm sync", "notified", t)
    h.append("", "Edited by hand: soul.md changed since you approved it", "notified", t, kind="drift")
    kinds = [(e.persona, e.kind) for e in h.entries()]
    assert kinds == [("Kip", "checkin"), ("", "drift")]


def test_history_written_before_lines_had_a_kind_reads_as_it_meant(app_context) -> None:  # type: ignore[no-untyped-def]
    h = app_context.notifications
    h.path.parent.mkdir(parents=True, exist_ok=True)
    old = [{"persona": "your soul", "time": "2026-01-01T09:00:00+00:00", "text": "Removed: soul.md",
            "status": "notified"},
           {"persona": "Kip", "time": "2026-01-01T09:01:00+00:00", "text": "Stretch your legs.",
            "status": "notified"}]
    h.path.write_text("".join(json.dumps(d) + "\n" for d in old), encoding="utf-8")
    assert [(e.persona, e.kind) for e in h.entries()] == [("", "drift"), ("Kip", "checkin")]


# --- the lint -------------------------------------------------------------------------------

#: Names and attributes that hold a message for a person (or its lowered copy).
_TEXTY = frozenset({"exc", "e", "err", "error", "reason", "sentence", "message", "msg", "low", "text", "told",
                    "advice", "args", "why", "problem", "detail"})
_SEARCH_METHODS = frozenset({"startswith", "endswith", "find", "rfind", "index", "count", "__contains__"})


def _texty(node: ast.AST) -> bool:
    """Does ``node`` read a message's text (``str(exc)``, ``st.reason``, ``low``, ``exc.args``)?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("str", "repr", "format"):
            return True
        if isinstance(n, ast.Name) and n.id in _TEXTY or isinstance(n, ast.Attribute) and n.attr in _TEXTY:
            return True
    return False


def _phrase(node: ast.AST) -> bool:
    """A string literal of more than one word: English, not a state name like ``"connected"``."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value.split()) > 1


def _word(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _compare_hits(n: ast.Compare) -> bool:
    left = n.left
    for op, right in zip(n.ops, n.comparators, strict=True):
        literal_set = isinstance(right, (ast.Tuple, ast.List, ast.Set, ast.Dict))
        search = isinstance(op, (ast.In, ast.NotIn)) and _word(left) and not literal_set \
            and (_phrase(left) or _texty(right))
        if search or isinstance(op, (ast.Eq, ast.NotEq)) and (_phrase(left) or _phrase(right)):
            return True
        left = right
    return False


def _search_call(n: ast.Call) -> bool:
    """``text.startswith("could not")``, ``reason.find("refused")`` and the like."""
    if not (isinstance(n.func, ast.Attribute) and n.func.attr in _SEARCH_METHODS and n.args):
        return False
    first = n.args[0]
    return (_word(first) or isinstance(first, ast.Tuple)) and (_texty(n.func.value) or _phrase(first))


def _imports_re(n: ast.AST) -> bool:
    # A window that needs a regular expression is taking a sentence apart (as the CLI advice
    # used to be stripped): the service should hand over the parts instead.
    return isinstance(n, ast.Import) and any(a.name == "re" for a in n.names) \
        or isinstance(n, ast.ImportFrom) and n.module == "re"


def text_branches(source: str) -> list[str]:
    """Where ``source`` decides something by searching, comparing or parsing message text."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Compare) and _compare_hits(n) or isinstance(n, ast.Call) and _search_call(n):
            found.append(f"line {n.lineno}: {ast.unparse(n)}")
        elif _imports_re(n):
            found.append(f"line {n.lineno}: regular expressions")
    return found


def test_the_lint_catches_the_ways_windows_used_to_read_error_text() -> None:
    old = '''
def fix_hint(reason):
    low = reason.lower()
    if "authentication" in low:
        return "Choose Replace secret"
def paint(st):
    return st.state if st.reason != "not connected yet" else "not connected yet"
def failed(exc):
    if "timed out" in str(exc) or exc.args[0].startswith("could not"):
        pass
def open_row(e):
    return None if e.persona == "your soul" else e.persona
import re
'''
    hits = text_branches(old)
    assert len(hits) == 6, hits
    fine = '''
def ok(st, errors, kind):
    if st.kind is ErrorKind.AUTHENTICATION or st.state == "connected" or "service" not in errors:
        return kind in ("a", "b")
'''
    assert text_branches(fine) == []


#: ui modules whose job is to take *content* apart, never an error message: the Markdown
#: renderer reads a model's reply (brackets, table pipes) to format it.
CONTENT_PARSERS = {"markdown.py"}


def test_no_ui_module_branches_on_message_text() -> None:
    found = {str(p.relative_to(UI)): hits for p in sorted(UI.rglob("*.py"))
             if str(p.relative_to(UI)) not in CONTENT_PARSERS
             and (hits := text_branches(p.read_text(encoding="utf-8")))}
    assert found == {}, "decide on an error's kind (hearthside.core.errors), not its words: " + repr(found)
