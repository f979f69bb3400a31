"""The pack's settings form in the Plugins window: a provider's API key, straight to the keyring."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hearthside.plugin import FormField, PackSecretError, SettingsForm, pack_secrets

from .commands import key_status
from .providers import PACK, PROVIDERS


def _submit(values: Mapping[str, str]) -> str:
    provider = values.get("provider", "")
    key = (values.get("key") or "").strip()
    if provider not in PROVIDERS:
        return f"Choose one of: {', '.join(sorted(PROVIDERS))}."
    if not key or any(c.isspace() for c in key) or len(key) > 512:
        return "Paste the API key (one word, no spaces); nothing was stored."
    try:
        pack_secrets(PACK).set(provider, key)
    except PackSecretError as exc:
        return str(exc).rstrip(".") + "."
    return ""


def _items() -> Sequence[tuple[str, str]]:
    return [(n, f"{PROVIDERS[n].label}: key {s}") for n, s in key_status().items() if s != "not set"]


def _remove(provider: str) -> str:
    if provider not in PROVIDERS:
        return f"{provider[:40]} is not a provider of this pack."
    try:
        pack_secrets(PACK).delete(provider)
    except PackSecretError as exc:
        return str(exc).rstrip(".") + "."
    return ""


def forms() -> list[SettingsForm]:
    return [SettingsForm(
        title="Web search keys",
        help="An API key for Brave Search or Tavily, kept in the system keyring. Choose the "
             'provider with search.provider in settings.toml ("brave", "tavily" or "searxng").',
        fields=(FormField("provider", "Provider", "choice", choices=tuple(sorted(PROVIDERS)), required=True),
                FormField("key", "API key", "password", required=True)),
        submit=_submit, submit_label="Save key", items=_items, remove=_remove,
    )]
