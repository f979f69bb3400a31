"""Finding and connecting a model for the welcome window (and anything else that asks).

What the welcome window's model step needs on top of the model service (:mod:`.model`, which
owns the policy: setting names, the keyring entry, the rule for where a key may travel): which
local servers to look for and how to read their model lists (Ollama's ``/api/tags`` first),
what to tell a person whose server has no model, the short list of well-known OpenAI-compatible
providers, and *Test* for an endpoint that is not stored yet, with the exact reason it fails.
Storing a choice is the model service's ``configure``. HTTP goes through the model adapter.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..adapters.model_client import probe_get
from ..core.agent import ModelError
from .model import (
    LOCAL_CANDIDATES,
    InsecureModelEndpoint,
    ModelNotConfigured,
    ModelService,
    check_key_transport,
    normalize_base_url,
)


class ModelDeps(Protocol):
    """What these helpers use of the app: its model service (``AppContext.model``)."""

    @property
    def model(self) -> ModelService: ...


@dataclass(frozen=True)
class LocalServer:
    """A local model server to look for: its label, OpenAI base URL, and whether it is Ollama."""

    label: str
    base_url: str
    ollama: bool = False
    get_models: str = ""  # how to get a model when it has none, for the person


#: Local servers offered with one click when they answer on 127.0.0.1.
_GET_MODELS = {
    "Ollama": "Ollama has no models yet. Get one by running 'ollama pull llama3.2' "
              "(or pick a model in the Ollama app), then press Look again.",
    "LM Studio": "LM Studio has no model loaded. Download one in LM Studio's Discover tab, load it, "
                 "then press Look again.",
}
LOCAL_SERVERS: tuple[LocalServer, ...] = tuple(
    LocalServer(label, base, label == "Ollama", _GET_MODELS.get(label, "")) for label, base in LOCAL_CANDIDATES)


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


def _normalized(url: str) -> str:
    """The base URL as the client wants it (see :func:`.model.normalize_base_url`)."""
    return normalize_base_url((url or "").strip())[0]


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
            r = await probe_get(f"{root}/api/tags", timeout=timeout)
            if r.status == 200 and isinstance(r.json(), dict):
                models = _model_ids(r.json(), ollama_tags=True)
        if models is None:
            r = await probe_get(f"{srv.base_url}/models", timeout=timeout)
            if r.status != 200 or not isinstance(r.json(), dict):
                continue
            models = _model_ids(r.json())
        found.append(FoundServer(srv.label, srv.base_url, models, srv.get_models))
    return found


async def check_model(base_url: str, model: str, api_key: str = "", timeout: float = 5.0) -> CheckResult:
    """Ask the endpoint for its model list with this key; say exactly what went wrong, if anything."""
    if not (base_url or "").strip():
        return CheckResult(False, "The endpoint is empty; enter the server's address, e.g. https://api.openai.com/v1.")
    try:
        base = _normalized(base_url)
        check_key_transport(base, bool(api_key))  # no connection where the key may not go
    except InsecureModelEndpoint:
        return CheckResult(False, insecure_sentence(base_url))
    except ModelError as exc:
        return CheckResult(False, _sentence(str(exc)))
    if not model.strip():
        return CheckResult(False, "The model name is empty; enter the name the service knows it by.")
    r = await probe_get(f"{base}/models", api_key, timeout)
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


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def insecure_sentence(base_url: str) -> str:
    """The transport rule's refusal in words for a window (the service's names CLI commands)."""
    return (f"{base_url.strip()} is plain http:// to another computer: the API key would travel "
            "unencrypted. Use the service's https:// address.")


def configure_model(app: ModelDeps, base_url: str, model: str, api_key: str | None) -> str:
    """Store the choice through the model service (settings + keyring) and return a sentence.

    ``api_key=None`` keeps a stored key; ``""`` removes it first (a local server one click
    away gets no cloud key). Raises :class:`hearthside.core.agent.ModelError` subclasses (and
    the keyring's error) with a sentence; nothing is changed then.
    """
    service = app.model
    if api_key == "":
        with contextlib.suppress(Exception):  # no usable keyring: no stored key to remove either
            service.forget_key()
    try:
        done = service.configure(base_url, model, api_key or None)
    except InsecureModelEndpoint as exc:
        raise InsecureModelEndpoint(insecure_sentence(base_url)) from exc
    except ModelError as exc:
        raise type(exc)(_sentence(str(exc))) from exc
    return f"Personas now talk to {done.model} at {done.base_url}."


def model_problem(app: ModelDeps) -> str:
    """Why no model can be used right now ("" when one is configured)."""
    try:
        app.model.config()
    except ModelNotConfigured as exc:
        return str(exc).split(". ")[0] + "."
    except ModelError as exc:
        return str(exc)
    return ""


def current_model(app: ModelDeps) -> str:
    """A sentence naming the model in use ("" when none is configured). The key is not shown."""
    try:
        choice = app.model.current()
    except ModelError:
        return ""
    return f"{choice.model} at {choice.base_url}"
