"""``hearthside mcp install FILE.mcpb``: install an MCP Bundle as a server (see :mod:`hearthside.app.mcpb`).

The bundle's ``user_config`` settings are asked for on the terminal, sensitive ones without echo
(or, when stdin is not a terminal, one line each from stdin, like every secret of ``hearthside
mcp``); ``--set KEY=VALUE`` gives a setting that is not sensitive for scripts. A sensitive value
is never taken from the command line.
"""

from __future__ import annotations

import sys

import click

from ..core.mcpconfig import McpConfigError
from ..core.redact import MASK
from ..core.secrets import SecretStoreError
from .common import HandledError, echo, get_app, read_secret


def _given(items: tuple[str, ...], sensitive: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise click.UsageError(f"--set {item.split('=')[0]!r} must look like KEY=VALUE")
        if k in sensitive:
            raise click.UsageError(
                f"{k} is a sensitive setting, and secrets are never taken from the command line: leave "
                "out --set for it and type the value at the prompt (or pipe it on stdin)")
        out[k] = v
    return out


@click.command("install")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--name", help="The server's name (default: the bundle's own name).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A setting of the bundle that is not sensitive (asked for when left out).")
@click.pass_context
def install_cmd(ctx: click.Context, file: str, name: str | None, settings: tuple[str, ...]) -> None:
    """Install the MCP Bundle FILE (.mcpb) as a server; its settings are asked for."""
    app = get_app(ctx)
    installer = app.mcp.bundles
    try:
        app.mcp.migrate_secrets()
        bundle, runtime, notes = installer.inspect(file, name)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    for n in notes:
        echo(f"note: {n}", err=True)
    given = _given(settings, {f.key for f in bundle.fields if f.sensitive})
    tty = sys.stdin is not None and sys.stdin.isatty()
    for f in bundle.fields:
        if f.key in given:
            continue
        label = f"{f.title} ({f.key})"
        if f.sensitive:
            if f.required or tty:
                given[f.key] = read_secret(label)
        elif tty:
            given[f.key] = click.prompt(label, default=f.default_text(), show_default=bool(f.default_text()))
        elif f.required and not f.default_text():
            raise HandledError(f"the setting {f.key!r} ({f.title}) is required: give it with --set {f.key}=VALUE; "
                               "nothing was installed")
    try:
        added, more = installer.install(bundle, runtime, given)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    except SecretStoreError as exc:
        raise HandledError(f"the bundle's sensitive settings could not be stored in the keyring ({exc}); "
                           "nothing was installed") from None
    for n in more:
        echo(f"note: {n}", err=True)
    title = f" ({bundle.display_name} {bundle.version})".replace(" )", ")") if bundle.display_name else ""
    echo(f"installed MCP server {added.name}{title} from {bundle.path.name}")
    echo(f"  runs: {added.command}")
    for key in added.secret_refs():
        echo(f"  {key}: {MASK} (in the OS keyring)")
    echo(f"check it with: hearthside mcp test {added.name}")
