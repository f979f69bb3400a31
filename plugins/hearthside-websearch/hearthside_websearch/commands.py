"""``hearthside websearch ...``: set-key, clear-key and status (plugin API 1.1 commands)."""

from __future__ import annotations

import json
import sys

import click
from hearthside.plugin import PackSecretError, pack_secrets

from .providers import PACK, PROVIDERS


@click.group("websearch", help="Web search through Brave Search or Tavily (the websearch pack).")
def websearch() -> None:
    pass


@websearch.command("set-key", help="Store the API key of PROVIDER in the keyring (asked without echo).")
@click.argument("provider", type=click.Choice(sorted(PROVIDERS)))
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the key from standard input.")
def set_key(provider: str, from_stdin: bool) -> None:
    if from_stdin:
        key = sys.stdin.readline().strip()
    else:
        key = click.prompt(f"{PROVIDERS[provider].label} API key", hide_input=True, default="",
                           show_default=False).strip()
    if not key:
        raise click.ClickException("No key was given; nothing was stored.")
    if any(c.isspace() or not c.isprintable() for c in key) or len(key) > 512:
        raise click.ClickException("That does not look like an API key (it has spaces or is very long); "
                                   "nothing was stored.")
    try:
        pack_secrets(PACK).set(provider, key)
    except PackSecretError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Stored the {PROVIDERS[provider].label} API key in the keyring. Use it with "
               f'search.provider = "{provider}" in settings.toml.')


@websearch.command("clear-key", help="Remove the API key of PROVIDER from the keyring.")
@click.argument("provider", type=click.Choice(sorted(PROVIDERS)))
def clear_key(provider: str) -> None:
    try:
        pack_secrets(PACK).delete(provider)
    except PackSecretError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Removed the {PROVIDERS[provider].label} API key.")


def key_status() -> dict[str, str]:
    """Per provider: "set", "not set", or why the keyring cannot say. Never the key."""
    out = {}
    for name in sorted(PROVIDERS):
        try:
            out[name] = "set" if pack_secrets(PACK).get(name) else "not set"
        except PackSecretError as exc:
            out[name] = f"unknown ({exc})"
    return out


@websearch.command("status", help="Which providers have a key (never shows the key).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def status(as_json: bool) -> None:
    keys = key_status()
    if as_json:
        click.echo(json.dumps([{"provider": n, "key": s} for n, s in keys.items()], indent=2))
        return
    for name, state in keys.items():
        click.echo(f"{name}: key {state}")
