"""The five file tools. Each resolves the workspace per call from the session environment.

Every call runs off the event loop under a :class:`~.budget.Budget` (time, entries, bytes,
cancellation), so a huge folder or a hostile pattern never blocks the shared event loop. Glob
and Grep match with RE2 (``google-re2``), which never backtracks; patterns RE2 does not
support (back-references, look-around) are refused with a sentence. RE2's time still grows
with the pattern's size times the line's length, so the read-only tools (Read, Glob, Grep) run
in a worker process that is killed at the deadline (:mod:`.isolate`): the time budget holds
for real. Edit and Write stay in this process, next to the session's write guard, which every
write asks; their work is bounded by the 1 MiB file limit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from hearthside.plugin import CallTarget, ToolEnv, ToolResult, ToolSpec

from . import isolate
from .budget import Budget, BudgetExceeded, budget_from, off_loop
from .workspace import MAX_FILE_BYTES, Workspace, WorkspaceError

LEDGER = "files.read_versions"
MAX_GLOB = 500
MAX_MATCHES = 200
DEFAULT_LINES = 2000


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _re2(pattern: str, ignore_case: bool = False) -> Any:
    """Compile with RE2 (linear time). Raises WorkspaceError with a sentence on a bad pattern."""
    try:
        import re2  # type: ignore[import-untyped]  # google-re2 ships no type information
    except ImportError:  # pragma: no cover - google-re2 is a dependency of this pack
        raise WorkspaceError("Glob and Grep need the google-re2 package; reinstall hearthside-files") from None
    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = 64 << 20
    opts.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options=opts)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise WorkspaceError(
            f"'pattern' cannot be used: {why} (Grep uses RE2 syntax: no back-references or "
            "look-around)") from None


class _FileTool:
    """Shared plumbing: find the workspace, keep the per-session read ledger, run off the loop."""

    name = ""
    description = ""
    schema: ClassVar[dict[str, Any]] = {}
    read_only = True

    def __init__(self, settings: Any = None) -> None:
        self.settings = settings

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    def workspace(self, env: ToolEnv) -> Workspace:
        root = env.workspace
        if not root and self.settings is not None:
            configured = self.settings.get("files.workspace")
            root = configured if isinstance(configured, str) and configured else None
        if not root:
            raise WorkspaceError(
                "No workspace folder is set, so file tools cannot be used. Ask the user to set "
                "files.workspace in Hearthside's settings."
            )
        return Workspace(root, env.write_guard)

    @staticmethod
    def ledger(env: ToolEnv) -> dict[str, str]:
        led = env.services.get(LEDGER)
        if not isinstance(led, dict):
            led = {}
            env.services[LEDGER] = led
        return led

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        budget = budget_from(self.settings)
        if not self.read_only:
            return await off_loop(lambda b: outcome(self, args, env, b), budget)
        try:
            root = str(self.workspace(env).root)
        except WorkspaceError as exc:
            return ToolResult.error(str(exc))

        def work(b: Budget) -> ToolResult:
            try:
                reply = isolate.call(self.name, dict(args), root, b)
            except BudgetExceeded as exc:
                return ToolResult.error(f"{self.name} {exc}.")
            except isolate.WorkerFailed as exc:
                return ToolResult.error(f"{self.name} stopped: {exc}.")
            ledger = reply.get("ledger")
            if isinstance(ledger, dict):
                self.ledger(env).update({str(k): str(v) for k, v in ledger.items()})
            return ToolResult(str(reply.get("content", "")), bool(reply.get("is_error")))

        return await off_loop(work, budget)

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:  # pragma: no cover
        raise NotImplementedError


def outcome(tool: _FileTool, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
    """Run one call of ``tool`` here and now; a refusal or an exhausted budget is its sentence."""
    try:
        return tool.run(args, env, budget)
    except BudgetExceeded as exc:
        return ToolResult.error(f"{tool.name} {exc}.")
    except WorkspaceError as exc:
        return ToolResult.error(str(exc))


def _text(data: bytes, rel: str) -> str:
    if b"\x00" in data[:8192]:
        raise WorkspaceError(f"{rel} is a binary file; only text files can be read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkspaceError(f"{rel} is not UTF-8 text") from None


class ReadTool(_FileTool):
    name = "Read"
    description = (
        "Read a text file in the workspace folder. Shows numbered lines; 'offset' (first line, "
        "1-based) and 'limit' (number of lines) read part of a long file. A file must be read "
        "before Edit or Write can change it."
    )
    schema = _schema({
        "path": {"type": "string", "description": "path relative to the workspace"},
        "offset": {"type": "integer", "minimum": 1},
        "limit": {"type": "integer", "minimum": 1},
    }, ["path"])

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
        ws = self.workspace(env)
        real = ws.resolve(args.get("path"))
        data, version = ws.read(real)
        rel = ws.rel(real)
        text = _text(data, rel)
        self.ledger(env)[str(real)] = version
        lines = text.splitlines()
        offset = args.get("offset") or 1
        limit = args.get("limit") or DEFAULT_LINES
        if not isinstance(offset, int) or not isinstance(limit, int) or offset < 1 or limit < 1:
            raise WorkspaceError("'offset' and 'limit' must be positive whole numbers")
        part = lines[offset - 1: offset - 1 + limit]
        body = "\n".join(f"{i:6d}\t{ln}" for i, ln in enumerate(part, offset))
        last = offset - 1 + len(part)
        head = f"{rel} (version {version}; lines {offset}-{last} of {len(lines)})"
        return ToolResult(f"{head}\n{body}" if body else f"{head}\n(empty)")


class GlobTool(_FileTool):
    name = "Glob"
    description = (
        "List files in the workspace folder whose path matches a pattern, e.g. '*.md' or "
        f"'notes/**/*.txt'. At most {MAX_GLOB} paths, sorted."
    )
    schema = _schema({"pattern": {"type": "string"}}, ["pattern"])

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
        ws = self.workspace(env)
        paths = _glob(ws, args.get("pattern"), budget)
        if not paths:
            return ToolResult("No files match.")
        more = f"\n(only the first {MAX_GLOB} are shown)" if len(paths) > MAX_GLOB else ""
        return ToolResult("\n".join(ws.rel(p) for p in paths[:MAX_GLOB]) + more)


def glob_regex(pattern: str) -> str:
    """A glob over ``/``-separated relative paths as an anchored RE2 expression: ``*`` and
    ``?`` stay within one folder name, a ``**`` segment matches any number of folders (several
    in a row count as one), ``[...]`` is a character class (``[!...]`` negated)."""
    segs: list[str] = []
    for seg in pattern.split("/"):
        if seg == "**" and segs and segs[-1] == "**":
            continue
        if seg or not segs:
            segs.append(seg)
    out: list[str] = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment(seg) + ("" if last else "/"))
    return "^" + "".join(out) + "$"


def _segment(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            while i + 1 < len(seg) and seg[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in seg[i + 2:]:
            j = seg.index("]", i + 2)
            body = seg[i + 1:j]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            body = body.replace("\\", "\\\\").replace("/", "")
            out.append(f"[^{body}/]" if neg else f"[{body}]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _glob(ws: Workspace, pattern: object, budget: Budget) -> list[Path]:
    if not isinstance(pattern, str) or not pattern.strip():
        raise WorkspaceError("'pattern' must be a non-empty string")
    if pattern.startswith(("/", "~")) or ".." in Path(pattern).parts or "\x00" in pattern:
        raise WorkspaceError(f"pattern {pattern!r} must stay inside the workspace (no '..' or leading '/')")
    rx = _re2(glob_regex(pattern.strip()))
    out: list[Path] = []
    for rel, is_file in ws.walk():
        budget.tick()
        if is_file and rx.search(rel):
            out.append(Path(os.path.realpath(ws.root / rel)))
            if len(out) > MAX_GLOB * 4:
                break
    return sorted({p for p in out if p.is_relative_to(ws.root)})


class GrepTool(_FileTool):
    name = "Grep"
    description = (
        "Search the text of files in the workspace with a regular expression. 'glob' limits "
        f"which files (default all). Shows path:line: text, at most {MAX_MATCHES} matches."
    )
    schema = _schema({
        "pattern": {"type": "string"},
        "glob": {"type": "string"},
        "ignore_case": {"type": "boolean"},
    }, ["pattern"])

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
        ws = self.workspace(env)
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise WorkspaceError("'pattern' must be a non-empty regular expression")
        rx = _re2(pattern, bool(args.get("ignore_case")))
        hits: list[str] = []
        for real in _glob(ws, args.get("glob") or "**/*", budget):
            try:
                if real.stat().st_size > MAX_FILE_BYTES:
                    continue
                data, _ = ws.read(real)
                budget.spend(len(data))
                text = _text(data, ws.rel(real))
            except (OSError, WorkspaceError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if n % 512 == 0:
                    budget.check()
                if rx.search(line):
                    hits.append(f"{ws.rel(real)}:{n}: {line[:300]}")
                    if len(hits) >= MAX_MATCHES:
                        return ToolResult("\n".join(hits) + f"\n(stopped at {MAX_MATCHES} matches)")
        return ToolResult("\n".join(hits) if hits else "No matches.")


class EditTool(_FileTool):
    name = "Edit"
    description = (
        "Replace exact text in a file you have read with Read. 'old_string' must appear exactly "
        "once unless 'replace_all' is true. Refused if the file changed since you read it."
    )
    schema = _schema({
        "path": {"type": "string"},
        "old_string": {"type": "string"},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"},
    }, ["path", "old_string", "new_string"])
    read_only = False

    def target(self, args: Mapping[str, Any], env: ToolEnv) -> CallTarget:
        """For the approval prompt: the resolved file this call would edit."""
        return CallTarget("edit", str(self.workspace(env).resolve(args.get("path"))))

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
        ws = self.workspace(env)
        real = ws.resolve(args.get("path"))
        rel = ws.rel(real)
        ws.check_write(real)
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise WorkspaceError("'old_string' (non-empty) and 'new_string' must be strings")
        if old == new:
            raise WorkspaceError("'old_string' and 'new_string' are the same; nothing to change")
        led = self.ledger(env)
        recorded = led.get(str(real))
        if recorded is None:
            raise WorkspaceError(f"Read {rel} before editing it")
        data, current = ws.read(real)
        if current != recorded:
            raise WorkspaceError(f"{rel} changed since you read it; Read it again before editing it")
        text = _text(data, rel)
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"'old_string' was not found in {rel}")
        if count > 1 and not args.get("replace_all"):
            raise WorkspaceError(
                f"'old_string' appears {count} times in {rel}; add surrounding text to make it "
                "unique, or set replace_all"
            )
        updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
        led[str(real)] = ws.replace(real, current, updated.encode("utf-8"))
        return ToolResult(f"Edited {rel}: replaced {count if args.get('replace_all') else 1} occurrence(s).")


class WriteTool(_FileTool):
    name = "Write"
    description = (
        "Write a whole file. Creates a new file (with its folders), or replaces an existing "
        "file only after you have read it and it has not changed since."
    )
    schema = _schema({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"])
    read_only = False

    def target(self, args: Mapping[str, Any], env: ToolEnv) -> CallTarget:
        """For the approval prompt: the resolved file, and whether it would be created or replaced."""
        real = self.workspace(env).resolve(args.get("path"))
        return CallTarget("replace" if os.path.lexists(real) else "create", str(real))

    def run(self, args: Mapping[str, Any], env: ToolEnv, budget: Budget) -> ToolResult:
        ws = self.workspace(env)
        real = ws.resolve(args.get("path"))
        rel = ws.rel(real)
        ws.check_write(real)
        content = args.get("content")
        if not isinstance(content, str):
            raise WorkspaceError("'content' must be a string")
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"the content is larger than {MAX_FILE_BYTES // 1024} KiB")
        led = self.ledger(env)
        if not os.path.lexists(real):
            led[str(real)] = ws.create(real, data)
            return ToolResult(f"Created {rel} ({len(data)} bytes).")
        recorded = led.get(str(real))
        if recorded is None:
            raise WorkspaceError(f"{rel} already exists; Read it before replacing it")
        led[str(real)] = ws.replace(real, recorded, data)
        return ToolResult(f"Replaced {rel} ({len(data)} bytes).")


def make_tools(settings: Any = None) -> list[_FileTool]:
    """The pack's tools, sharing the settings view for the workspace fallback."""
    return [cls(settings) for cls in (ReadTool, GlobTool, GrepTool, EditTool, WriteTool)]
