"""The Bash tool: one shell command in the session's bound folder, inside the sandbox.

The command runs on the runner the session's environment carries
(``env.environment.command_runner()``); the runner decides where (its one folder), how (under
bubblewrap, never without) and for how long. This tool only checks the arguments, keeps the
output bounded and words the result. It is mutating and declares ``always_ask``, so the user is
asked about every call — in accept-edits mode too — and a check-in never runs it unless the
persona was granted mutating tools.

Output: with a streaming runner the tool keeps the first :data:`HEAD` bytes and a ring of the
last :data:`TAIL` bytes (a long build's end is where the error is); otherwise the runner's
head-capped stdout and stderr.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hearthside.plugin import (
    CallTarget,
    CommandStreamer,
    ErrNoShell,
    ToolEnv,
    ToolResult,
    ToolSpec,
)

#: Bytes kept from the start and from the end of a streamed command's output.
HEAD = 20_000
TAIL = 10_000
#: The longest command the model may send (a command is shown in full in the approval).
MAX_COMMAND = 20_000

DESCRIPTION = (
    "Run one shell command (/bin/sh -c) in your working folder, inside a sandbox. The user is asked "
    "before every command. The folder is read-write; everything else (your persona files, the "
    "soul, Hearthside's folders) is read-only, /tmp is private and empty, there is no network "
    "unless the user turned it on, and no keyring. stdin is empty. Output is cut when long (the "
    "start and the end are kept). A non-zero exit code is reported, not an error. Use it for what "
    "the file tools cannot do (run a script, a build, git, a converter); prefer Read/Grep/Edit "
    "for reading and changing files. Example: {\"command\": \"ls -la && wc -l notes.txt\"}."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command, run with /bin/sh -c."},
        "timeout": {"type": "number", "description": "Seconds before it is stopped (optional; the "
                    "default is the user's setting, and there is a maximum)."},
    },
    "required": ["command"],
    "additionalProperties": False,
}


class _HeadTail:
    """The first ``head`` bytes and the last ``tail`` bytes of a stream, and the total."""

    def __init__(self, head: int = HEAD, tail: int = TAIL) -> None:
        self.head_cap, self.tail_cap = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:  # trim now and then, not on every chunk
                del self.tail[:-self.tail_cap]

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_cap:])
        left_out = self.total - len(self.head) - len(tail)
        out = bytes(self.head).decode("utf-8", "replace")
        if left_out > 0:
            out += f"\n[… {left_out:,} bytes of output left out; the last {len(tail):,} follow …]\n"
        return out + tail.decode("utf-8", "replace")


def _timeout(raw: object) -> float | None | str:
    """The ``timeout`` argument: None (the default), seconds, or a sentence for the model."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw <= 0:
        return "timeout must be a number of seconds above 0 (or left out for the default)."
    return float(raw)


class BashTool:
    """Bash: see the module docstring."""

    read_only = False
    always_ask = True

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("Bash", DESCRIPTION, SCHEMA)

    def target(self, args: Mapping[str, Any], env: ToolEnv) -> CallTarget | None:
        """For the approval prompt: the folder the command runs in (the command is shown in full
        below it)."""
        if env.environment is None:
            return None
        try:
            runner = env.environment.command_runner()
        except ErrNoShell:
            return None
        root = getattr(runner, "root", None)
        return CallTarget("run a shell command in", str(root)) if root is not None else None

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolResult.error("Give the shell command to run as 'command' (a non-empty string).")
        if len(command) > MAX_COMMAND:
            return ToolResult.error(f"The command is {len(command):,} characters long; the most is "
                                    f"{MAX_COMMAND:,}. Put a long script in a file and run that.")
        if "\x00" in command:
            return ToolResult.error("The command contains a NUL character, which a shell cannot run.")
        unknown = sorted(set(args) - {"command", "timeout"})
        if unknown:
            return ToolResult.error(f"Unknown argument(s) {', '.join(unknown)}; Bash takes 'command' and "
                                    "optionally 'timeout'.")
        timeout = _timeout(args.get("timeout"))
        if isinstance(timeout, str):
            return ToolResult.error(timeout)
        if env.environment is None:
            return ToolResult.error("There is no shell in this session (it has no working folder).")
        try:
            runner = env.environment.command_runner()
            if isinstance(runner, CommandStreamer):
                return await self._streamed(runner, command, timeout)
            res = await runner.run(command, timeout)
        except ErrNoShell as exc:
            return ToolResult.error(str(exc))
        parts = [f"exit code {res.exit_code}"]
        if res.timed_out:
            parts = ["stopped: the command ran out of time (its processes were ended)"]
        if res.stdout:
            parts.append(f"--- stdout ---\n{res.stdout}")
        if res.stderr:
            parts.append(f"--- stderr ---\n{res.stderr}")
        if not res.stdout and not res.stderr:
            parts.append("(no output)")
        return ToolResult("\n".join(parts), is_error=res.timed_out)

    async def _streamed(self, runner: CommandStreamer, command: str, timeout: float | None) -> ToolResult:
        ring = _HeadTail()
        try:
            code = await runner.run_streaming(command, ring.add, timeout)
        except TimeoutError as exc:
            body = ring.text()
            return ToolResult.error(f"stopped: {exc} (its processes were ended)\n"
                                    + (f"--- output ---\n{body}" if body else "(no output)"))
        body = ring.text()
        return ToolResult(f"exit code {code}\n" + (f"--- output ---\n{body}" if body else "(no output)"))
