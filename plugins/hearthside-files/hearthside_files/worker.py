"""The child side of :mod:`.isolate`: a process that runs Read, Glob and Grep calls one at a time.

Why a process: a thread cannot be stopped. RE2 is linear in the text but not in the pattern
(``a[^c]{999}...c`` over a 1 MiB line runs for minutes inside one ``search`` call, out of reach
of any budget check), and a thread stuck there also kept the process from exiting. A process
can be killed at the deadline, and the parent does exactly that.

Protocol (one JSON document per line): the parent writes ``{"path": [...]}`` (its
``sys.path``, so the child imports the same packs), the child answers ``{"ready": true}``; then
each request ``{"tool", "args", "root", "seconds", "left", "entries", "bytes"}`` gets one reply
``{"content", "is_error", "ledger"}`` (``ledger``: the versions Read recorded, for the
parent's per-session ledger). End of input ends the child.

Belt and braces for a parent that died without killing it: Ctrl-C is the parent's to handle
(ignored here), and before each request the CPU-time limit is set to the call's budget plus a
margin, so the kernel ends a child left running a hopeless match (SIGXCPU).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any, BinaryIO

#: CPU seconds a call may use beyond its time budget before the kernel ends the child.
CPU_MARGIN = 5

#: What the parent runs with ``python -c`` (or the bundle's ``hearthside -c``).
BOOT = (
    "import json, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "sys.path[:0] = [p for p in json.loads(sys.stdin.buffer.readline())['path'] if p not in sys.path]\n"
    "from hearthside_files.worker import main\n"
    "main()\n"
)


def _limit_cpu(seconds: float) -> None:
    """Let this call use at most ``seconds`` + :data:`CPU_MARGIN` more CPU seconds."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + CPU_MARGIN
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):  # pragma: no cover - a limit we may not change
        pass


def serve(tools: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    """One call: run the named tool under a fresh budget and report its result."""
    from hearthside.plugin import ToolEnv

    from .budget import Budget
    from .tools import LEDGER, outcome

    tool = tools.get(str(req.get("tool")))
    if tool is None:
        return {"content": f"{req.get('tool')!r} is not a tool this worker runs", "is_error": True, "ledger": {}}
    env = ToolEnv(workspace=req["root"])
    # The call's clock started in the parent: ``left`` of its ``seconds`` remain.
    seconds = float(req["seconds"])
    budget = Budget(seconds=seconds, entries=int(req["entries"]), bytes=int(req["bytes"]),
                    started=time.monotonic() - (seconds - float(req.get("left", seconds))))
    result = outcome(tool, req.get("args") or {}, env, budget)
    ledger = env.services.get(LEDGER)
    return {"content": result.content, "is_error": result.is_error,
            "ledger": ledger if isinstance(ledger, dict) else {}}


def _send(out: BinaryIO, doc: dict[str, Any]) -> None:
    out.write(json.dumps(doc).encode("utf-8") + b"\n")
    out.flush()


def main() -> None:
    """Serve requests from stdin until it ends. Stray output of any library goes to stderr,
    so nothing but replies reaches the parent's pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        from .tools import make_tools

        tools = {t.name: t for t in make_tools() if t.read_only}
    except Exception as exc:  # noqa: BLE001 - the parent turns this into the model's error
        _send(out, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    _send(out, {"ready": True})
    for line in sys.stdin.buffer:
        try:
            req = json.loads(line)
            _limit_cpu(float(req.get("left", 10)))
            reply = serve(tools, req)
        except Exception as exc:  # noqa: BLE001 - one bad call must not end the worker
            reply = {"content": f"the file tool failed: {type(exc).__name__}: {exc}", "is_error": True,
                     "ledger": {}}
        _send(out, reply)
