"""The shell: ``/bin/sh -c command`` in one bound folder, always inside the sandbox.

A :class:`LocalCommandRunner` is bound to one folder when it is made (there is no per-call
working directory, so a runner made for a fork only ever sees the fork). Every command:

* runs under bubblewrap with the policy the injected factory builds for the folder (the folder
  read-write, the soul, every persona folder and Hearthside's own folders read-only, no session
  bus, a private ``/tmp``). Where the sandbox cannot run — bwrap missing, namespaces refused,
  the policy turned off, the folder inside a protected place — the runner raises
  :class:`~hearthside.core.environment.ErrNoShell` with the plain reason: there is never a
  shell without the sandbox;
* gets ``/dev/null`` as stdin and a small environment built from an allowlist (no keyring bus,
  no API key, nothing the user exported): :func:`minimal_env`;
* starts in a session and process group of its own, recorded in :mod:`.procgroups` so it ends
  with Hearthside too; on its timeout or on cancellation the *whole* group gets SIGTERM, a short
  grace, then SIGKILL. The sandbox's pid namespace ends anything that left the group;
* has its processes capped (:mod:`.pidlimit`): a fork bomb stays small until the timeout;
* has stdout and stderr head-capped (the first ``output_cap`` bytes of each are kept, with a
  note saying how much was left out); reading goes on to the end so the child never blocks on
  a full pipe, but memory stays bounded.

Made for any folder (``LocalCommandRunner(root, policy_factory, ...)``), so a fork binds its
own runner to its own copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.environment import CommandResult, ErrNoShell
from ..core.sandbox import SandboxPolicy, writable_roots
from . import procgroups
from . import sandbox as _sandbox
from .pidlimit import DEFAULT_LIMIT, ProcessCap

#: Seconds a command may run when the call does not say (``shell.timeout`` in settings).
DEFAULT_TIMEOUT = 120.0
#: The longest a call may ask for (``shell.max_timeout``).
MAX_TIMEOUT = 600.0
#: Bytes kept of each of stdout and stderr.
OUTPUT_CAP = 30_000
#: Seconds between SIGTERM and SIGKILL for the command's group.
GRACE = 1.0

#: Variables a command may inherit (values as Hearthside has them). Everything else — the
#: session bus, the keyring's sockets, API keys, tokens — stays out.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC",
             "LC_TIME", "LC_COLLATE", "LC_MONETARY", "TZ", "USER", "LOGNAME")
#: Fixed values every command gets.
ENV_FIXED = {"TERM": "dumb", "SHELL": "/bin/sh", "TMPDIR": "/tmp", "PAGER": "cat", "GIT_PAGER": "cat",
             "NO_COLOR": "1"}
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

PolicyFactory = Callable[[str, Mapping[str, str]], SandboxPolicy]
Wrap = Callable[[Sequence[str], SandboxPolicy], "_sandbox.SandboxPlan"]


def minimal_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a shell command: the allowlist from ``source`` plus the fixed values."""
    src = os.environ if source is None else source
    env = {k: src[k] for k in ENV_ALLOW if k in src and "\x00" not in src[k]}
    env.setdefault("PATH", _DEFAULT_PATH)
    env.update(ENV_FIXED)
    return env


@dataclass
class _Capture:
    """The first ``cap`` bytes of a stream and how many there were in all."""

    cap: int
    data: bytearray
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        out = bytes(self.data).decode("utf-8", "replace")
        if self.total > len(self.data):
            out += (f"\n[output cut: the first {len(self.data):,} of {self.total:,} bytes are shown; "
                    f"{self.total - len(self.data):,} bytes were left out]")
        return out

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)


