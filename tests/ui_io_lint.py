"""An AST lint: no ``ui/`` code that runs on the Qt thread does file, lock or network I/O.

The Qt thread draws every window; a read that waits (a settings lock held by another process, a
FIFO, a slow network folder, a keyring prompt) freezes them all. ``ui/`` hands such work to a
worker: a function or lambda passed to ``bridge.call`` / ``call_bg`` / ``call_async`` (or a
thread's ``target``) runs there, and so does every ``async def`` (coroutines run on the app's
runtime loop, never on Qt's). Everything else is Qt-thread code, and this lint flags, by name:

- the builtin ``open()`` and Path's file methods (``read_text``, ``exists``, ``stat``, ``glob`` …);
- ``os``/``os.path`` calls that touch the file system, ``json.load``, ``tomllib.load``, ``shutil``;
- any call into ``socket``, ``urllib``, ``httpx``, ``requests``, ``keyring``, ``filelock``,
  ``subprocess`` (also when imported by name);
- calls into the app's services (``….settings.get()``, ``….mcp.get()``, ``….personas.list()``,
  ``….autostart.enabled()``, a local ``svc = self.app.mcp`` …), whose methods read files or take
  locks, and the app functions known to read settings or files (``notifications_allowed`` …);
- ``.status()``, ``.entries()`` and ``.soul_path()`` on anything (they read files or settings);
- Qt's own ``QFile``, ``QLockFile``, ``QLocalSocket``, ``QSettings`` … (built or called by class).

A line (or a ``def`` line, for the whole function) that must do it anyway says why with a
``# io-ok: <why>`` comment. Findings are ``file:line: what``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

#: Calls that run one of their arguments on a worker thread or the runtime loop, not on Qt's: which
#: positional argument (the others, e.g. ``done``/``failed``, run on the Qt thread) or keyword.
WORKER_CALLS = {"call": 0, "call_bg": 0, "call_async": 0, "submit": 0, "to_thread": 0, "start_new_thread": 0,
                "run_in_executor": 1, "Timer": 1, "Thread": -1, "UiState": 1}
WORKER_KEYWORDS = frozenset({"target", "fn", "function", "make_coro"})
#: Methods of pathlib.Path (and friends) that touch the file system.
PATH_METHODS = frozenset({"read_text", "write_text", "read_bytes", "write_bytes", "exists", "is_file", "is_dir",
                          "is_symlink", "stat", "lstat", "iterdir", "glob", "rglob", "mkdir", "rmdir", "unlink",
                          "touch", "resolve", "samefile", "readlink", "chmod"})
OS_CALLS = frozenset({"os.listdir", "os.scandir", "os.stat", "os.lstat", "os.open", "os.remove", "os.unlink",
                      "os.rename", "os.replace", "os.makedirs", "os.mkdir", "os.rmdir", "os.walk", "os.access",
                      "os.chmod", "os.read", "os.write", "os.readlink", "os.path.exists", "os.path.lexists",
                      "os.path.isfile", "os.path.isdir", "os.path.islink", "os.path.getsize", "os.path.getmtime",
                      "os.path.realpath", "os.path.samefile", "json.load", "json.dump", "tomllib.load",
                      "tomli.load", "io.open"})
#: Modules every call into is I/O.
IO_MODULES = frozenset({"socket", "urllib", "httpx", "requests", "keyring", "filelock", "subprocess", "shutil",
                        "glob"})
#: The app's services (``app.NAME``): their methods read files or wait on locks.
SERVICES = frozenset({"settings", "personas", "drift", "secrets", "mcp", "model", "plugins", "memory", "sessions",
                      "notifications", "heartbeat"})
#: Services met as ``anything.NAME`` (the shell's own, and the settings store wherever it is held).
OWN_SERVICES = frozenset({"settings", "autostart", "lifecycle"})
#: App functions that read settings or files.
IO_FUNCTIONS = frozenset({"open", "notifications_allowed", "notification_prefs", "recover_settings", "run_checks",
                          "read_bounded", "write_atomic", "keep_backup", "lock_for", "save_notification_prefs"})
READER_METHODS = frozenset({"status", "entries", "soul_path"})
#: Qt's own file, lock and socket classes (constructing or calling one).
QT_IO = frozenset({"QFile", "QSaveFile", "QLockFile", "QLocalSocket", "QLocalServer", "QFileInfo", "QDir",
                   "QSettings", "QTcpSocket", "QNetworkAccessManager"})

EXEMPT = re.compile(r"#\s*io-ok:\s*\S")


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _is_service(node: ast.AST) -> bool:
    """``app.mcp``, ``self.app.settings``, ``self.autostart`` …: an attribute that is a service."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr in OWN_SERVICES:
        return True
    parent = node.value
    parent_name = parent.attr if isinstance(parent, ast.Attribute) else getattr(parent, "id", "")
    return node.attr in SERVICES and parent_name == "app"


