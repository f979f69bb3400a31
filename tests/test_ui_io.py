"""Issue 19, the seam: the Qt thread never reads a file or waits on a lock, and ui/ has no import circle.

Three layers: the lint of ``tests/ui_io_lint.py`` over every ``ui/`` module (and proof that it
catches what it is meant to), the import graph of ``hearthside.ui.*``, and the behaviour itself:
another Hearthside process holds ``settings.toml.lock`` while a settings write waits for it, and
the tray keeps working from its last snapshot (menu, notices, windows, a timer that keeps
ticking); the refresh asked for meanwhile completes once the lock is released.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from personas import make_persona
from ui_io_lint import lint_source, lint_tree

UI = Path(__file__).resolve().parents[1] / "desktop" / "hearthside" / "ui"
WAIT = 30_000


# --- the lint -------------------------------------------------------------------------------

def test_no_ui_module_does_file_lock_or_network_io_on_the_qt_thread() -> None:
    assert list(lint_tree(UI)) == []


PLANTED = '''
import json
import os
import subprocess
from pathlib import Path
from shutil import copyfile

class W:
    def __init__(self, app, bridge):
        self.app = app
        self.bridge = bridge
        open("/etc/passwd")                                   # 12: flagged
        Path("x").read_text()                                 # 13: flagged
        os.path.exists("x")                                   # 14: flagged
        json.load(open("x"))                                  # 15: flagged twice
        subprocess.run(["true"])                              # 16: flagged
        copyfile("a", "b")                                    # 17: flagged (imported by name)
        self.app.settings.get("notifications")                # 18: flagged
        svc = self.app.mcp
        svc.get("srv")                                        # 20: flagged (a service held locally)
        self.app.notifications.entries()                      # 21: flagged
        self.shell.app.personas.list()                        # 22: flagged
        QLockFile("x.lock")                                   # 23: flagged
        os.path.join("a", "b")                                # pure: not flagged
        json.loads("{}")                                      # pure: not flagged
        self.model.index(0, 0)                                # a Qt model, not a service
        Path("x").read_text()  # io-ok: planted exemption with a reason

    def reload(self):
        svc = self.app.mcp

        def work():
            return svc.entries(), Path("y").exists()          # in a worker: not flagged

        def done(got):
            self.app.settings.get("x")                        # 36: done runs on the Qt thread: flagged

        self.bridge.call(work, done)
        self.bridge.call(lambda: self.app.settings.all(), done)  # a worker lambda: not flagged

    async def run(self):
        return Path("z").read_bytes()                         # a coroutine: the runtime loop

    def helper(self):  # io-ok: called only from workers
        return Path("w").stat()
'''


def test_the_lint_flags_each_planted_call_by_name_with_its_line() -> None:
    found = lint_source(PLANTED, "planted.py")
    lines = [int(f.split(":")[1]) for f in found]
    assert lines == [12, 13, 14, 15, 15, 16, 17, 18, 20, 21, 22, 23, 36], "\n".join(found)
    assert found[0] == "planted.py:12: open() reads or writes files on the Qt thread"
    assert "self.app.settings.get()" in found[7] and "svc.get()" in found[8]


def test_an_exemption_needs_a_reason() -> None:
    assert lint_source("from pathlib import Path\nPath('x').exists()  # io-ok:\n")  # no reason: flagged
    assert not lint_source("from pathlib import Path\nPath('x').exists()  # io-ok: before the loop\n")


# --- the import graph -------------------------------------------------------------------------

def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return "hearthside." + ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports: every import, at module level, in a
    function or under ``if TYPE_CHECKING:`` (a circle of type-only imports is still a circle)."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            graph[mod] |= {t for t in targets if t in files and t != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle found by a depth-first walk (each as the modules around it)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_ui_has_no_import_circle() -> None:
    graph = import_graph(UI)
    assert "hearthside.ui.tray" in graph["hearthside.ui.app"]  # the walk sees imports at all
    assert "hearthside.ui.windows.about" in graph["hearthside.ui.app"]  # and those in functions
    assert cycles(graph) == []


def test_the_import_walk_finds_a_planted_circle(tmp_path: Path) -> None:
    ui = tmp_path / "ui"
    (ui / "windows").mkdir(parents=True)
    (ui / "__init__.py").write_text("")
    (ui / "windows" / "__init__.py").write_text("")
    (ui / "app.py").write_text("def f():\n    from .windows.about import A\n")
    (ui / "windows" / "about.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from ..app import Shell\n")
    assert cycles(import_graph(ui)) == [["hearthside.ui.app", "hearthside.ui.windows.about", "hearthside.ui.app"]]


# --- the behaviour: a held settings lock does not freeze the tray -------------------------------

HOLD = """
import sys
from hearthside.adapters.locks import lock_for
lock = lock_for(sys.argv[1])
lock.acquire(30)
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""


