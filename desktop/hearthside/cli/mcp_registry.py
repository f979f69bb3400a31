"""``hearthside mcp registry search TEXT`` and ``mcp registry add NAME``: servers from the MCP
Registry (see :mod:`hearthside.app.mcp_registry`).

Nothing from the registry runs before the user has seen the command it implies and confirmed
(``--yes`` for scripts); secret environment variables or headers are asked without echo and go
to the keyring.
"""

from __future__ import annotations

import sys

import click

from ..app.mcp_registry import Registry, registry_url
from ..core.mcpconfig import McpConfigError
from ..core.redact import MASK
from ..core.secrets import SecretStoreError
from .common import HandledError, echo, emit_json, get_app, json_option, read_secret


def _registry(ctx: click.Context) -> Registry:
    app = get_app(ctx)
    try:
        return Registry(registry_url(app.settings))
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None


@click.group("registry")
def registry_group() -> None:
    """Find servers in the MCP Registry and add them (registry_url under [mcp] in settings.toml)."""


@registry_group.command("search")
@click.argument("text")
@click.option("--limit", type=click.IntRange(1, 100), default=30, show_default=True, help="Servers per page.")
@click.option("--cursor", default="", help="The page to start from (printed after each page).")
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, text: str, limit: int, cursor: str, as_json: bool) -> None:
    """List registry servers matching TEXT."""
    reg = _registry(ctx)
    try:
        found, next_cursor = reg.search(text, limit, cursor)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    if as_json:
        emit_json({"servers": [s.as_dict() for s in found], "next_cursor": next_cursor})
        return
    if not found:
        echo(f"No server in the registry matches {text!r}.")
    for s in found:
        echo(f"{s.name} {s.version} [{s.kind}] - {s.description}")
    if next_cursor:
        echo(f"more: hearthside mcp registry search {text!r} --cursor {next_cursor}")


@registry_group.command("add")
@click.argument("name")
@click.option("--version", "version", default="", help="The server's version (default: the latest).")
@click.option("--name", "local", default="", help="The name to add it under (default: the last part of NAME).")
@click.option("--yes", is_flag=True, help="Do not ask before adding (for scripts).")
@click.pass_context
def add_cmd(ctx: click.Context, name: str, version: str, local: str, yes: bool) -> None:
    """Add registry server NAME: a remote one as streamable HTTP, a package as its npx/uvx command."""
    app = get_app(ctx)
    reg = _registry(ctx)
    try:
        plan = reg.plan(reg.get(name, version), local)
        app.mcp.check_add(plan.config, [v.name for v in plan.secrets])
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    echo(f"{plan.server.name} {plan.server.version}: {plan.server.description}")
    echo(f"  would be added as {plan.config.name}, running: {plan.shown()}")
    for v in plan.secrets:
        echo(f"  secret {v.name} (asked, kept in the OS keyring){' - ' + v.description if v.description else ''}")
    for v in plan.plain:
        echo(f"  setting {v.name}{' - ' + v.description if v.description else ''}")
    for n in plan.notes:
        echo(f"note: {n}", err=True)
    if not yes and not click.confirm("Add it?", default=False):
        raise HandledError("nothing was added")
    tty = sys.stdin is not None and sys.stdin.isatty()
    plain: dict[str, str] = {}
    for v in plan.plain:
        if tty:
            plain[v.name] = click.prompt(v.name, default=v.default, show_default=bool(v.default))
        elif v.default:
            plain[v.name] = v.default
    secrets = {v.name: read_secret(f"{plan.config.name} {v.name}") for v in plan.secrets if v.required or tty}
    try:
        added = reg.add(app.mcp, plan, plain, secrets)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    except SecretStoreError as exc:
        raise HandledError(f"the secrets could not be stored in the keyring ({exc}); nothing was added") from None
    echo(f"added MCP server {added.name}")
    for k in secrets:
        echo(f"  {k}: {MASK} (in the OS keyring)")
