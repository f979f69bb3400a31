"""``hearthside model show|use|set-key|forget-key|find``: which model personas talk to."""

from __future__ import annotations

import click

from ..app.model import InsecureModelEndpoint, ModelNotConfigured, ModelSetupError
from ..core.secrets import SecretStoreError
from .common import (
    echo,
    emit_json,
    get_app,
    handled,
    json_option,
    read_secret,
    refuse_pasted_secret,
)


@click.group()
def model() -> None:
    """Choose the model (any OpenAI-compatible endpoint) and store its API key in the keyring."""


@model.command("show")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show the model in use and where each part comes from (the key is never shown)."""
    with handled(ModelNotConfigured, InsecureModelEndpoint, SecretStoreError):
        choice = get_app(ctx).model.current()
    if as_json:
        emit_json(choice.as_dict())
        return
    echo(f"{choice.model} at {choice.base_url} (from {choice.source}); API key: {choice.credential_source}")


@model.command("use")
@click.argument("base_url")
@click.argument("name")
@click.option("--allow-insecure-http", is_flag=True,
              help="Send the API key to this endpoint over plain http (only if you really mean it).")
@click.pass_context
def use_cmd(ctx: click.Context, base_url: str, name: str, allow_insecure_http: bool) -> None:
    """Use the model NAME at BASE_URL (for example http://127.0.0.1:11434/v1 llama3.2)."""
    with handled(ModelSetupError, InsecureModelEndpoint, SecretStoreError):
        done = get_app(ctx).model.configure(base_url, name, allow_insecure_http=allow_insecure_http)
    if done.note:
        echo(f"note: {done.note}", err=True)
    echo(f"Personas now talk to {done.model} at {done.base_url}.")


@model.command("set-key")
@click.argument("pasted", nargs=-1, metavar="")
@click.pass_context
def set_key_cmd(ctx: click.Context, pasted: tuple[str, ...]) -> None:
    """Store the API key in the keyring (typed at a hidden prompt, or one line on stdin)."""
    refuse_pasted_secret(pasted)
    value = read_secret("API key")  # never empty: it refuses an empty line itself
    with handled(SecretStoreError, ModelSetupError):
        get_app(ctx).model.set_key(value)
    echo("The API key is stored in the keyring.")


@model.command("forget-key")
@click.pass_context
def forget_key_cmd(ctx: click.Context) -> None:
    """Remove the API key from the keyring."""
    with handled(SecretStoreError):
        removed = get_app(ctx).model.forget_key()
    if not removed:
        echo("No API key is stored in the keyring; nothing to remove.")
        return
    echo("The API key was removed from the keyring.")


@model.command("find")
@json_option
@click.pass_context
def find_cmd(ctx: click.Context, as_json: bool) -> None:
    """Look for Ollama and LM Studio on this computer."""
    app = get_app(ctx)
    found = app.runtime.run(app.model.adiscover_local(), timeout=10)
    if as_json:
        emit_json(found)
        return
    if not found:
        echo("No local model server found (Ollama: port 11434, LM Studio: port 1234).")
    for f in found:
        echo(f"{f['label']} at {f['base_url']}: {', '.join(f['models']) or 'no models'}")
        if f["models"]:
            echo(f"  use it with: hearthside model use {f['base_url']} {f['models'][0]}")
