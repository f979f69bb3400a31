"""Where a tool runs: the workspace, an optional shell bound to it, and forks of both (seed 004).

Three seams from the seed meet here, kept as protocols and frozen values so ``core`` decides
*what* happens and the adapters decide *how*:

* **Environment** bundles what a tool needs from one namespace: an :class:`EnvironmentRef`
  (a kind and an opaque id, never a path), a :class:`Workspace` (the one mandatory capability)
  and an optional bound :class:`CommandRunner`. It is immutable; a fork builds a new child
  Environment and never touches the parent's.
* **CommandRunner** / **CommandStreamer** run a shell command in the runner's own bound folder
  (there is no per-call working directory, so a fork's shell always sees the fork). A non-zero
  exit is a result, not an error; :class:`ErrNoShell` says there is no shell at all.
* **EnvironmentForker** / **EnvironmentMerger** make a child namespace the child may write
  without touching the parent, and bring its changes back as a reviewed diff that is applied
  in the parent's trust posture, serialized, and never forced: a file the parent changed
  meanwhile is a conflict that leaves the fork in place.

A workspace is addressed by *logical names* (relative, ``/``-separated, no ``..``), never by
paths, so the merge logic below is pure and the same for a copy, an overlay or anything else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class ErrNoShell(RuntimeError):
    """This namespace has no shell (no runner bound, or the runner can no longer serve one)."""


class MergeConflict(RuntimeError):
    """The parent changed a file the fork also changed; nothing was applied, the fork stays."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        shown = ", ".join(self.names[:10]) + (f" and {len(self.names) - 10} more" if len(self.names) > 10 else "")
        super().__init__(f"Not applied: {shown} changed in the workspace since the fork was made; "
                         "the fork is kept so nothing is lost.")


def valid_name(name: str) -> bool:
    """A logical workspace name: relative, ``/``-separated, no empty, ``.`` or ``..`` segment, no NUL or backslash."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


@dataclass(frozen=True)
class EnvironmentRef:
    """Names a namespace: its backend ``kind`` ("workspace", "fork-copy", ...) and an opaque ``id``."""

    kind: str
    id: str


@dataclass(frozen=True)
class FileVersion:
    """An adapter-minted content version (a hash). Compared for equality only; there is no wildcard."""

    token: str


@runtime_checkable
class Workspace(Protocol):
    """A rooted set of files addressed by logical name; where the root is stays the adapter's business."""

    def versions(self) -> Mapping[str, FileVersion]:
        """Every regular file's logical name and version (symlinks and special files are left out)."""
        ...

    def read(self, name: str) -> bytes: ...

    def write(self, name: str, data: bytes) -> None: ...

    def remove(self, name: str) -> None: ...


@dataclass(frozen=True)
class CommandResult:
    """What a command printed (already head-capped by the runner) and how it exited."""

    stdout: str
    stderr: str
    exit_code: int
    truncated: bool = False
    timed_out: bool = False


@runtime_checkable
class CommandRunner(Protocol):
    """Runs ``/bin/sh -c command`` in the runner's bound folder (no per-call working directory).

    ``timeout`` None means the runner's default. Cancellation and a missing shell
    (:class:`ErrNoShell`) are errors; a timeout is a result with ``timed_out`` and what the
    command printed until then; either way the process group is ended. A non-zero exit is a
    :class:`CommandResult`, not an error."""

    async def run(self, command: str, timeout: float | None = None) -> CommandResult: ...


@runtime_checkable
class CommandStreamer(Protocol):
    """Optional runner capability: output goes, interleaved, to ``out`` as it arrives.

    The caller owns bounding (a tail ring); the runner passes everything on. Returns the exit
    code; a timeout raises :class:`TimeoutError` after the process group was ended."""

    async def run_streaming(self, command: str, out: Callable[[bytes], None],
                            timeout: float | None = None) -> int: ...


@dataclass(frozen=True)
class Environment:
    """The capability bundle of one namespace. Build it with :func:`new_environment`."""

    ref: EnvironmentRef
    workspace: Workspace
    runner: CommandRunner | None = None

    def __post_init__(self) -> None:
        if self.workspace is None:
            raise ValueError("an Environment needs a workspace")

    def command_runner(self) -> CommandRunner:
        """The bound runner, or :class:`ErrNoShell` when this namespace has none."""
        if self.runner is None:
            raise ErrNoShell("There is no shell in this workspace.")
        return self.runner


