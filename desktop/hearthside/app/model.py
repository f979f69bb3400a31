"""The model service: which model personas talk to, with which key, and whether it is safe.

The one place for the model *policy*, used by the CLI (``hearthside model …``, ``chat``), the
sessions, the doctor and the settings window:

- the ``model.*`` setting names and the ``HEARTHSIDE_MODEL_*`` environment overrides (the
  environment wins, for headless use and tests);
- the API key: ``HEARTHSIDE_MODEL_API_KEY``, else the keyring entry ``model/api_key``;
- the transport rule (CONTRACTS §9): the key goes only over https, or http to a loopback
  address, unless the user opted out *for that endpoint* (``model use URL NAME
  --allow-insecure-http``). A refused endpoint is refused before any connection is made;
- looking for a local server (Ollama on 11434, LM Studio on 1234, on 127.0.0.1 only).

The HTTP itself (chat completions, ``GET /models``) is the adapter's
(:mod:`hearthside.adapters.model_client`); nothing here speaks HTTP.
"""

from __future__ import annotations

import asyncio
import os
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..core.agent import ModelError
from ..core.loopback import is_loopback_host
from ..core.mcpconfig import origin_of
from ..core.secrets import SecretStore

if TYPE_CHECKING:  # the HTTP client (httpx2) is imported on first use, not at start
    from ..adapters.model_client import ModelConfig, OpenAICompatibleModel

# -- names, spelled once ------------------------------------------------------------------
SETTING_BASE_URL = "model.base_url"
SETTING_NAME = "model.name"
#: The origin (``http://host:port``) the user allowed the key to travel to over plain http.
SETTING_INSECURE_ORIGIN = "model.allow_insecure_http_for"
SETTING_TIMEOUTS = {"connect_timeout": 10.0, "read_timeout": 120.0, "total_timeout": 600.0}

ENV_BASE_URL = "HEARTHSIDE_MODEL_BASE_URL"
ENV_NAME = "HEARTHSIDE_MODEL"
ENV_API_KEY = "HEARTHSIDE_MODEL_API_KEY"
#: ``1`` opts an environment-configured plain-http endpoint out of the transport rule.
ENV_ALLOW_INSECURE = "HEARTHSIDE_MODEL_ALLOW_INSECURE_HTTP"
#: Every model variable whose value is a secret (masked in logs like keyring secrets).
SECRET_ENV_VARS = (ENV_API_KEY,)

API_KEY_REF = "model/api_key"

#: Local servers offered when nothing is configured: (label, base URL). Loopback only.
LOCAL_CANDIDATES: tuple[tuple[str, str], ...] = (
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
)

Source = Literal["environment", "settings"]
CredentialSource = Literal["environment", "keyring", "none"]


class ModelNotConfigured(ModelError):
    """No endpoint is configured; the message says how to set one."""


class InsecureModelEndpoint(ModelError):
    """The API key would travel in clear text to a host that is not this computer."""


class ModelSetupError(ModelError):
    """``configure`` was given something unusable (the message is one sentence)."""


