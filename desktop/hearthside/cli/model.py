"""``hearthside model show|use|set-key|forget-key|find``: which model personas talk to."""

from __future__ import annotations

import os

import click

from ..adapters.model_client import API_KEY_REF, ModelNotConfigured, probe_local, resolve_config
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


@click.group()
def model() -> None:
    """Choose the model (any OpenAI-compatible endpoint) and store its API key in the keyring."""


@model.command("show")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show the model in use and where each part comes from (the key is never shown)."""
    app = get_app(ctx)
    env_key = bool(os.environ.get("HEARTHSIDE_MODEL_API_KEY"))
    with handled(ModelNotConfigured, SecretStoreError):
        cfg = resolve_config(app.settings, None if env_key else app.secrets)
    doc = {
        "base_url": cfg.base_url, "model": cfg.model, "api_key": bool(cfg.api_key),
        "source": "environment" if os.environ.get("HEARTHSIDE_MODEL_BASE_URL") else "settings",
        "credential_source": "environment" if env_key else ("keyring" if cfg.api_key else "none"),
    }
    if as_json:
        emit_json(doc)
        return
    echo(f"{cfg.model} at {cfg.base_url} (from {doc['source']}); API key: {doc['credential_source']}")


@model.command("use")
@click.argument("base_url")
@click.argument("name")
@click.pass_context
def use_cmd(ctx: click.Context, base_url: str, name: str) -> None:
    """Use the model NAME at BASE_URL (for example http://127.0.0.1:11434/v1 llama3.2)."""
    if not base_url.startswith(("http://", "https://")):
        raise HandledError(f"{base_url!r} is not a web address; it starts with http:// or https://.")
    if not name.strip():
        raise HandledError("the model name is empty; give the name the server knows it by, e.g. llama3.2.")
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        # The full endpoint pasted from a service's docs: the client adds that part itself.
        base = base.removesuffix("/chat/completions")
        echo(f"note: using the base URL {base} (Hearthside adds /chat/completions itself).", err=True)
    app = get_app(ctx)
    app.settings.set("model.base_url", base)
    app.settings.set("model.name", name.strip())
    echo(f"Personas now talk to {name.strip()} at {base}.")


@model.command("set-key")
@click.argument("pasted", nargs=-1, metavar="")
@click.pass_context
def set_key_cmd(ctx: click.Context, pasted: tuple[str, ...]) -> None:
    """Store the API key in the keyring (typed at a hidden prompt, or one line on stdin)."""
    refuse_pasted_secret(pasted)
    value = read_secret("API key")  # never empty: it refuses an empty line itself
    with handled(SecretStoreError):
        get_app(ctx).secrets.set(API_KEY_REF, value)
    echo("The API key is stored in the keyring.")


@model.command("forget-key")
@click.pass_context
def forget_key_cmd(ctx: click.Context) -> None:
    """Remove the API key from the keyring."""
    secrets = get_app(ctx).secrets
    with handled(SecretStoreError):
        if secrets.get(API_KEY_REF) is None:
            echo("No API key is stored in the keyring; nothing to remove.")
            return
        secrets.delete(API_KEY_REF)
    echo("The API key was removed from the keyring.")


@model.command("find")
@json_option
@click.pass_context
def find_cmd(ctx: click.Context, as_json: bool) -> None:
    """Look for Ollama and LM Studio on this computer."""
    found = get_app(ctx).runtime.run(probe_local(), timeout=10)
    if as_json:
        emit_json(found)
        return
    if not found:
        echo("No local model server found (Ollama: port 11434, LM Studio: port 1234).")
    for f in found:
        echo(f"{f['label']} at {f['base_url']}: {', '.join(f['models']) or 'no models'}")
        if f["models"]:
            echo(f"  use it with: hearthside model use {f['base_url']} {f['models'][0]}")