def new_environment(ref: EnvironmentRef, workspace: Workspace, runner: CommandRunner | None = None) -> Environment:
    """The checked constructor for trust boundaries (raises ValueError on a missing workspace)."""
    return Environment(ref, workspace, runner)


@dataclass(frozen=True)
class Fork:
    """A forked child: its Environment, the cleanup that removes its storage, and an optional
    advisory when the fork is usable but not exactly the parent (never load-bearing for safety)."""

    child: Environment
    cleanup: Callable[[], None]
    base: Mapping[str, FileVersion]
    advisory: str = ""


class EnvironmentForker(Protocol):
    """Makes an isolated child of ``base``: writes through the child never reach the base.

    ``label`` is a short human tag (the task), not unique and not load-bearing. Copying can be
    slow: callers run this off the event loop."""

    def fork(self, base: Environment, label: str) -> Fork: ...


@dataclass(frozen=True)
class Diff:
    """A fork's changes against the versions it started from, by logical name."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted((*self.added, *self.changed, *self.removed)))


def diff_versions(base: Mapping[str, FileVersion], now: Mapping[str, FileVersion]) -> Diff:
    """What changed from ``base`` to ``now`` (both name → version maps)."""
    added = tuple(sorted(n for n in now if n not in base))
    removed = tuple(sorted(n for n in base if n not in now))
    changed = tuple(sorted(n for n in now if n in base and now[n] != base[n]))
    return Diff(added, changed, removed)


def conflicts(diff: Diff, base: Mapping[str, FileVersion], parent_now: Mapping[str, FileVersion]) -> list[str]:
    """Files the fork touched that the parent no longer has as the fork saw them.

    A file the fork added conflicts when the parent has since gained a file of that name; a
    changed or removed file conflicts when the parent's version differs from the base version."""
    out = [n for n in diff.added if n in parent_now]
    out += [n for n in (*diff.changed, *diff.removed) if parent_now.get(n) != base.get(n)]
    return sorted(out)


@dataclass(frozen=True)
class MergeResult:
    """What an apply did."""

    diff: Diff
    applied: tuple[str, ...] = field(default_factory=tuple)


class EnvironmentMerger(Protocol):
    """Applies a fork's diff into the parent's workspace, in the parent's trust posture.

    Never forces: on a conflict it raises :class:`MergeConflict` and applies nothing."""

    def merge(self, fork: Fork, parent: Environment) -> MergeResult: ...


class WorkspaceMerger:
    """The merger over two :class:`Workspace` values: checks every touched file first, then writes.

    ``allow`` is the parent-side write check (the write guard): a name it refuses is an error
    before anything is written, so the write guard applies to an apply exactly as to a tool."""

    def __init__(self, allow: Callable[[Environment, str], str | None] | None = None) -> None:
        self._allow = allow

    def merge(self, fork: Fork, parent: Environment) -> MergeResult:
        child_now = fork.child.workspace.versions()
        diff = diff_versions(fork.base, child_now)
        if diff.empty:
            return MergeResult(diff)
        clash = conflicts(diff, fork.base, parent.workspace.versions())
        if clash:
            raise MergeConflict(clash)
        if self._allow is not None:
            for name in diff.names():
                refusal = self._allow(parent, name)
                if refusal:
                    raise PermissionError(refusal)
        data = {n: fork.child.workspace.read(n) for n in (*diff.added, *diff.changed)}
        for n in (*diff.added, *diff.changed):
            parent.workspace.write(n, data[n])
        for n in diff.removed:
            parent.workspace.remove(n)
        return MergeResult(diff, diff.names())


class SerializingMerger:
    """Wraps a merger so applies never interleave their writes into a parent (one lock per process)."""

    _lock = threading.Lock()

    def __init__(self, inner: EnvironmentMerger) -> None:
        self._inner = inner

    def merge(self, fork: Fork, parent: Environment) -> MergeResult:
        with SerializingMerger._lock:
            return self._inner.merge(fork, parent)


@runtime_checkable
class MutatesParent(Protocol):
    """Optional tool capability: this *call* will change the parent workspace (a fork that is
    merged back), so the dispatcher runs it alone even when the tool is otherwise read-only."""

    def mutates_parent(self, args: Mapping[str, Any]) -> bool: ...
