"""Helpers every command module shares: the app context, JSON output, handled errors."""

from __future__ import annotations

import json
import sys
from functools import cached_property
from typing import Any

import click

from ..app.context import AppContext


class HandledError(click.ClickException):
    """A failure the user can act on: one line on stderr, exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        from ..core.redact import redact

        click.echo(redact(f"hearthside: {self.format_message()}"), err=True)


class State:
    """Per-invocation state: global flags and the lazily built app context."""

    def __init__(self, safe_mode: bool = False) -> None:
        self.safe_mode = safe_mode

    @cached_property
    def app(self) -> AppContext:
        return AppContext(safe_mode=True if self.safe_mode else None)


def get_app(ctx: click.Context) -> AppContext:
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj.app


def require_persona(app: AppContext, persona: str) -> Any:
    """The persona's info, or a handled one-line failure naming what to do."""
    from ..app.personas import PersonaError

    try:
        return app.personas.get(persona)
    except PersonaError as exc:
        raise HandledError(str(exc)) from exc


def emit_json(doc: Any) -> None:
    """Print exactly one JSON document on stdout (secrets masked)."""
    from ..core.redact import redact_obj

    sys.stdout.write(json.dumps(redact_obj(doc), indent=2, ensure_ascii=False, sort_keys=False) + "\n")


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
