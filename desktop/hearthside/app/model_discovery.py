"""Finding and connecting a model for the welcome window (and anything else that asks).

The rules live here, not in a window: which local servers to look for and how to read their
model lists, the short list of well-known OpenAI-compatible providers, what "Test" checks and
the sentence it reports, and how a choice is stored (settings for the endpoint and model name,
the OS keyring for the key, exactly as ``hearthside model use`` / ``set-key`` do today).
HTTP goes through :mod:`hearthside.adapters.model_probe`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..adapters import model_probe
from ..adapters.model_client import API_KEY_REF, ModelNotConfigured, resolve_config


@dataclass(frozen=True)
class LocalServer:
    """A local model server to look for: its label, OpenAI base URL, and whether it is Ollama."""

    label: str
    base_url: str
    ollama: bool = False
    get_models: str = ""  # how to get a model when it has none, for the person


#: Local servers offered with one click when they answer on 127.0.0.1.
LOCAL_SERVERS: tuple[LocalServer, ...] = (
    LocalServer("Ollama", "http://127.0.0.1:11434/v1", True,
                "Ollama has no models yet. Get one by running 'ollama pull llama3.2' "
                "(or pick a model in the Ollama app), then press Look again."),
    LocalServer("LM Studio", "http://127.0.0.1:1234/v1", False,
                "LM Studio has no model loaded. Download one in LM Studio's Discover tab, load it, "
                "then press Look again."),
)


@dataclass(frozen=True)
class Provider:
    """A well-known OpenAI-compatible service with its endpoint filled in."""

    label: str
    base_url: str
    example_model: str
    key_page: str


PROVIDERS: tuple[Provider, ...] = (
    Provider("OpenAI", "https://api.openai.com/v1", "gpt-4o-mini", "https://platform.openai.com/api-keys"),
    Provider("OpenRouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", "https://openrouter.ai/keys"),
    Provider("Groq", "https://api.groq.com/openai/v1", "llama-3.1-8b-instant", "https://console.groq.com/keys"),
    Provider("Mistral", "https://api.mistral.ai/v1", "mistral-small-latest", "https://console.mistral.ai/api-keys"),
    Provider("Together AI", "https://api.together.xyz/v1", "meta-llama/Llama-3.3-70B-Instruct-Turbo",
             "https://api.together.ai/settings/api-keys"),
)


@dataclass(frozen=True)
class FoundServer:
    """A local server that answered, with the models it has (maybe none) and what to do then."""

    label: str
    base_url: str
    models: tuple[str, ...]
    get_models: str = ""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of *Test*: ``ok`` and one sentence (success, or the exact reason)."""

    ok: bool
    message: str
    models: tuple[str, ...] = field(default_factory=tuple)


class ModelSetupError(Exception):
    """A model choice could not be stored; the message says why."""


def normalize_base_url(url: str) -> str:
    """The base URL as the client wants it: trimmed, no trailing slash, no pasted
    ``/chat/completions`` (the client adds that itself). Raises ``ModelSetupError``."""
    base = (url or "").strip().rstrip("/")
    if not base:
        raise ModelSetupError("The endpoint is empty; enter the server's address, e.g. https://api.openai.com/v1.")
    if not base.startswith(("http://", "https://")):
        raise ModelSetupError(f"{base!r} is not a web address; it starts with http:// or https://.")
    base = base.removesuffix("/chat/completions")
    if not urlsplit(base).hostname:
        raise ModelSetupError(f"{base!r} has no host name; it looks like https://api.example.com/v1.")
    return base


def is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_refusal(base_url: str, api_key: str) -> str:
    """Why a key must not be sent to this endpoint ("" when it may): only over https or to
    this computer, so a typo'd http:// address never carries the key in clear text."""
    if api_key and base_url.startswith("http://") and not is_loopback(base_url):
        return (f"{base_url} is plain http:// on another computer: the API key would travel "
                "unencrypted. Use the https:// address.")
    return ""


def _model_ids(doc: Any, ollama_tags: bool = False) -> tuple[str, ...]:
    if not isinstance(doc, dict):
        return ()
    items = doc.get("models" if ollama_tags else "data")
    if not isinstance(items, list):
        return ()
    key = "name" if ollama_tags else "id"
    return tuple(str(m[key]) for m in items if isinstance(m, dict) and m.get(key))


