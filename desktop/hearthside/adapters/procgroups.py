"""The process groups Hearthside started (stdio MCP servers, shell commands), ended for certain.

The MCP SDK starts each stdio server in a session of its own (``start_new_session``), so a
Ctrl-C in the terminal or the end of the desktop session never reaches it, and it ends the
server's group only when its transport is closed cleanly. A server stuck in a call, a close
cut short at quit, or an exit by Ctrl-C skips that, and the server — with any child it
spawned — would outlive Hearthside. So every group is recorded here when it starts and ended
here (SIGTERM to the whole group, SIGKILL after a short grace) when its connection closes and,
whatever happened before, when the process exits (an ``atexit`` handler, which also runs on
Ctrl-C and on the CLI's ``exit_now``).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time

log = logging.getLogger(__name__)

#: Seconds a group gets to end after SIGTERM before SIGKILL.
GRACE = 2.0

_lock = threading.Lock()
_groups: set[int] = set()
_registered = False


def track(pgid: int) -> None:
    """Remember a process group this process started (its leader's pid)."""
    global _registered
    with _lock:
        _groups.add(pgid)
        if not _registered:
            atexit.register(end_all)
            _registered = True


def tracked() -> set[int]:
    with _lock:
        return set(_groups)


def alive(pgid: int) -> bool:
    """Whether any process of the group is left (only ESRCH proves it gone)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a tracked group (a group not tracked here is never signalled)."""
    if pgid in tracked():
        _signal(pgid, sig)


def forget(pgid: int) -> None:
    """Stop tracking a group that is gone (ended by its owner, who waited for it)."""
    with _lock:
        _groups.discard(pgid)


def terminate(pgid: int) -> None:
    """SIGTERM the group without waiting (it stays tracked until it is gone)."""
    if pgid in tracked():
        _signal(pgid, signal.SIGTERM)


def end_groups(pgids: set[int], grace: float = GRACE) -> None:
    """SIGTERM every group, wait up to ``grace`` seconds for them to go, SIGKILL what is left,
    and forget them. Blocking (at most ``grace`` plus a moment); safe from any thread."""
    mine = pgids & tracked()
    live = {g for g in mine if alive(g)}
    for g in live:
        _signal(g, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        live = {g for g in live if alive(g)}
        if live:
            time.sleep(0.02)
    for g in live:
        log.warning("process group %d did not end after SIGTERM; killing it", g)
        _signal(g, signal.SIGKILL)
    with _lock:
        _groups.difference_update(mine)


def end_all(grace: float = GRACE) -> None:
    """End every group still recorded (at exit, and after the MCP sessions are closed)."""
    end_groups(tracked(), grace)
