"""Running a child process under bubblewrap: does the sandbox work here, and the argv to use.

The one module that knows about ``bwrap``. Callers (the stdio MCP transport, the shell pack)
build a :class:`~hearthside.core.sandbox.SandboxPolicy` (the app does that:
:mod:`hearthside.app.sandbox`), call :func:`wrap` and start ``plan.argv`` with
``plan.policy.child_env()`` as the environment. The answer is a :class:`SandboxPlan`, never a
bare list, so no caller can start a process without seeing whether it is sandboxed and why not.

:func:`probe` runs bwrap once with the same namespaces a real launch uses (so "installed but
user namespaces are restricted" is found here, not at the first server) and caches the answer
per bwrap binary; ``probe(refresh=True)`` looks again (after the user installed it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.sandbox import BusEndpoints, SandboxPolicy, bus_endpoints, bwrap_argv

#: How long the probe may take (a working bwrap answers in a few milliseconds).
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class SandboxStatus:
    """Whether the sandbox can run on this machine; ``reason`` is one plain sentence when not."""

    ok: bool
    reason: str = ""
    bwrap: str = ""


@dataclass(frozen=True)
class SandboxPlan:
    """How to start one process: ``argv`` (bwrap's, or the bare command), whether it runs
    sandboxed, and — when not — ``reason`` (the probe's sentence, or the user's off switch)."""

    argv: list[str]
    sandboxed: bool
    reason: str
    policy: SandboxPolicy


_lock = threading.Lock()
_cache: dict[str, SandboxStatus] = {}


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def probe(refresh: bool = False) -> SandboxStatus:
    """Can bubblewrap create the sandbox here? Cached per ``bwrap`` found on ``PATH``."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, "there is no process sandbox on this system yet (it needs Linux and "
                                    "bubblewrap), so only the argument guard protects your files")
    found = shutil.which("bwrap")
    if found is None:
        return SandboxStatus(False, "bubblewrap is not installed (install the 'bubblewrap' package)")
    with _lock:
        if not refresh and found in _cache:
            return _cache[found]
    probe_policy = SandboxPolicy(network=False)
    argv = bwrap_argv(found, ["/bin/sh", "-c", "exit 0"], probe_policy, BusEndpoints(), None)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except subprocess.TimeoutExpired:
        status = SandboxStatus(False, f"bubblewrap did not answer within {PROBE_TIMEOUT:g} s", found)
    except OSError as exc:
        status = SandboxStatus(False, f"bubblewrap could not be run: {exc.strerror or exc}", found)
    else:
        if proc.returncode == 0:
            status = SandboxStatus(True, "", found)
        else:
            said = _first_line(proc.stderr) or _first_line(proc.stdout) or f"exit status {proc.returncode}"
            status = SandboxStatus(False, f"bubblewrap cannot create a namespace here: {said}", found)
    with _lock:
        _cache[found] = status
    return status


def session_bus() -> BusEndpoints:
    """Where this process's session bus is (the keyring answers there), from its address or,
    without one, the default ``$XDG_RUNTIME_DIR/bus``."""
    address = os.environ.get("DBUS_SESSION_BUS_ADDRESS", "")
    found = bus_endpoints(address)
    default = os.path.join(runtime_dir() or f"/run/user/{os.getuid()}", "bus")
    return BusEndpoints(tuple(dict.fromkeys((*found.paths, default))), found.needs_net_cut)


def runtime_dir() -> str | None:
    """The user's runtime folder (hidden inside the sandbox), if there is one."""
    given = os.environ.get("XDG_RUNTIME_DIR", "")
    if given and os.path.isabs(given) and os.path.isdir(given):  # a missing one: nothing to hide
        return given
    default = f"/run/user/{os.getuid()}"
    return default if os.path.isdir(default) else None


def wrap(argv: Sequence[str], policy: SandboxPolicy) -> SandboxPlan:
    """The plan for starting ``argv`` under ``policy``: sandboxed when the policy wants it and
    bubblewrap works, else the bare argv with the reason (the caller's argument guard applies)."""
    if not policy.enabled:
        return SandboxPlan(list(argv), False, policy.off_reason or "the sandbox is turned off for it", policy)
    status = probe()
    if not status.ok:
        return SandboxPlan(list(argv), False, status.reason, policy)
    return SandboxPlan(bwrap_argv(status.bwrap, argv, policy, session_bus(), runtime_dir()), True, "", policy)
