"""The model client: any OpenAI-compatible chat-completions endpoint over ``httpx2``.

Only the HTTP lives here; which endpoint, which key and whether the key may travel there is the
app's model service (:mod:`hearthside.app.model`).

OpenAI, OpenRouter, Ollama, LM Studio, llama.cpp server and vLLM all speak
``POST {base_url}/chat/completions``. Replies stream as server-sent events; tool-call
fragments are stitched by index. 429 and 5xx (and connection failures) are retried with
exponential backoff, honouring ``Retry-After``; everything else becomes a
:class:`hearthside.core.agent.ModelError` with a sentence a user can act on.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from ..core.agent import ModelError, ModelReply, ToolCall


@dataclass(frozen=True)
class ModelConfig:
    """Where and how to reach the model. ``api_key`` is never logged or printed."""

    base_url: str
    model: str
    api_key: str = ""
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    total_timeout: float = 600.0
    max_retries: int = 3
    backoff: float = 0.5
    stream: bool = True

    def __repr__(self) -> str:  # keep the key out of logs and tracebacks
        return f"ModelConfig(base_url={self.base_url!r}, model={self.model!r}, api_key={'***' if self.api_key else ''!r})"


@dataclass(frozen=True)
class ModelsAnswer:
    """What ``GET {base_url}/models`` said: the HTTP status (0: no answer), the model ids, and
    the failure's exception name when there was no answer."""

    status: int
    models: tuple[str, ...] = ()
    error: str = ""


async def list_models(base_url: str, api_key: str = "", timeout: float = 3.0) -> ModelsAnswer:
    """Ask an endpoint which models it serves. Never raises for a network or protocol failure.

    The caller decides whether ``api_key`` may be sent to ``base_url`` (the app's model service
    does, before calling this)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=timeout, trust_env=False, headers=headers,
                                      follow_redirects=False, verify=_ssl_context()) as client:
            r = await client.get(f"{base_url.rstrip('/')}/models")
    except httpx2.HTTPError as exc:
        return ModelsAnswer(0, (), type(exc).__name__)
    if r.status_code != 200:
        return ModelsAnswer(r.status_code)
    try:
        models = tuple(str(m.get("id")) for m in r.json().get("data", []) if isinstance(m, dict))
    except (ValueError, AttributeError):
        return ModelsAnswer(r.status_code, (), "not an OpenAI-compatible model list")
    return ModelsAnswer(200, models)


@dataclass(frozen=True)
class ProbeResponse:
    """A bounded ``GET``'s answer for setup screens: the HTTP status and body, or ``error`` (a
    short reason) when nothing answered. Unlike :func:`list_models` it keeps the server's own
    words, so *Test* can report exactly why a key or an address was refused."""

    status: int = 0
    body: str = ""
    error: str = ""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


async def probe_get(url: str, api_key: str = "", timeout: float = 3.0) -> ProbeResponse:
    """``GET url`` with an optional bearer key; never raises for network trouble. The caller
    decides whether the key may travel there (the model service's transport rule)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=timeout, trust_env=False, headers=headers,
                                      follow_redirects=False, verify=_ssl_context()) as client:
            r = await client.get(url)
    except httpx2.ConnectError:
        return ProbeResponse(error="nothing is answering there (connection refused or no such host)")
    except httpx2.TimeoutException:
        return ProbeResponse(error=f"no answer within {timeout:g} s")
    except httpx2.HTTPError as exc:
        return ProbeResponse(error=f"{type(exc).__name__}: {exc}")
    except ValueError as exc:  # a malformed address
        return ProbeResponse(error=f"not a usable web address ({exc})")
    return ProbeResponse(r.status_code, r.text[:200_000])


_SSL_CONTEXT: Any = None
_SSL_LOCK = threading.Lock()


