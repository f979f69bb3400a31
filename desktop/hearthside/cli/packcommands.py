"""Plugin packs' commands on the ``hearthside`` command line (plugin API 1.1).

Loading every pack costs imports and hook calls, so it happens only here, when the command line
is asked for a command it does not have built in, or lists its commands for ``--help``. A pack
that failed (or is disabled, or safe mode is on) has no commands; asking for one of them says
which pack would have provided it and why it is not there, in one line, instead of click's bare
"No such command". A pack's command prints through the same filter as Hearthside's own commands
(known secrets and secret shapes masked, terminal control sequences removed).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import click

from .common import HandledError, State, safe_text

log = logging.getLogger(__name__)

#: Set on a pack's command once its ``invoke`` is wrapped (a pack may hand back the same object
#: to a later load in the same process).
_WRAPPED = "_hearthside_pack_command"


class MissingPackCommand(HandledError):
    """A command a pack would have provided, had it loaded: bad usage, exit code 2."""

    exit_code = 2


def _state(ctx: click.Context) -> State:
    """The invocation's state, made here when the group's callback has not run yet (click
    resolves the subcommand first), with its logging started so a failed pack's warning goes to
    the redacted log and not raw to the terminal."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State(safe_mode=bool(root.params.get("safe_mode")))
    state = root.obj
    if not state.logging_started:
        from . import _start_logging

        state.logging_started = True
        _start_logging(state)
    return state


def _host(ctx: click.Context) -> Any:
    """The loaded pack host, or None when loading packs failed as a whole (said in the log):
    the built-in commands keep working whatever the packs do."""
    try:
        return _state(ctx).app.plugins.load()
    except Exception as exc:  # noqa: BLE001 - a broken pack set must never break the CLI
        log.warning("plugin packs could not be loaded for the command line: %s", exc)
        return None


def pack_command_names(ctx: click.Context) -> list[str]:
    """Names of the healthy packs' commands (loads the packs)."""
    host = _host(ctx)
    return sorted(host.commands) if host is not None else []


def pack_command(ctx: click.Context, name: str) -> click.Command | None:
    """The pack command ``name`` (loads the packs); None when no pack has it. A pack that would
    have provided it but did not load raises :class:`MissingPackCommand` with the reason."""
    host = _host(ctx)
    if host is None:
        return None
    hit = host.commands.get(name)
    if hit is not None:
        command, pack = hit
        _wrap(command, pack)
        return command  # type: ignore[no-any-return]
    report = host.pack_of_missing_command(name)
    if report is None or ctx.resilient_parsing:
        return None
    state = "failed to load" if report.status == "failed" else "is not loaded"
    raise MissingPackCommand(f"the pack {report.name!r} that provides `{name}` {state}: {report.error}; "
                             "see 'hearthside plugins list'")


class _FilteredStream:
    """A text stream that passes whole lines through :func:`safe_text` to the real one.

    Whole lines, so a secret written in two pieces is still seen whole; what is left of a line
    goes out on ``flush`` (a prompt). ``write(bytes)`` raises TypeError like any text stream,
    which is how click tells a text stream from a binary one."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self._pending = ""

    @property
    def encoding(self) -> str | None:
        return getattr(self._target, "encoding", None)

    @property
    def errors(self) -> str | None:
        return getattr(self._target, "errors", None)

    def isatty(self) -> bool:
        return bool(getattr(self._target, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self._target.fileno())

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending += text
        if "\n" in self._pending:
            done, _, self._pending = self._pending.rpartition("\n")
            self._target.write(safe_text(done + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._target.write(safe_text(self._pending))
            self._pending = ""
        self._target.flush()


@contextlib.contextmanager
def _filtered_output() -> Iterator[None]:
    import sys

    out, err = _FilteredStream(sys.stdout), _FilteredStream(sys.stderr)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # type: ignore[type-var]
            yield
    finally:
        out.flush()
        err.flush()


def _wrap(command: click.Command, pack: str) -> None:
    """Run ``command`` with its output filtered; an exception it did not mean (not a click
    error, an abort or an exit) becomes one line naming the pack, not a traceback."""
    if getattr(command, _WRAPPED, False):
        return
    original = command.invoke

    def invoke(ctx: click.Context) -> Any:
        try:
            with _filtered_output():
                return original(ctx)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit,
                SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - a pack's bug is reported, not a crash
            from ..pluginhost.host import _describe

            what = " ".join(n for n in (command.name, ctx.invoked_subcommand) if n)
            log.info("the %s pack's command %s failed", pack, what, exc_info=True)  # the log file only
            raise HandledError(f"the {pack} pack's command `{what}` failed: {_describe(exc)}") from exc

    command.invoke = invoke  # type: ignore[method-assign]
    setattr(command, _WRAPPED, True)