class SettingsLike(Protocol):
    """What the model service needs of the settings store."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def update(self, mutate: Callable[[dict[str, Any]], None]) -> None: ...


def env_api_key(env: Mapping[str, str] | None = None) -> str:
    """The API key from the environment ("" when unset): the one place that asks."""
    return (os.environ if env is None else env).get(ENV_API_KEY, "")


def normalize_base_url(base_url: str) -> tuple[str, str]:
    """``(base, note)``: the base URL without a trailing slash or a pasted
    ``/chat/completions``; ``note`` says what was changed ("" when nothing). Raises
    :class:`ModelSetupError` for something that is not an http(s) address."""
    raw = (base_url or "").strip()
    if not raw.startswith(("http://", "https://")):
        raise ModelSetupError(f"{base_url!r} is not a web address; it starts with http:// or https://.")
    try:
        parts = urllib.parse.urlsplit(raw)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ModelSetupError(f"{base_url!r} is not a valid web address ({exc}).") from None
    if not parts.hostname:
        raise ModelSetupError(f"{base_url!r} names no server; give one like http://127.0.0.1:11434/v1.")
    if parts.username or parts.password:
        raise ModelSetupError(
            "the address contains a user name or password, which would be stored in settings.toml; "
            "remove it and store the key with 'hearthside model set-key' instead."
        )
    base = raw.rstrip("/")
    note = ""
    if base.endswith("/chat/completions"):
        # The full endpoint pasted from a service's docs: the client adds that part itself.
        base = base.removesuffix("/chat/completions")
        note = f"using the base URL {base} (Hearthside adds /chat/completions itself)."
    return base, note


def key_may_travel(base_url: str, allowed_origin: str = "") -> bool:
    """May an API key be sent to ``base_url``? https, http on loopback, or the opted-out origin."""
    scheme, host, _ = origin_of(base_url)
    if scheme == "https" or is_loopback_host(host):
        return True
    return bool(allowed_origin) and _origin(base_url) == allowed_origin


def check_key_transport(base_url: str, has_key: bool, allowed_origin: str = "") -> None:
    """Refuse (with a sentence) a key that would go in clear text to another computer."""
    if not has_key or key_may_travel(base_url, allowed_origin):
        return
    host = origin_of(base_url)[1]
    raise InsecureModelEndpoint(
        f"The model at {base_url} uses plain http to {host}, where anyone on the network could read "
        "the API key: use an https address, remove the key ('hearthside model forget-key'), or, if "
        "you really mean it, allow it for this endpoint with 'hearthside model use "
        f"{base_url} NAME --allow-insecure-http'."
    )


def _origin(base_url: str) -> str:
    scheme, host, port = origin_of(base_url)
    return f"{scheme}://{host}:{port}"


@dataclass(frozen=True)
class ModelChoice:
    """The model in use as a user sees it (never the key itself)."""

    base_url: str
    model: str
    api_key: bool
    source: Source
    credential_source: CredentialSource
    allow_insecure_http: bool

    def as_dict(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "api_key": self.api_key,
                "source": self.source, "credential_source": self.credential_source}


@dataclass(frozen=True)
class Configured:
    """What :meth:`ModelService.configure` stored; ``note`` says what it changed in the URL."""

    base_url: str
    model: str
    note: str = ""


@dataclass(frozen=True)
class ProbeResult:
    """The answer of :meth:`ModelService.test`: ``ok`` and a sentence saying why not."""

    ok: bool
    reason: str
    models: tuple[str, ...] = ()


class ModelService:
    """The model policy over the settings, the environment and the keyring.

    ``secrets`` is a factory so a keyless local model works without touching the keyring, and
    a broken keyring only costs the key, never the chat.
    """

    def __init__(self, settings: SettingsLike, secrets: Callable[[], SecretStore | None],
                 env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self._secrets = secrets
        self._env = env

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    # -- reading ---------------------------------------------------------------------------
    def _store(self) -> SecretStore | None:
        try:
            return self._secrets()
        except Exception:  # noqa: BLE001 - no keyring: a keyless local model still works
            return None

    def _key(self) -> tuple[str, CredentialSource]:
        key = env_api_key(self.env)
        if key:
            return key, "environment"
        store = self._store()
        if store is not None:
            try:
                key = store.get(API_KEY_REF) or ""
            except Exception:  # noqa: BLE001 - a locked keyring must not stop a keyless local model
                key = ""
        return key, ("keyring" if key else "none")

    def _allowed_origin(self, from_env: bool) -> str:
        if from_env:
            if self.env.get(ENV_ALLOW_INSECURE, "") in ("1", "true", "yes"):
                return _origin(self.env.get(ENV_BASE_URL, ""))
            return ""
        return str(self.settings.get(SETTING_INSECURE_ORIGIN, "") or "")

    def config(self) -> ModelConfig:
        """The configuration the client uses. Raises :class:`ModelNotConfigured` when nothing
        is configured and :class:`InsecureModelEndpoint` when the key may not travel there."""
        env = self.env
        base = env.get(ENV_BASE_URL) or str(self.settings.get(SETTING_BASE_URL, "") or "")
        name = env.get(ENV_NAME) or str(self.settings.get(SETTING_NAME, "") or "")
        if not base:
            raise ModelNotConfigured(
                "No model is configured. Choose one with 'hearthside model use BASE_URL NAME' (for "
                "Ollama: hearthside model use http://127.0.0.1:11434/v1 llama3.2), or set model.base_url "
                f"and model.name in settings.toml (or {ENV_BASE_URL} and {ENV_NAME})."
            )
        if not name:
            raise ModelNotConfigured(
                f"No model name is configured for {base}. Choose one with 'hearthside model use {base} NAME', "
                f"or set model.name in settings.toml or {ENV_NAME}."
            )
        from ..adapters.model_client import ModelConfig

        key, _ = self._key()
        base = base.rstrip("/")
        check_key_transport(base, bool(key), self._allowed_origin(bool(env.get(ENV_BASE_URL))))
        return ModelConfig(base, name, key, connect_timeout=self._seconds("connect_timeout"),
                           read_timeout=self._seconds("read_timeout"),
                           total_timeout=self._seconds("total_timeout"))

    def _seconds(self, key: str) -> float:
        default = SETTING_TIMEOUTS[key]
        try:
            v = float(self.settings.get(f"model.{key}", default) or default)
        except (TypeError, ValueError):
            return default
        return v if v > 0 else default

    def current(self) -> ModelChoice:
        """The model in use and where each part comes from (same errors as :meth:`config`)."""
        cfg = self.config()
        _, cred = self._key()
        from_env = bool(self.env.get(ENV_BASE_URL))
        return ModelChoice(cfg.base_url, cfg.model, bool(cfg.api_key),
                           "environment" if from_env else "settings", cred,
                           bool(self._allowed_origin(from_env)))

    def client(self) -> OpenAICompatibleModel:
        """A chat client for the configured model (same errors as :meth:`config`)."""
        from ..adapters.model_client import OpenAICompatibleModel

        return OpenAICompatibleModel(self.config())

    # -- changing --------------------------------------------------------------------------
    def configure(self, base_url: str, model: str, api_key: str | None = None, *,
                  allow_insecure_http: bool = False) -> Configured:
        """Use ``model`` at ``base_url``; store ``api_key`` in the keyring when given.

        Checks everything before changing anything: a refused endpoint leaves the settings and
        the keyring as they were.
        """
        base, note = normalize_base_url(base_url)
        name = (model or "").strip()
        if not name:
            raise ModelSetupError("the model name is empty; give the name the server knows it by, e.g. llama3.2.")
        has_key = bool(api_key) or bool(self._key()[0])
        allowed = _origin(base) if allow_insecure_http else ""
        check_key_transport(base, has_key, allowed)
        if api_key:
            store = self._secrets()
            if store is None:
                raise ModelSetupError("no keyring is available to store the API key; nothing was changed.")
            store.set(API_KEY_REF, api_key)

        def mutate(data: dict[str, Any]) -> None:
            section = data.setdefault("model", {})
            section["base_url"] = base
            section["name"] = name
            if allowed and not key_may_travel(base):
                section["allow_insecure_http_for"] = allowed
            else:
                section.pop("allow_insecure_http_for", None)

        self.settings.update(mutate)
        return Configured(base, name, note)

    def set_key(self, value: str) -> None:
        """Store the API key in the keyring (the caller has read it without echoing it)."""
        store = self._secrets()
        if store is None:
            raise ModelSetupError("no keyring is available to store the API key.")
        store.set(API_KEY_REF, value)

    def forget_key(self) -> bool:
        """Remove the key from the keyring; False when none was stored."""
        store = self._secrets()
        if store is None or store.get(API_KEY_REF) is None:
            return False
        store.delete(API_KEY_REF)
        return True

    # -- probing (no connection is made to an endpoint the rule refuses) -----------------
    async def atest(self, timeout: float = 3.0) -> ProbeResult:
        """Does the configured endpoint answer ``GET /models`` (with the key)? Never raises."""
        from ..adapters.model_client import list_models

        try:
            cfg = self.config()
        except ModelError as exc:
            return ProbeResult(False, str(exc))
        answer = await list_models(cfg.base_url, cfg.api_key, timeout)
        if answer.error:
            return ProbeResult(False, f"{cfg.base_url} is not answering ({answer.error}); is the server running?")
        if answer.status != 200:
            return ProbeResult(False, f"{cfg.base_url}/models answered HTTP {answer.status}")
        return ProbeResult(True, f"{cfg.model} at {cfg.base_url}", answer.models)

    def test(self, timeout: float = 3.0) -> ProbeResult:
        """:meth:`atest` for a thread without an event loop (a worker thread, the doctor)."""
        return asyncio.run(self.atest(timeout))

    async def adiscover_local(self, timeout: float = 0.5) -> list[dict[str, Any]]:
        """Ollama and LM Studio on 127.0.0.1 at their default ports that answer ``GET /models``:
        ``[{"label", "base_url", "models"}]``. No key is ever sent to them."""
        from ..adapters.model_client import list_models

        found = []
        for label, base in LOCAL_CANDIDATES:
            answer = await list_models(base, "", timeout)
            if answer.status == 200 and not answer.error:
                found.append({"label": label, "base_url": base, "models": list(answer.models)})
        return found

    def discover_local(self, timeout: float = 0.5) -> list[dict[str, Any]]:
        """:meth:`adiscover_local` for a thread without an event loop."""
        return asyncio.run(self.adiscover_local(timeout))

    def describe(self, timeout: float = 3.0) -> dict[str, Any]:
        """For the doctor: configured and answering, or a local server to offer. Never raises."""

        async def probe() -> dict[str, Any]:
            try:
                cfg = self.config()
            except ModelNotConfigured as exc:
                found = await self.adiscover_local()
                if found:
                    f = found[0]
                    return {"status": "warn", "detail": f"not configured; found {f['label']} at {f['base_url']} "
                            f"(models: {', '.join(f['models'][:5]) or 'none'}). 'hearthside chat' offers it.",
                            "local": found}
                return {"status": "warn", "detail": str(exc)}
            except InsecureModelEndpoint as exc:
                return {"status": "fail", "detail": str(exc)}
            data = {"base_url": cfg.base_url, "model": cfg.model, "api_key": bool(cfg.api_key)}
            result = await self.atest(timeout)
            return {"status": "ok" if result.ok else "warn", "detail": result.reason, **data}

        try:
            return asyncio.run(probe())
        except Exception as exc:  # noqa: BLE001 - a diagnostic never crashes
            return {"status": "warn", "detail": f"could not check the model: {exc}"}