def _ssl_context() -> Any:
    """One TLS context per process: building one loads the CA bundle (tens of ms), which would
    otherwise be paid by every heartbeat."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx2.create_ssl_context()
        return _SSL_CONTEXT


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class OpenAICompatibleModel:
    """A :class:`hearthside.core.agent.ChatModel` over HTTP. One instance per session is fine;
    it opens a connection pool lazily and :meth:`aclose` releases it."""

    def __init__(self, config: ModelConfig, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            c = self.config
            headers = {"Accept": "application/json"}
            if c.api_key:
                headers["Authorization"] = f"Bearer {c.api_key}"
            self._client = httpx2.AsyncClient(
                headers=headers, trust_env=False, follow_redirects=False, verify=_ssl_context(),
                timeout=httpx2.Timeout(c.read_timeout, connect=c.connect_timeout),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        body: dict[str, Any] = {"model": self.config.model, "messages": list(messages),
                                "stream": self.config.stream}
        if tools:
            body["tools"] = list(tools)
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(self.config.total_timeout):
                    return await self._once(body, on_text)
            except _Retryable as exc:
                attempt += 1
                if attempt > self.config.max_retries:
                    raise ModelError(f"{exc} (gave up after {attempt} attempts)") from None
                delay = exc.retry_after if exc.retry_after is not None else (
                    self.config.backoff * (2 ** (attempt - 1)) * (1 + random.random() * 0.25))
                await self._sleep(min(delay, 30.0))
            except TimeoutError:
                raise ModelError(
                    f"The model at {self.config.base_url} did not finish its answer within "
                    f"{self.config.total_timeout:g} s; try again or raise model.total_timeout."
                ) from None

    async def _once(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> ModelReply:
        url = f"{self.config.base_url}/chat/completions"
        try:
            async with self._http().stream("POST", url, json=body) as resp:
                if resp.status_code == 429 or resp.status_code >= 500:
                    await resp.aread()
                    raise _Retryable(f"The model at {self.config.base_url} answered HTTP {resp.status_code}",
                                     _retry_after(resp.headers.get("retry-after")))
                if resp.status_code != 200:
                    await resp.aread()
                    raise ModelError(_http_error(self.config, resp.status_code, resp.text))
                ctype = resp.headers.get("content-type", "")
                if "text/event-stream" in ctype:
                    return await _read_stream(resp, on_text, self.config)
                await resp.aread()
                reply = _parse_completion(resp.text, self.config)
                if on_text and reply.content:
                    on_text(reply.content)
                return reply
        except httpx2.ConnectError as exc:
            raise _Retryable(f"Could not connect to the model at {self.config.base_url} ({exc}); "
                             "is the server running?") from None
        except httpx2.TimeoutException:
            raise ModelError(
                f"The model at {self.config.base_url} stopped answering (no data for "
                f"{self.config.read_timeout:g} s); try again later or check the server."
            ) from None
        except httpx2.HTTPError as exc:
            raise ModelError(f"Talking to the model at {self.config.base_url} failed: {exc}") from None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _http_error(config: ModelConfig, status: int, text: str) -> str:
    detail = ""
    try:
        err = json.loads(text).get("error")
        detail = err.get("message", "") if isinstance(err, dict) else str(err or "")
    except (ValueError, AttributeError):
        detail = text.strip()[:200]
    hint = {401: "check the API key (model/api_key in the keyring, or HEARTHSIDE_MODEL_API_KEY)",
            403: "the key is not allowed to use this model",
            404: f"check model.base_url and that the model {config.model!r} exists"}.get(status, "")
    msg = f"The model at {config.base_url} refused the request (HTTP {status})"
    if detail:
        msg += f": {detail}"
    return msg + (f"; {hint}." if hint else ".")


def _malformed(config: ModelConfig, why: str) -> ModelError:
    return ModelError(f"The model at {config.base_url} sent a reply Hearthside could not read ({why}); "
                      "is this an OpenAI-compatible endpoint?")


def _parse_completion(text: str, config: ModelConfig) -> ModelReply:
    """One non-streamed completion; any shape other than the protocol's is a clear error."""
    try:
        doc = json.loads(text)
        choice = doc["choices"][0]
        msg = choice["message"]
        calls = []
        for i, tc in enumerate(msg.get("tool_calls") or []):
            fn = tc.get("function") or {}
            args = fn.get("arguments", "")
            calls.append(ToolCall(str(tc.get("id") or f"call_{i}"), str(fn.get("name", "")),
                                  args if isinstance(args, str) else json.dumps(args)))
        content = msg.get("content") or ""
        return ModelReply(content if isinstance(content, str) else str(content), tuple(calls),
                          str(choice.get("finish_reason") or ""))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _malformed(config, f"{type(exc).__name__}: {exc}") from None


class _StreamState:
    """What the chunks of one streamed answer have said so far."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: list[dict[str, str]] = []
        self.by_index: dict[int, dict[str, str]] = {}
        self.finish = ""

    def add_choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta") or {}
        piece = delta.get("content")
        if piece:
            self.text.append(str(piece))
            if self.on_text:
                self.on_text(str(piece))
        for tc in delta.get("tool_calls") or []:
            self._add_call_fragment(tc)
        if choice.get("finish_reason"):
            self.finish = str(choice["finish_reason"])

    def _add_call_fragment(self, tc: Mapping[str, Any]) -> None:
        """Fragments are stitched by ``index``; a fragment bringing a *new* id at a taken index
        starts a new call (some servers send every whole call at index 0)."""
        index = int(tc.get("index", 0))
        slot = self.by_index.get(index)
        new_id = str(tc.get("id") or "")
        if slot is None or (new_id and slot["id"] and new_id != slot["id"]):
            slot = self.by_index[index] = {"id": "", "name": "", "arguments": ""}
            self.calls.append(slot)
        if new_id:
            slot["id"] = new_id
        fn = tc.get("function") or {}
        if fn.get("name"):
            slot["name"] += str(fn["name"])
        args = fn.get("arguments")
        if args:
            slot["arguments"] += args if isinstance(args, str) else json.dumps(args)

    def reply(self) -> ModelReply:
        calls = tuple(ToolCall(s["id"] or f"call_{i}", s["name"], s["arguments"])
                      for i, s in enumerate(self.calls))
        return ModelReply("".join(self.text), calls, self.finish)


async def _read_stream(resp: httpx2.Response, on_text: Callable[[str], None] | None,
                       config: ModelConfig) -> ModelReply:
    state = _StreamState(on_text)
    done = False
    async for line in resp.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
            if "error" in chunk and not chunk.get("choices"):
                raise ModelError(f"The model at {config.base_url} reported an error: "
                                 f"{_error_text(chunk['error'])}")
            for choice in chunk.get("choices") or []:
                state.add_choice(choice)
        except (ValueError, AttributeError, TypeError) as exc:
            raise _malformed(config, f"bad stream chunk: {type(exc).__name__}: {exc}") from None
    if not done and not state.finish:
        raise _malformed(config, "the stream ended before the answer was complete")
    return state.reply()


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err)
