"""``hearthside mcp login`` and ``mcp logout``: OAuth sign-in to a remote MCP server.

``login`` prints the authorization URL on a line of its own (and opens the browser unless
``--no-browser``), then waits for the browser to come back to Hearthside's loopback listener.
The tokens go to the keyring only; nothing of them is printed.
"""

from __future__ import annotations

import webbrowser

import click

from ..core.errors import ServiceError
from ..core.mcpconfig import SIGN_IN_TIMEOUT, McpConfigError
from ..core.secrets import SecretStoreError
from .common import HandledError, echo, get_app, handled

#: How long ``login`` waits beyond the listener's own time limit.
_GRACE = 60.0


@click.command("login")
@click.argument("name")
@click.option("--no-browser", is_flag=True, help="Only print the address to open; do not start a browser.")
@click.pass_context
def login_cmd(ctx: click.Context, name: str, no_browser: bool) -> None:
    """Sign in to remote server NAME with OAuth (its tokens go to the OS keyring)."""
    app = get_app(ctx)
    with handled(McpConfigError):
        app.mcp.get(name)

    def show(url: str) -> None:
        echo("Open this address in a browser to sign in:", err=True)
        # The address alone on stdout, unredacted (it holds no secret: the state and the PKCE
        # challenge are useless without the verifier, which never leaves this process).
        click.echo(url)
        if not no_browser:
            try:
                webbrowser.open(url)
            except webbrowser.Error:
                echo("(no browser could be started; open the address yourself)", err=True)
        echo(f"Waiting for the browser to come back (up to {SIGN_IN_TIMEOUT / 60:g} minutes)...", err=True)

    try:
        app.runtime.run(app.mcp.login(name, show), timeout=SIGN_IN_TIMEOUT + _GRACE)
    except (ServiceError, SecretStoreError) as exc:
        raise HandledError(f"could not sign in to {name}: {exc}") from None
    echo(f"signed in to {name}")


@click.command("logout")
@click.argument("name")
@click.pass_context
def logout_cmd(ctx: click.Context, name: str) -> None:
    """Sign out of server NAME: its tokens are revoked where the server offers it and deleted."""
    app = get_app(ctx)
    try:
        revoked = app.runtime.run(app.mcp.logout(name), timeout=60.0)
    except (ServiceError, SecretStoreError) as exc:
        raise HandledError(f"could not sign out of {name}: {exc}") from None
    echo(f"signed out of {name}" + (" (the server was asked to revoke the tokens)" if revoked else ""))