@pytest.fixture
def lock_holder(app_context) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """Another process holding ``settings.toml.lock`` until ``release()`` (or the test ends)."""
    lock_file = app_context.paths.settings_file.with_name(app_context.paths.settings_file.name + ".lock")
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_file)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    released = threading.Event()
    guard = threading.Lock()

    def release() -> None:
        with guard:
            if not released.is_set():
                released.set()
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()

    proc.release = release  # type: ignore[attr-defined]
    proc.released = released  # type: ignore[attr-defined]
    proc.lock_file = lock_file  # type: ignore[attr-defined]
    yield proc
    release()
    proc.wait(timeout=30)


def _free(lock: Any) -> bool:
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False


def test_a_held_settings_lock_does_not_freeze_the_tray(qtbot, app_context, lock_holder) -> None:  # type: ignore[no-untyped-def]
    from hearthside.adapters.locks import lock_for
    from hearthside.app.alerts import Alert, make_notice
    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController
    from PySide6.QtCore import QTimer

    make_persona(app_context, "Kip")
    make_persona(app_context, "Ada")
    shell = Shell(app_context, opener=lambda _p: True)
    shell.exit = lambda: None
    TrayController(shell)
    shell.start()
    qtbot.waitUntil(lambda: shell.started and shell.rows_loaded, timeout=WAIT)
    try:
        # A settings write (as Pause check-ins does) now waits for the other process's lock.
        app_context.settings.lock_timeout = 300
        writer = threading.Thread(target=app_context.settings.set, args=("personas.Kip.paused", True))
        writer.start()
        qtbot.waitUntil(lambda: not _free(lock_for(lock_holder.lock_file)._threads), timeout=WAIT)
        # If the Qt thread is stuck (it never should be), the lock goes after a while so the test ends.
        valve = threading.Timer(30, lock_holder.release)
        valve.start()
        ticks = []
        timer = QTimer()
        timer.timeout.connect(lambda: ticks.append(1))
        timer.start(10)

        reads = shell.state.reads
        menu = shell.tray.menu
        menu.aboutToShow.emit()  # opening the menu asks for a refresh; it shows the last snapshot now
        assert [a.text() for a in menu.actions() if a.menu() is not None] == ["Ada", "Kip"]
        shell.on_notice(make_notice([Alert("checkin", "Kip", "Water the basil.")]))
        assert shell.unread == 1 and shell.notices[-1].alerts[0].text == "Water the basil."
        for show in (shell.show_notifications, shell.show_settings, shell.show_mcp, shell.show_about,
                     shell.show_main):
            assert show().isVisible()
        qtbot.waitUntil(lambda: len(ticks) >= 20, timeout=WAIT)  # the event loop keeps running
        assert not lock_holder.released.is_set(), "the Qt thread waited for the settings lock"
        assert "Kip" in shell.tooltip() and not shell.row("Kip").paused  # the last snapshot

        lock_holder.release()
        writer.join(timeout=30)
        assert not writer.is_alive()
        qtbot.waitUntil(lambda: shell.state.reads > reads, timeout=WAIT)  # the refresh completed
        shell.refresh()
        qtbot.waitUntil(lambda: shell.row("Kip").paused, timeout=WAIT)  # and a new one shows the write
        valve.cancel()
        timer.stop()
    finally:
        shell.quitting = True
        for w in list(shell.windows.values()):
            w.hide()
        shell.lifecycle.stop()
        shell.bridge.close()


# --- the state: one read at a time -------------------------------------------------------------

def test_a_burst_of_refreshes_while_a_read_waits_is_one_more_read(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Drift bursts and menu openings while a read waits (on a lock) do not fill the worker pool."""
    from hearthside.ui.bridge import Bridge
    from hearthside.ui.state import Snapshot, UiState

    gate = threading.Event()
    started: list[int] = []

    def read() -> Snapshot:
        started.append(1)
        assert gate.wait(60)
        return Snapshot(loaded=True)

    bridge = Bridge()
    state = UiState(bridge, read)
    try:
        state.refresh()
        qtbot.waitUntil(lambda: len(started) == 1, timeout=WAIT)
        got: list[Snapshot] = []
        for _ in range(50):
            state.refresh(got.append)
        assert len(started) == 1 and not state.snapshot.loaded  # the Qt side still has the last one
        gate.set()
        qtbot.waitUntil(lambda: state.reads == 2, timeout=WAIT)
        assert len(started) == 2 and len(got) == 50 and all(s.loaded for s in got)
        assert not state._running  # nothing more queued
    finally:
        gate.set()
        bridge.close()


def test_a_failed_read_is_an_error_and_keeps_the_last_snapshot(qtbot) -> None:  # type: ignore[no-untyped-def]
    from hearthside.ui.bridge import Bridge
    from hearthside.ui.state import Snapshot, UiState

    results: list[Snapshot | Exception] = [Snapshot(loaded=True), OSError("the disk went away")]

    def read() -> Snapshot:
        got = results.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    bridge = Bridge()
    state = UiState(bridge, read)
    try:
        with qtbot.waitSignal(state.changed, timeout=WAIT):
            state.refresh()
        first = state.snapshot
        called: list[Snapshot] = []
        with qtbot.waitSignal(state.changed, timeout=WAIT):
            state.refresh(called.append)
        assert state.snapshot is first and called == []
        assert state.errors["state"] == "the personas could not be read: the disk went away"
    finally:
        bridge.close()