def _worker_args(call: ast.Call) -> list[ast.expr]:
    """The arguments of ``call`` that run off the Qt thread."""
    pos = WORKER_CALLS.get(_callee_name(call.func))
    if pos is None:
        return []
    out = [k.value for k in call.keywords if k.arg in WORKER_KEYWORDS]
    if 0 <= pos < len(call.args):
        out.append(call.args[pos])
    return out


def _callee_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


class _Lint(ast.NodeVisitor):
    def __init__(self, source: str, where: str) -> None:
        self.lines = source.splitlines()
        self.where = where
        self.found: list[str] = []
        self.aliases: dict[str, str] = {}  # imported name -> qualified name
        self.worker_nodes: set[int] = set()  # ids of lambdas/defs that run off the Qt thread
        self.worker_methods: set[str] = set()  # self.NAME handed to a worker
        self.service_locals: list[set[str]] = [set()]
        self.depth_worker = 0

    # --- preparation -------------------------------------------------------------------
    def prepare(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                handed = set()
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        for arg in _worker_args(sub):
                            if isinstance(arg, ast.Lambda):
                                self.worker_nodes.add(id(arg))
                            elif isinstance(arg, ast.Name):
                                handed.add(arg.id)
                            elif isinstance(arg, ast.Attribute) and _dotted(arg.value) == "self":
                                self.worker_methods.add(arg.attr)
                for sub in node.body:
                    for inner in ast.walk(sub):
                        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and inner.name in handed:
                            self.worker_nodes.add(id(inner))
            elif isinstance(node, ast.Call):
                for arg in _worker_args(node):
                    if isinstance(arg, ast.Lambda):
                        self.worker_nodes.add(id(arg))

    # --- scopes --------------------------------------------------------------------------
    def _exempt_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        header = self.lines[node.lineno - 1:node.body[0].lineno - 1] or [self.lines[node.lineno - 1]]
        return any(EXEMPT.search(line) for line in header)  # the def line(s), up to the body

    def _scope(self, node: ast.AST, worker: bool) -> None:
        self.depth_worker += worker
        self.service_locals.append(set())
        self.generic_visit(node)
        self.service_locals.pop()
        self.depth_worker -= worker

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        worker = id(node) in self.worker_nodes or node.name in self.worker_methods or self._exempt_def(node)
        self._scope(node, worker)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scope(node, True)  # coroutines run on the runtime loop

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scope(node, id(node) in self.worker_nodes)

    def visit_Assign(self, node: ast.Assign) -> None:
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and _is_service(node.value)):
            self.service_locals[-1].add(node.targets[0].id)
        self.generic_visit(node)

    # --- the calls -----------------------------------------------------------------------
    def _why(self, call: ast.Call) -> str:
        func = call.func
        if isinstance(func, ast.Name):
            qual = self.aliases.get(func.id, func.id)
            if func.id in IO_FUNCTIONS or qual.rsplit(".", 1)[-1] in IO_FUNCTIONS and qual != func.id:
                return f"{func.id}() reads or writes files"
            if qual in OS_CALLS or qual.split(".")[0] in IO_MODULES:
                return f"{func.id}() is {qual}"
            if func.id in QT_IO:
                return f"{func.id}() is Qt file, lock or socket I/O"
            return ""
        if not isinstance(func, ast.Attribute):
            return ""
        dotted = _dotted(func)
        if dotted:
            head, _, rest = dotted.partition(".")
            qual = self.aliases.get(head, head) + ("." + rest if rest else "")
            if qual in OS_CALLS or (qual.split(".")[0] in IO_MODULES and head in self.aliases):
                return f"{qual}() does I/O"
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in QT_IO:
            return f"{receiver.id}.{func.attr}() is Qt file, lock or socket I/O"
        if _is_service(receiver):
            return f"{ast.unparse(receiver)}.{func.attr}() calls an app service"
        if isinstance(receiver, ast.Name) and any(receiver.id in s for s in self.service_locals):
            return f"{receiver.id}.{func.attr}() calls an app service"
        if func.attr in READER_METHODS:
            return f".{func.attr}() reads a service's files"
        if func.attr in PATH_METHODS:
            return f".{func.attr}() touches the file system"
        return ""

    def visit_Call(self, node: ast.Call) -> None:
        if not self.depth_worker:
            why = self._why(node)
            if why and not EXEMPT.search(self.lines[node.lineno - 1]):
                self.found.append(f"{self.where}:{node.lineno}: {why} on the Qt thread")
        self.generic_visit(node)


def lint_source(source: str, where: str = "<source>") -> list[str]:
    """The findings for one module's source."""
    tree = ast.parse(source)
    lint = _Lint(source, where)
    lint.prepare(tree)
    lint.visit(tree)
    return lint.found


def lint_tree(root: Path) -> Iterator[str]:
    """The findings for every module under ``root`` (paths relative to its parent)."""
    for path in sorted(root.rglob("*.py")):
        yield from lint_source(path.read_text(encoding="utf-8"), str(path.relative_to(root.parent)))