async def discover_local(servers: tuple[LocalServer, ...] | None = None,
                         timeout: float = 0.5) -> list[FoundServer]:
    """The local servers that answer, each with its models (Ollama's ``/api/tags`` first, then
    the OpenAI ``/models`` list every such server speaks)."""
    found: list[FoundServer] = []
    for srv in servers if servers is not None else LOCAL_SERVERS:
        models: tuple[str, ...] | None = None
        if srv.ollama:
            root = srv.base_url.removesuffix("/v1")
            r = await model_probe.get(f"{root}/api/tags", timeout=timeout)
            if r.status == 200 and isinstance(r.json(), dict):
                models = _model_ids(r.json(), ollama_tags=True)
        if models is None:
            r = await model_probe.get(f"{srv.base_url}/models", timeout=timeout)
            if r.status != 200 or not isinstance(r.json(), dict):
                continue
            models = _model_ids(r.json())
        found.append(FoundServer(srv.label, srv.base_url, models, srv.get_models))
    return found


async def check_model(base_url: str, model: str, api_key: str = "", timeout: float = 5.0) -> CheckResult:
    """Ask the endpoint for its model list with this key; say exactly what went wrong, if anything."""
    try:
        base = normalize_base_url(base_url)
    except ModelSetupError as exc:
        return CheckResult(False, str(exc))
    if not model.strip():
        return CheckResult(False, "The model name is empty; enter the name the service knows it by.")
    refusal = key_refusal(base, api_key)
    if refusal:
        return CheckResult(False, refusal)
    r = await model_probe.get(f"{base}/models", api_key, timeout)
    if r.error:
        return CheckResult(False, f"Could not reach {base}: {r.error}.")
    if r.status in (401, 403):
        detail = _error_detail(r.json())
        what = "rejected the API key" if r.status == 401 else "refused this key"
        return CheckResult(False, f"{base} {what} (HTTP {r.status}{': ' + detail if detail else ''}). "
                          "Check the key and paste it again.")
    if r.status == 404:
        return CheckResult(False, f"{base}/models does not exist (HTTP 404): this is not an "
                          "OpenAI-compatible endpoint, or the address misses a part such as /v1.")
    if r.status != 200:
        detail = _error_detail(r.json())
        return CheckResult(False, f"{base} answered HTTP {r.status}{': ' + detail if detail else ''}.")
    doc = r.json()
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return CheckResult(False, f"{base}/models did not send a model list; is this an OpenAI-compatible endpoint?")
    ids = _model_ids(doc)
    name = model.strip()
    if ids and name not in ids:
        some = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
        return CheckResult(False, f"{base} answered, but it has no model named {name!r}. It has: {some}.", ids)
    return CheckResult(True, f"Connected: {base} answers and has the model {name!r}.", ids)


def _error_detail(doc: Any) -> str:
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or "")[:200]
        if isinstance(err, str):
            return err[:200]
    return ""


def configure_model(app: Any, base_url: str, model: str, api_key: str | None) -> str:
    """Store the choice: endpoint and model name in settings, the key in the keyring.

    ``api_key=None`` keeps a stored key; ``""`` removes it (a local server gets no cloud key).
    Returns a sentence saying what is now in use. Raises :class:`ModelSetupError`.
    """
    base = normalize_base_url(base_url)
    name = model.strip()
    if not name:
        raise ModelSetupError("The model name is empty; enter the name the service knows it by.")
    refusal = key_refusal(base, api_key or "")
    if refusal:
        raise ModelSetupError(refusal)
    from ..core.secrets import SecretStoreError

    try:
        if api_key:
            app.secrets.set(API_KEY_REF, api_key)
        elif api_key == "" and app.secrets.get(API_KEY_REF) is not None:
            app.secrets.delete(API_KEY_REF)
    except SecretStoreError as exc:
        raise ModelSetupError(f"The API key could not be stored in the keyring: {exc}") from exc
    app.settings.set("model.base_url", base)
    app.settings.set("model.name", name)
    return f"Personas now talk to {name} at {base}."


def model_problem(app: Any) -> str:
    """Why no model can be used right now ("" when one is configured)."""
    try:
        resolve_config(app.settings, None)
    except ModelNotConfigured as exc:
        return str(exc).split(". ")[0] + "."
    return ""


def current_model(app: Any) -> str:
    """A sentence naming the model in use ("" when none is configured). The key is not read."""
    try:
        cfg = resolve_config(app.settings, None)
    except ModelNotConfigured:
        return ""
    return f"{cfg.model} at {cfg.base_url}"
