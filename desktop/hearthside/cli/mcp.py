"""``hearthside mcp``: list, add, import, remove and test MCP servers; enter their secrets.

Secrets are read from a hidden prompt (or one line per secret from stdin when it is not a
terminal), never from the command line, where they would end up in shell history and in every
other user's ``ps`` output. After entry a secret is only ever shown masked.
"""

from __future__ import annotations

from typing import Any

import click

from ..core.mcpconfig import DEFAULT_TIMEOUT, McpConfigError, ServerConfig, check_header
from ..core.redact import MASK, is_secret_name, mask
from ..core.secrets import SecretStoreError
from .common import (
    HandledError,
    echo,
    emit_json,
    get_app,
    handled,
    json_option,
    read_secret,
    refuse_pasted_secret,
)

#: How long ``tools`` / ``test`` wait for a server beyond its own timeouts.
_GRACE = 15.0


def _pairs(items: tuple[str, ...], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise click.UsageError(f"{what} {item.split('=')[0]!r} must look like NAME=VALUE")
        if is_secret_name(k):
            flag = "--secret-header" if what == "--header" else "--secret-env"
            raise click.UsageError(
                f"{k} looks like a secret, and secrets are never taken from the command line: "
                f"use {flag} {k} and type the value at the prompt (or pipe it on stdin)"
            )
        out[k] = v
    return out


def _echo(message: str, err: bool = False) -> None:
    """Every line this command prints goes through the redactor and the control-character filter."""
    echo(message, err=err)


def _tidy(app: Any) -> str:
    """The explicit migration step before a command reads servers: secrets typed into mcp.json
    move into the keyring. A file that does not parse is left as it is (see ``start-over``).
    Returns a warning or ""."""
    with handled(McpConfigError):
        return str(app.mcp.migrate_secrets().warning)


@click.group()
def mcp() -> None:
    """Connect MCP servers (tools for your personas); their secrets live in the OS keyring."""


@mcp.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show configured and pack-contributed servers and which secrets are set."""
    app = get_app(ctx)
    svc = app.mcp
    warning = _tidy(app)
    entries = svc.entries()
    docs = []
    for e in entries:
        c = e.config
        d: dict[str, Any] = {"name": c.name, "transport": c.transport, "enabled": c.enabled,
                             "timeout": c.timeout, "source": c.source, "max_result_chars": c.max_result_chars}
        if c.transport == "http":
            d["url"] = c.url
            d["headers"] = {k: (MASK if k in c.secret_refs() else v) for k, v in c.headers.items()}
            if c.url_secrets:
                d["url_secrets"] = {k: MASK for k in c.url_secrets}
            d["allow_insecure_http"] = c.allow_insecure_http
        else:
            d["command"] = c.command
            d["args"] = [a if isinstance(a, str) else MASK for a in c.args]
            d["env"] = {k: (MASK if k in c.secret_refs() else v) for k, v in c.env.items()}
        d["auth"] = svc.auth_state(c)
        d["secrets"] = [{"key": s.key, "kind": s.kind, "set": s.is_set, "description": s.description}
                        for s in e.secrets]
        if e.description:
            d["description"] = e.description
        docs.append(d)
    warning = warning or svc.load_error
    if warning:  # on stderr, so --json stays the same one list whatever happened
        _echo(f"warning: {warning}", err=True)
    for note in (w for e in entries for w in e.config.warnings):
        _echo(f"warning: {note}", err=True)
    if as_json:
        emit_json(docs)
        return
    if not docs:
        _echo("No MCP servers yet. Add one with 'hearthside mcp add' or 'hearthside mcp import FILE'.")
        return
    for d in docs:
        where = d.get("url") or " ".join([d["command"], *d["args"]])
        state = "enabled" if d["enabled"] else "disabled"
        _echo(f"{d['name']}  [{d['transport']}, {state}, {d['source']}]  {where}")
        for s in d["secrets"]:
            # Not "KEY: state": the redactor masks whatever follows a secret-shaped name and a colon.
            st = {True: "is set", False: "is NOT SET", None: "unknown (keyring unavailable)"}[s["set"]]
            desc = f" - {s['description']}" if s["description"] else ""
            _echo(f"    {s['kind']} secret {s['key']} {st}{desc}")


def _connect_one(app: Any, name: str) -> tuple[Any, list[Any]]:
    _tidy(app)  # a secret typed into mcp.json must be in the keyring before connecting
    with handled(McpConfigError):
        cfg = app.mcp.get(name)
    return app.runtime.run(app.mcp.test(name), timeout=cfg.timeout * 3 + _GRACE)  # type: ignore[no-any-return]


def _not_connected(name: str, status: Any) -> HandledError:
    verb = "failed" if status.state == "failed" else f"is {status.state}"
    return HandledError(f"MCP server {name} {verb}: {status.told}")


@mcp.command("tools")
@click.argument("name")
@json_option
@click.pass_context
def tools_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Connect to server NAME and list its tools."""
    app = get_app(ctx)
    status, tools = _connect_one(app, name)
    if status.state != "connected":
        raise _not_connected(name, status)
    docs = [{"name": t.spec.name, "tool": t.remote_name, "description": t.spec.description,
             "read_only": t.read_only, "schema": dict(t.spec.schema)} for t in tools]
    if as_json:
        emit_json(docs)
        return
    renamed = dict(status.renamed_tools)
    for d in docs:
        ro = " (read-only)" if d["read_only"] else ""
        full = f" [full name: {d['tool']}]" if d["name"] in renamed else ""
        # " - ", not ":", after the name: a tool called get_token would have its text masked.
        _echo(f"{d['name']}{full}{ro} - {d['description'].splitlines()[0] if d['description'] else ''}")
    _report_names(status)


def _report_names(status: Any) -> None:
    """Say, in text, which tools were renamed or left out and why (never only in --json)."""
    if status.renamed_tools:
        _echo(f"{len(status.renamed_tools)} tool name(s) were too long (or used characters a model "
              f"cannot take) for mcp__{status.name}__<tool>, so they have a short name; the "
              "full name is still what is called:")
        for short, full in status.renamed_tools:
            _echo(f"  {short}  <-  {full}")
    for tool, why in status.skipped_tools:
        _echo(f"left out tool {tool!r}: {why}")


@mcp.command("test")
@click.argument("name")
@json_option
@click.pass_context
def test_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Connect to server NAME once and report whether it works."""
    app = get_app(ctx)
    status, tools = _connect_one(app, name)
    if as_json:
        emit_json(status.as_dict())
    elif status.state == "connected":
        _echo(f"{name} is connected, {len(tools)} tool(s)")
        _report_names(status)
        if not app.mcp.get(name).enabled:  # the test worked, but personas will not see it
            _echo(f"note: {name} is disabled, so personas do not use it; "
                  f"switch it on with: hearthside mcp enable {name}")
    if status.state != "connected":
        raise _not_connected(name, status)


@mcp.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--url", help="Streamable HTTP endpoint (https://..., or http:// on this computer).")
@click.option("--command", "command", help="Program to start for a stdio server.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--header", "headers", multiple=True, help="NAME=VALUE, a header that is not secret.")
@click.option("--secret-header", "secret_headers", multiple=True,
              help="A header whose value is secret; you are asked for it (never on the command line).")
@click.option("--env", "envs", multiple=True, help="NAME=VALUE for a stdio server (not secret).")
@click.option("--secret-env", "secret_envs", multiple=True, help="An env variable whose value is secret; asked for.")
@click.option("--cwd", help="Working folder for a stdio server.")
@click.option("--timeout", type=float, default=DEFAULT_TIMEOUT, show_default=True,
              help="Seconds for each connection phase.")
@click.option("--disabled", is_flag=True, help="Add it switched off.")
@click.option("--allow-insecure-http", is_flag=True,
              help="Allow sending this server's secrets over plain http to another computer.")
@click.pass_context
def add_cmd(ctx: click.Context, name: str, url: str | None, command: str | None, args: tuple[str, ...],
            headers: tuple[str, ...], secret_headers: tuple[str, ...], envs: tuple[str, ...],
            secret_envs: tuple[str, ...], cwd: str | None, timeout: float, disabled: bool,
            allow_insecure_http: bool) -> None:
    """Add server NAME: --url URL for HTTP, or --command PROGRAM [ARGS...] for stdio.

    Put program arguments after '--', e.g. hearthside mcp add files --command npx -- -y server.
    """
    app = get_app(ctx)
    if bool(url) == bool(command):
        raise click.UsageError("give exactly one of --url (HTTP server) or --command (stdio server)")
    if url and (envs or secret_envs or args or cwd):
        raise click.UsageError("--env, --secret-env, --cwd and program arguments are for --command servers")
    if command and (headers or secret_headers):
        raise click.UsageError("--header and --secret-header are for --url servers")
    try:
        if url:
            cfg = ServerConfig(name, "http", url=url, headers=_pairs(headers, "--header"), enabled=not disabled,
                               timeout=timeout, allow_insecure_http=allow_insecure_http)
            secret_keys = secret_headers
        else:
            cfg = ServerConfig(name, "stdio", command=command or "", args=tuple(args), env=_pairs(envs, "--env"),
                               cwd=cwd, enabled=not disabled, timeout=timeout)
            secret_keys = secret_envs
        # The app checks everything that can be checked before the secrets are asked for, and
        # the rest (the values) when adding; this command only parses and asks.
        app.mcp.check_add(cfg, secret_keys)
        secrets = {k: read_secret(f"{name} {k}") for k in secret_keys}
        added = app.mcp.add(cfg, secrets)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    except SecretStoreError as exc:
        raise HandledError(f"{name} was added, but its secret could not be stored: {exc}") from None
    _echo(f"added MCP server {name}")
    for k, v in secrets.items():
        _echo(f"  {k}: {mask(v)} (in the OS keyring)")
    for k in added.secret_refs():
        if k not in secrets:  # found in the URL or the arguments and moved out of them
            _echo(f"  {k}: {MASK} (moved into the OS keyring; it is not kept in mcp.json)")


@mcp.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, file: str, as_json: bool) -> None:
    """Import servers from a Claude Desktop, Cursor or VS Code MCP file (the file is not changed)."""
    app = get_app(ctx)
    with handled(McpConfigError):
        rep = app.mcp.import_file(file)
    if as_json:
        emit_json({"added": list(rep.added), "secrets_moved": rep.secrets_moved,
                   "moved": [{"server": s, "key": k} for s, k in rep.moved],
                   "missing": [{"server": s, "key": k} for s, k in rep.missing],
                   "notes": list(rep.notes), "secret_error": rep.secret_error})
    else:
        _echo(f"imported {len(rep.added)} server(s): {', '.join(rep.added) or 'none'}")
        if rep.secrets_moved:
            _echo(f"moved {rep.secrets_moved} secret(s) into the OS keyring")
        for s, k in rep.moved:
            _echo(f"  moved into the keyring: server {s}, {k}")
        for s, k in rep.missing:
            _echo(f"  server {s} still needs its secret {k}; enter it with: hearthside mcp set-secret {s} {k}")
        for n in rep.notes:
            _echo(f"note: {n}")
    if rep.secret_error:
        raise HandledError(f"the servers were added, but their secrets were not stored: {rep.secret_error}")


@mcp.command("remove")
@click.argument("name")
@click.pass_context
def remove_cmd(ctx: click.Context, name: str) -> None:
    """Remove server NAME and delete its secrets from the keyring."""
    app = get_app(ctx)
    try:
        app.mcp.remove(name)
    except McpConfigError as exc:
        raise HandledError(str(exc)) from None
    except SecretStoreError as exc:
        raise HandledError(
            f"{name} was removed, but its secrets could not be deleted from the keyring: {exc}"
        ) from None
    _echo(f"removed MCP server {name}")


@mcp.command("set-secret")
@click.argument("name")
@click.argument("header")
@click.argument("pasted", nargs=-1, metavar="")
@click.pass_context
def set_secret_cmd(ctx: click.Context, name: str, header: str, pasted: tuple[str, ...]) -> None:
    """Enter (or replace) the secret HEADER (or env variable) of server NAME."""
    refuse_pasted_secret(pasted)
    app = get_app(ctx)
    with handled(McpConfigError, SecretStoreError):
        cfg = app.mcp.get(name)
        if cfg.transport == "http" and not header.startswith(("?", "/", "#")):
            check_header(header, "")
        value = read_secret(f"{name} {header}")
        app.mcp.set_secret(name, header, value)
    _echo(f"{name} {header}: {mask(value)} (stored in the OS keyring)")


@mcp.command("forget-orphans")
@click.pass_context
def forget_orphans_cmd(ctx: click.Context) -> None:
    """Delete saved secrets whose server is no longer in mcp.json (they are never sent)."""
    app = get_app(ctx)
    with handled(McpConfigError, SecretStoreError):
        orphans = app.mcp.orphaned_secrets()
        gone = app.mcp.delete_orphaned_secrets()
    for o in orphans:
        _echo(f"deleted {o.ref}")
    _echo(f"{gone} orphaned secret(s) deleted from the OS keyring")


@mcp.command("start-over")
@click.pass_context
def start_over_cmd(ctx: click.Context) -> None:
    """Keep an mcp.json that does not parse as a backup and begin again with no servers."""
    app = get_app(ctx)
    with handled(McpConfigError):
        backup = app.mcp.start_over()
    _echo(f"kept the broken mcp.json as {backup}; mcp.json now lists no servers "
          "(add them again with 'hearthside mcp add' or 'hearthside mcp import FILE')")


@mcp.command("enable")
@click.argument("name")
@click.pass_context
def enable_cmd(ctx: click.Context, name: str) -> None:
    """Switch server NAME on."""
    _switch(ctx, name, True)


@mcp.command("disable")
@click.argument("name")
@click.pass_context
def disable_cmd(ctx: click.Context, name: str) -> None:
    """Switch server NAME off (it stays configured)."""
    _switch(ctx, name, False)


def _switch(ctx: click.Context, name: str, on: bool) -> None:
    with handled(McpConfigError):
        get_app(ctx).mcp.set_enabled(name, on)
    _echo(f"MCP server {name} is now {'enabled' if on else 'disabled'}")


def _register_more() -> None:
    """Subcommands kept in their own modules (bundles, the registry)."""
    from .mcp_bundle import install_cmd
    from .mcp_oauth import login_cmd, logout_cmd
    from .mcp_registry import registry_group

    mcp.add_command(install_cmd)
    mcp.add_command(registry_group)
    mcp.add_command(login_cmd)
    mcp.add_command(logout_cmd)


_register_more()
