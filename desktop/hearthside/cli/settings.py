"""``hearthside settings start-over``: the way out of a ``settings.toml`` Hearthside cannot use.

Hearthside never moves or rewrites a settings file people edit by hand on its own: while it
does not parse, defaults are used and every change is refused with the line and column of the
mistake. Fixing the file is one way out; this command is the other (the Settings window has the
same as its *Start over* button).
"""

from __future__ import annotations

import click

from ..app.settings import SettingsError
from .common import echo, get_app, handled


@click.group()
def settings() -> None:
    """The settings file (settings.toml): start over when it cannot be used."""


@settings.command("start-over")
@click.pass_context
def start_over_cmd(ctx: click.Context) -> None:
    """Keep a settings.toml that cannot be used as a backup and begin again with defaults."""
    app = get_app(ctx)
    with handled(SettingsError):
        backup = app.settings.start_over()
    echo(f"kept the old settings file as {backup}; Hearthside now uses default settings")