class LocalCommandRunner:
    """A :class:`~hearthside.core.environment.CommandRunner` and ``CommandStreamer`` over ``root``.

    ``policy_factory(folder, env)`` builds the sandbox policy of one command (the app passes
    :meth:`hearthside.app.sandbox.SandboxPolicies.for_folder`); ``wrap`` turns it into the argv
    (the sandbox adapter's :func:`~hearthside.adapters.sandbox.wrap`, injectable for tests).
    ``make_root`` creates the folder on first use (a per-persona default folder); otherwise a
    missing folder is refused."""

    def __init__(self, root: str | os.PathLike[str], policy_factory: PolicyFactory, *,
                 default_timeout: float = DEFAULT_TIMEOUT, max_timeout: float = MAX_TIMEOUT,
                 output_cap: int = OUTPUT_CAP, process_limit: int = DEFAULT_LIMIT,
                 make_root: bool = False, wrap: Wrap | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        # Resolved once, here: a folder given as a link to a persona folder must be checked,
        # and bound into the sandbox, as the persona folder it is.
        self.root = Path(root).expanduser().resolve()
        self._policy_factory = policy_factory
        self.default_timeout = default_timeout
        self.max_timeout = max(max_timeout, default_timeout)
        self.output_cap = output_cap
        self.process_limit = process_limit
        self._make_root = make_root
        self._wrap = wrap or _sandbox.wrap
        self._env = dict(env) if env is not None else None

    # -- the two seams ---------------------------------------------------------------------

    async def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run ``command``; its output head-capped. A timeout is a result with ``timed_out``
        (the group ended, what it printed until then kept); cancellation ends the group and
        re-raises; no sandbox is :class:`ErrNoShell`."""
        out, err = _Capture(self.output_cap, bytearray()), _Capture(self.output_cap, bytearray())
        code, timed_out = await self._execute(command, timeout, out.add, err.add)
        return CommandResult(out.text(), err.text(), code, out.truncated or err.truncated, timed_out)

    async def run_streaming(self, command: str, out: Callable[[bytes], None],
                            timeout: float | None = None) -> int:
        """Run ``command``, passing stdout and stderr, interleaved as they arrive, to ``out``.
        Returns the exit code; raises :class:`TimeoutError` (after ending the group) when the
        time limit ran out."""
        code, timed_out = await self._execute(command, timeout, out, out)
        if timed_out:
            raise TimeoutError(f"the command did not finish within its time limit of "
                               f"{self.timeout_for(timeout):g} s and was stopped")
        return code

    # -- the work --------------------------------------------------------------------------

    def timeout_for(self, asked: float | None) -> float:
        """The time limit of a call: the default, or what was asked, at most the maximum."""
        if asked is None:
            return self.default_timeout
        return min(max(float(asked), 0.001), self.max_timeout)

    def plan(self, command: str) -> _sandbox.SandboxPlan:
        """The sandboxed argv of ``command``, or :class:`ErrNoShell` saying why there is none."""
        if "\x00" in command:
            raise ValueError("the command contains a NUL character")
        if self._make_root:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ErrNoShell(f"The shell's folder {self.root} could not be made: "
                                 f"{exc.strerror or exc}.") from exc
        if not self.root.is_dir():
            raise ErrNoShell(f"The shell's folder {self.root} does not exist.")
        env = dict(self._env) if self._env is not None else minimal_env()
        policy = self._policy_factory(str(self.root), env)
        plan = self._wrap(["/bin/sh", "-c", command], policy)
        if not plan.sandboxed:
            raise ErrNoShell(f"There is no shell: it runs only inside the sandbox, and {plan.reason}.")
        if not writable_roots((str(self.root),), policy.protected, policy.grants):
            raise ErrNoShell(f"There is no shell in {self.root}: that folder is one Hearthside protects "
                             "(the soul, a persona folder or its own folders), so a command could not "
                             "write there; choose another folder for the files tools (files.workspace).")
        return plan

    async def _execute(self, command: str, timeout: float | None, on_out: Callable[[bytes], None],
                       on_err: Callable[[bytes], None]) -> tuple[int, bool]:
        plan = self.plan(command)
        limit = self.timeout_for(timeout)
        cap = ProcessCap(self.process_limit)
        spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *plan.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=plan.policy.child_env(), cwd=str(self.root),
            start_new_session=True, preexec_fn=cap.child_setup(), close_fds=True))
        try:
            # Shielded: a cancellation while the process is being started must still find the
            # process (it exists once fork returned) and end its group, and remove the cap.
            proc = await asyncio.shield(spawn)
        except OSError as exc:
            cap.finish()
            raise ErrNoShell(f"The shell could not be started: {exc.strerror or exc}.") from exc
        except BaseException:
            started = None
            with contextlib.suppress(BaseException):  # it did not start: nothing to end
                started = await spawn
            if started is not None:
                procgroups.track(started.pid)
                _kill_now(started.pid)
                await _end_group(started.pid)
            await asyncio.to_thread(cap.finish)
            raise
        pgid = proc.pid  # a new session: its leader's pid is the group's id
        procgroups.track(pgid)
        assert proc.stdout is not None and proc.stderr is not None
        tasks = [asyncio.create_task(_drain(proc.stdout, on_out)),
                 asyncio.create_task(_drain(proc.stderr, on_err)),
                 asyncio.create_task(proc.wait())]
        timed_out = False
        try:
            # asyncio.wait, not wait_for: at the time limit the readers must go on, to collect
            # what the command wrote before its group was ended.
            _, pending = await asyncio.wait(tasks, timeout=limit)
            if pending:
                timed_out = True
                await _end_group(pgid)
                # The group is gone; what it wrote is still in the pipes (a bounded wait: a
                # process that left the group died with the sandbox's pid namespace).
                _, pending = await asyncio.wait(tasks, timeout=10.0)
                if pending:
                    raise TimeoutError("the command's output did not end after its processes were ended")
            for t in tasks:
                t.result()  # a reader's own failure is raised here
        except BaseException:
            _kill_now(pgid)
            for t in tasks:
                t.cancel()
            try:
                await asyncio.shield(_end_group(pgid))
            finally:
                await asyncio.to_thread(cap.finish)
            raise
        await _end_group(pgid)  # background children of a finished command go too
        await asyncio.to_thread(cap.finish)
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        return code, timed_out


async def _drain(stream: asyncio.StreamReader, sink: Callable[[bytes], None]) -> None:
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink(chunk)


def _kill_now(pgid: int) -> None:
    procgroups.signal_group(pgid, signal.SIGKILL)


async def _end_group(pgid: int, grace: float = GRACE) -> None:
    """SIGTERM the group, wait up to ``grace`` for it to go, then SIGKILL; forget it once gone."""
    if procgroups.alive(pgid):
        procgroups.signal_group(pgid, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while procgroups.alive(pgid) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if procgroups.alive(pgid):
            procgroups.signal_group(pgid, signal.SIGKILL)
            while procgroups.alive(pgid) and loop.time() < deadline + 5.0:
                await asyncio.sleep(0.02)
    if not procgroups.alive(pgid):
        procgroups.forget(pgid)
