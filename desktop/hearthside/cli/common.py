"""Helpers every command module shares: the app context, JSON output, handled errors, secret entry."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import click

from ..app.context import AppContext


class HandledError(click.ClickException):
    """A failure the user can act on: one line on stderr, exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(safe_text(f"hearthside: {self.format_message()}"), err=True)


class State:
    """Per-invocation state: global flags and the lazily built app context."""

    def __init__(self, safe_mode: bool = False) -> None:
        self.safe_mode = safe_mode
        self.logging_started = False

    @cached_property
    def app(self) -> AppContext:
        return AppContext(safe_mode=True if self.safe_mode else None)


@contextmanager
def handled(*errors: type[Exception]) -> Iterator[None]:
    """Turn the listed exceptions into a :class:`HandledError` carrying their message.

    The original stays the ``__cause__``, so a caller can still tell which failure it was.
    """
    try:
        yield
    except errors as exc:
        raise HandledError(str(exc)) from exc


def get_app(ctx: click.Context) -> AppContext:
    """The app context of this invocation: one per run, shared by the group and its commands."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj.app


def require_persona(app: AppContext, persona: str) -> Any:
    """The persona's info, or a handled one-line failure naming what to do."""
    from ..app.personas import PersonaError

    with handled(PersonaError):
        return app.personas.get(persona)


def emit_json(doc: Any, *, shapes: bool = True) -> None:
    """Print exactly one JSON document on stdout (secrets masked; DEL and C1 characters, which
    ``json.dumps`` leaves raw, written as ``\\u`` escapes so no terminal sequence gets through).
    ``shapes=False`` masks only the keyring's secrets: for the user's own text shown as the
    model gets it (``persona compose``), where a mask would hide what really goes out."""
    from ..core.redact import redact_obj
    from ..core.termsafe import escape_json_controls

    text = json.dumps(redact_obj(doc, shapes), indent=2, ensure_ascii=False, sort_keys=False)
    sys.stdout.write(escape_json_controls(text) + "\n")


def safe_text(text: Any, shapes: bool = True) -> str:
    """What may be printed of ``text``: secrets masked (the log's redaction), then terminal
    control sequences and characters removed. The one filter every CLI line goes through.
    ``shapes=False`` masks only the keyring's secrets (see :func:`emit_json`)."""
    from ..core.redact import redact, redact_known
    from ..core.termsafe import strip_controls

    raw = "" if text is None else str(text)
    return strip_controls(redact(raw) if shapes else redact_known(raw))


def echo(text: Any = "", err: bool = False, nl: bool = True, *, shapes: bool = True) -> None:
    """Print one line (or block) of text through :func:`safe_text`. Every command prints with
    this, never with ``click.echo`` directly: model answers, memory values, persona and pack
    files are text Hearthside did not write, and may carry secrets or escape sequences."""
    click.echo(safe_text(text, shapes), err=err, nl=nl)


def read_secret(label: str) -> str:
    """One secret from a hidden prompt, or one line from stdin when it is not a terminal."""
    if sys.stdin is not None and sys.stdin.isatty():
        value = click.prompt(label, hide_input=True, prompt_suffix=": ", show_default=False)
    else:
        line = sys.stdin.readline() if sys.stdin is not None else ""
        value = line.removesuffix("\n")
        value = value.removesuffix("\r")
    if not value:
        raise HandledError(f"no value was given for {label}; nothing was stored")
    from ..core.redact import register_secret

    register_secret(value)
    return str(value)


def refuse_pasted_secret(pasted: tuple[str, ...]) -> None:
    """Refuse a secret typed as an extra argument without echoing it back (click's own "unexpected
    extra argument" error would print it)."""
    if pasted:
        raise click.UsageError(
            "secrets are never taken from the command line, where they stay in your shell "
            "history: run the command without the value and type it at the prompt (or pipe it "
            "on stdin)"
        )


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
