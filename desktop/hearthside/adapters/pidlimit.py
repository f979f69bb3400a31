"""A hard cap on how many processes one shell command may have at once.

A fork bomb (``f(){ f|f& };f``) doubles its processes every few milliseconds. The runner's
timeout and the sandbox's pid namespace end it *afterwards*; this keeps it small *meanwhile*,
so the machine stays usable until then. Two backstops, the first that works here:

* a **pids cgroup** of the command's own (``pids.max``): the kernel refuses the fork past the
  limit whoever the user is, root included. It needs a writable pids controller (cgroup v1's
  ``pids`` hierarchy, or a cgroup v2 folder delegated to this user with ``pids`` enabled);
* **RLIMIT_NPROC**: the user's tasks may grow by at most the limit. It is per *user*, not
  per command, and the kernel ignores it for root, so it is set only for other users, counted
  from what the user runs now (threads included, as the kernel counts). Inside bubblewrap's user
  namespace the count starts again, so there it allows somewhat more: still a bound.

Where neither works, the pid namespace and the group kill at the timeout are what is left
(:func:`describe` says which backstop is in force, for ``doctor`` and the notes).

The child joins the cgroup itself, before it runs bwrap (writing ``0`` to ``cgroup.procs``
through a descriptor the parent opened): there is no moment when it could fork outside.
"""

from __future__ import annotations

import itertools
import logging
import os
import resource
import signal
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: Processes one command may have at once (bwrap's two included). A build with ``make -j``
#: uses a few dozen; a fork bomb stops here.
DEFAULT_LIMIT = 256

_PREFIX = "hearthside-shell-"
_counter = itertools.count(1)


def _own_cgroup_dirs() -> list[Path]:
    """Candidate folders of this process's pids cgroup (v1 hierarchy first, then v2)."""
    out: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        rel = path.lstrip("/")
        if "pids" in controllers.split(","):
            out.append(Path("/sys/fs/cgroup/pids") / rel)
        elif controllers == "":
            out += [Path("/sys/fs/cgroup") / rel, Path("/sys/fs/cgroup/unified") / rel]
    return out


class PidsCgroup:
    """One command's pids cgroup: made before the start, removed after the end."""

    def __init__(self, folder: Path, procs_fd: int) -> None:
        self.folder = folder
        self._procs_fd = procs_fd

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        """A fresh cgroup limited to ``limit`` processes, or None where this cannot be done."""
        for base in _own_cgroup_dirs():
            if not (base / "cgroup.procs").exists():
                continue
            _prune(base)
            folder = base / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
            try:
                folder.mkdir()
            except OSError:
                continue
            try:
                (folder / "pids.max").write_text(f"{limit}\n")
                fd = os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                _rmdir(folder)
                continue
            return cls(folder, fd)
        return None

    def join(self) -> None:
        """Move the calling process in (runs in the child, between fork and exec)."""
        os.write(self._procs_fd, b"0\n")

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> None:
        """SIGKILL whatever is still in it (a process that left the group with ``setsid``)."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> bool:
        """Remove the cgroup; False while a process is still in it."""
        try:
            os.close(self._procs_fd)
        except OSError:
            pass
        self._procs_fd = -1
        return _rmdir(self.folder)


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _prune(base: Path) -> None:
    """Remove empty cgroups an earlier Hearthside left (it was killed before it could)."""
    try:
        entries = [p for p in base.iterdir() if p.name.startswith(_PREFIX)]
    except OSError:
        return
    for p in entries:
        owner = p.name[len(_PREFIX):].split("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists():
            _rmdir(p)


def _user_tasks(uid: int) -> int:
    """The user's tasks now: RLIMIT_NPROC counts threads, so a browser's hundreds count too
    (counting processes only would set a limit the user is already over)."""
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += len(os.listdir(os.path.join(entry.path, "task")))
            except OSError:
                continue
    return n


class ProcessCap:
    """The backstop for one command: :meth:`child_setup` runs in the child before exec,
    :meth:`finish` after the command ended."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.cgroup = PidsCgroup.create(limit)
        self._nproc: int | None = None
        if self.cgroup is None and os.getuid() != 0:
            self._nproc = _user_tasks(os.getuid()) + limit

    @property
    def kind(self) -> str:
        """``cgroup``, ``rlimit`` or ``none``."""
        return "cgroup" if self.cgroup is not None else "rlimit" if self._nproc is not None else "none"

    def child_setup(self) -> Callable[[], None] | None:
        """The function to run between fork and exec (None when there is nothing to do)."""
        cgroup, nproc = self.cgroup, self._nproc
        if cgroup is None and nproc is None:
            return None

        def setup() -> None:
            if cgroup is not None:
                cgroup.join()
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        return setup

    def finish(self) -> None:
        """Kill any straggler of the cgroup and remove it (a no-op for the rlimit)."""
        if self.cgroup is None:
            return
        for _ in range(50):
            self.cgroup.kill_all()
            if self.cgroup.close():
                return
            import time

            time.sleep(0.02)
        log.warning("the shell command's cgroup %s still has processes; it is left in place", self.cgroup.folder)


def describe() -> str:
    """Which backstop a command gets on this machine, in a few words."""
    cap = ProcessCap()
    try:
        return {"cgroup": f"a pids cgroup (at most {cap.limit} processes)",
                "rlimit": f"RLIMIT_NPROC (at most {cap.limit} more processes)",
                "none": "none beyond the pid namespace and the time limit"}[cap.kind]
    finally:
        cap.finish()
