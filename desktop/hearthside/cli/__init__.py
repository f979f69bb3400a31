"""The ``hearthside`` command line (contract section 11).

Each command group lives in its own module and is imported only when used, so
``hearthside --version`` stays fast and a broken optional part cannot stop the others.
Exit codes: 0 success, 1 a handled failure (one line on stderr), 2 bad usage.

Plugin packs add commands of their own (plugin API 1.1, ``hearthside_commands``). Packs are
loaded only when a command that is not built in is asked for, or when ``--help`` lists the
commands: ``hearthside --version`` and every built-in command never pay for loading them.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from .. import __version__

#: command name -> "module:attribute", imported on first use.
LAZY_COMMANDS: dict[str, str] = {
    "agents": "hearthside.cli.agents:agents",
    "doctor": "hearthside.cli.doctor:doctor",
    "persona": "hearthside.cli.persona:persona",
    "soul": "hearthside.cli.soul:soul",
    "plugins": "hearthside.cli.plugins:plugins",
    "mcp": "hearthside.cli.mcp:mcp",
    "memory": "hearthside.cli.memory:memory",
    "heartbeat": "hearthside.cli.heartbeat:heartbeat",
    "chat": "hearthside.cli.chat:chat",
    "chats": "hearthside.cli.chats:chats",
    "model": "hearthside.cli.model:model",
    "settings": "hearthside.cli.settings:settings",
    "forks": "hearthside.cli.forks:forks",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on demand, packs' commands included."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from .packcommands import pack_command_names

        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS) | set(pack_command_names(ctx)))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            mod_name, attr = LAZY_COMMANDS[cmd_name].split(":")
            try:
                return getattr(importlib.import_module(mod_name), attr)  # type: ignore[no-any-return]
            except ModuleNotFoundError as exc:
                if exc.name and exc.name.startswith(mod_name):
                    return None
                raise
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None:
            from .packcommands import pack_command

            cmd = pack_command(ctx, cmd_name)
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a settings change that was refused (``settings.toml`` cannot be
        used, or its lock file is busy or not a regular file) is one line and exit code 1,
        whichever command asked for it: many commands change settings, and every change takes
        ``settings.toml.lock``."""
        from ..app.settings import SettingsError
        from .common import HandledError

        try:
            return super().invoke(ctx)
        except SettingsError as exc:
            raise HandledError(str(exc)) from exc


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="hearthside", message="%(prog)s %(version)s")
@click.option("--safe-mode", is_flag=True, help="Load no third-party plugin packs.")
@click.option("--headless", is_flag=True, help="Run watchers and heartbeats without any window.")
@click.pass_context
def cli(ctx: click.Context, safe_mode: bool, headless: bool) -> None:
    """Hearthside keeps your AI personas: folders of Markdown files you write by hand.

    Run without a command to start the tray.
    """
    from .common import State

    if not isinstance(ctx.obj, State):  # made already when a pack command was looked up
        ctx.obj = State(safe_mode=safe_mode)
    if not ctx.obj.logging_started:
        ctx.obj.logging_started = True
        _start_logging(ctx.obj)
    if ctx.invoked_subcommand is None:
        if headless:
            from ..app.headless import run_headless

            sys.exit(run_headless(ctx.obj.app))
        from ..ui.app import run_app

        sys.exit(run_app(ctx.obj.app))


def _start_logging(state: object) -> None:
    """Log to the state dir through the redacting handlers; stderr only when that fails.

    A read-only state dir must not stop any command, so the file handler is best effort.
    """
    from ..app.logs import setup_logging

    app = state.app  # type: ignore[attr-defined]
    try:
        setup_logging(app)
    except OSError as exc:
        import logging

        from ..app.logs import add_redaction

        handler = add_redaction(logging.StreamHandler(sys.stderr))
        handler.setLevel(logging.WARNING)
        logging.getLogger().addHandler(handler)
        logging.getLogger(__name__).warning(
            "Could not open the log file in %s (%s); logging to the terminal only.",
            app.paths.log_dir, exc.strerror or exc,
        )


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point. Exits even when a pack left a thread running."""
    try:
        cli.main(args=argv, prog_name="hearthside")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    exit_now(code)


def exit_now(code: Any) -> None:
    """End the process with ``code`` after a clean shutdown.

    Python waits for every non-daemon thread before it exits, so one started by a pack (at
    import, say) would keep every command — and the tray — from ever ending. When such threads
    remain, the exit handlers run and the streams are flushed here, then ``os._exit`` ends the
    process without waiting for them; otherwise the ordinary ``SystemExit`` path is taken.

    Which threads count is decided by identity, never by name: a pack names its threads as it
    likes (``ThreadPoolExecutor-0_0``, ``asyncio_0``, ``hearthside-files_0``), and a pack's task
    may run on an executor of its own or of Hearthside's. So every live non-daemon thread but
    the main one keeps the ordinary exit from being taken; Hearthside's own work has finished or
    been cancelled by now (the tray's quit and each command wait for what they started), and
    what it writes is written atomically, so a worker ended here loses nothing half-written.
    """
    import atexit
    import logging
    import os
    import threading

    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    main_thread = threading.main_thread()
    lingering = [t.name for t in threading.enumerate()
                 if t is not main_thread and t is not threading.current_thread()
                 and not t.daemon and t.is_alive()]
    if not lingering:
        raise SystemExit(code)
    logging.getLogger(__name__).info("exiting without waiting for threads left running: %s", ", ".join(lingering))
    try:
        atexit._run_exitfuncs()
        logging.shutdown()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream must not stop the exit
                pass
        os._exit(code)
