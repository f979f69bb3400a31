"""The model client: any OpenAI-compatible chat-completions endpoint over ``httpx2``.

Only the HTTP lives here; which endpoint, which key and whether the key may travel there is the
app's model service (:mod:`hearthside.app.model`).

OpenAI, OpenRouter, Ollama, LM Studio, llama.cpp server and vLLM all speak
``POST {base_url}/chat/completions``. Replies stream as server-sent events; tool-call
fragments are stitched by index. 429 and 5xx (and connection failures) are retried with
exponential backoff, honouring ``Retry-After``; everything else becomes a
:class:`hearthside.core.agent.ModelError` with a sentence a user can act on.

Nothing the server sends is read without a bound: one server-sent-events line, the reply's
text, a non-streamed body and an error body each have a cap (the ``MAX_*`` constants below).
A reply whose text runs past its cap is cut and says so; an over-long line, body or tool call
is an error. Without them one 400 MiB line took the process to 1.5 GiB.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import random
import re
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from ..core.agent import ModelError, ModelReply, ToolCall

#: The longest line of a streamed (server-sent events) reply; a longer one is an error. Real
#: servers send one small JSON chunk per line.
MAX_SSE_LINE_BYTES = 1 << 20
#: The most reply text kept from one answer (streamed or not); the rest is cut, with
#: :data:`REPLY_CUT_NOTE` at the end. Tool-call names and arguments share a cap of the same size.
MAX_REPLY_CHARS = 2 << 20
#: The largest non-streamed reply body (and ``/models`` answer) read; a larger one is an error.
MAX_BODY_BYTES = 4 << 20
#: How much of an error reply's body is read: enough for any real error message.
MAX_ERROR_BODY_BYTES = 64 << 10
#: How much of a server's own error message goes into the sentence the user sees.
MAX_ERROR_DETAIL_CHARS = 500
#: What ends a reply whose text was cut at :data:`MAX_REPLY_CHARS`.
REPLY_CUT_NOTE = "[the model's reply was cut at {n:,} characters]"


class _TooLarge(Exception):
    """A line or body past its cap; the reader stops and the caller says so."""


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
        key = "***" if self.api_key else ""
        return f"ModelConfig(base_url={self.base_url!r}, model={self.model!r}, api_key={key!r})"


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
            status, text, over = await _get_bounded(client, f"{base_url.rstrip('/')}/models")
    except httpx2.HTTPError as exc:
        return ModelsAnswer(0, (), type(exc).__name__)
    if status != 200:
        return ModelsAnswer(status)
    if over:
        return ModelsAnswer(status, (), f"the model list is larger than {_size(MAX_BODY_BYTES)}")
    try:
        models = tuple(str(m.get("id")) for m in json.loads(text).get("data", []) if isinstance(m, dict))
    except (ValueError, AttributeError):
        return ModelsAnswer(status, (), "not an OpenAI-compatible model list")
    return ModelsAnswer(200, models)


async def _get_bounded(client: httpx2.AsyncClient, url: str) -> tuple[int, str, bool]:
    """``GET url``: the status, at most :data:`MAX_BODY_BYTES` of the body as text, and whether
    the body was longer (the rest is never read)."""
    async with client.stream("GET", url) as r:
        data, over = await _read_bounded(r, MAX_BODY_BYTES)
        return r.status_code, _decode(r, data), over


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
            status, text, _ = await _get_bounded(client, url)
    except httpx2.ConnectError:
        return ProbeResponse(error="nothing is answering there (connection refused or no such host)")
    except httpx2.TimeoutException:
        return ProbeResponse(error=f"no answer within {timeout:g} s")
    except httpx2.HTTPError as exc:
        return ProbeResponse(error=f"{type(exc).__name__}: {exc}")
    except ValueError as exc:  # a malformed address
        return ProbeResponse(error=f"not a usable web address ({exc})")
    return ProbeResponse(status, text[:200_000])


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
                # Leaving this block unread closes the connection: past a cap nothing more is read.
                if resp.status_code == 429 or resp.status_code >= 500:
                    await _read_bounded(resp, MAX_ERROR_BODY_BYTES)
                    raise _Retryable(f"The model at {self.config.base_url} answered HTTP {resp.status_code}",
                                     _retry_after(resp.headers.get("retry-after")))
                if resp.status_code != 200:
                    data, _ = await _read_bounded(resp, MAX_ERROR_BODY_BYTES)
                    raise ModelError(_http_error(self.config, resp.status_code, _decode(resp, data)))
                ctype = resp.headers.get("content-type", "")
                if "text/event-stream" in ctype:
                    return await _read_stream(resp, on_text, self.config)
                data, over = await _read_bounded(resp, MAX_BODY_BYTES)
                if over:
                    raise ModelError(f"The model at {self.config.base_url} sent a reply larger than "
                                     f"{_size(MAX_BODY_BYTES)}; Hearthside stopped reading it.")
                reply = _parse_completion(_decode(resp, data), self.config)
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


async def _read_bounded(resp: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the body, and whether there was more (left unread)."""
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf += chunk
        if len(buf) > limit:
            return bytes(buf[:limit]), True
    return bytes(buf), False


def _decode(resp: httpx2.Response, data: bytes) -> str:
    """Body bytes as text in the reply's charset (UTF-8 when unnamed or unknown)."""
    enc = resp.charset_encoding or "utf-8"
    try:
        codecs.lookup(enc)
    except LookupError:
        enc = "utf-8"
    return data.decode(enc, "replace")


def _size(n: int) -> str:
    """A cap for a sentence: ``4 MiB``, ``64 KiB``."""
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


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
    if len(detail) > MAX_ERROR_DETAIL_CHARS:
        detail = detail[:MAX_ERROR_DETAIL_CHARS] + "…"
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
        content = content if isinstance(content, str) else str(content)
        if sum(len(c.name) + len(c.arguments) for c in calls) > MAX_REPLY_CHARS:
            raise _call_too_long(config)
        finish = str(choice.get("finish_reason") or "")
        if len(content) > MAX_REPLY_CHARS:
            content, finish = _cut(content[:MAX_REPLY_CHARS]), "length"
        return ModelReply(content, tuple(calls), finish)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _malformed(config, f"{type(exc).__name__}: {exc}") from None


def _cut(text: str) -> str:
    """Reply text cut at the cap, with the sentence that says so."""
    return text + "\n\n" + REPLY_CUT_NOTE.format(n=MAX_REPLY_CHARS)


def _call_too_long(config: ModelConfig) -> ModelError:
    return ModelError(f"The model at {config.base_url} sent a tool call longer than "
                      f"{MAX_REPLY_CHARS:,} characters; Hearthside stopped reading it.")


class _StreamState:
    """What the chunks of one streamed answer have said so far."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: list[dict[str, str]] = []
        self.by_index: dict[int, dict[str, str]] = {}
        self.finish = ""
        self.text_chars = 0
        self.call_chars = 0
        self.cut = False

    def add_choice(self, choice: Mapping[str, Any]) -> None:
        """Take one choice of a chunk; past :data:`MAX_REPLY_CHARS` of text the reply is cut
        (``self.cut``) and the reader stops."""
        delta = choice.get("delta") or {}
        piece = delta.get("content")
        if piece:
            piece = str(piece)
            room = MAX_REPLY_CHARS - self.text_chars
            if len(piece) > room:
                piece, self.cut = piece[:room], True
            self.text_chars += len(piece)
            self.text.append(piece)
            if self.on_text:
                self.on_text(piece)
            if self.cut:
                note = _cut("")
                self.text.append(note)
                self.finish = "length"
                if self.on_text:
                    self.on_text(note)
                return
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
            self.call_chars += len(str(fn["name"]))
        args = fn.get("arguments")
        if args:
            more = args if isinstance(args, str) else json.dumps(args)
            slot["arguments"] += more
            self.call_chars += len(more)
        if self.call_chars > MAX_REPLY_CHARS:
            raise _TooLarge("tool call")

    def reply(self) -> ModelReply:
        calls = tuple(ToolCall(s["id"] or f"call_{i}", s["name"], s["arguments"])
                      for i, s in enumerate(self.calls))
        return ModelReply("".join(self.text), calls, self.finish)


async def _read_stream(resp: httpx2.Response, on_text: Callable[[str], None] | None,
                       config: ModelConfig) -> ModelReply:
    state = _StreamState(on_text)
    done = False
    try:
        async for line in _bounded_lines(resp.aiter_bytes(), MAX_SSE_LINE_BYTES):
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
            if state.cut:
                return state.reply()  # the rest of the answer is never read
    except _TooLarge as exc:
        if str(exc) == "tool call":
            raise _call_too_long(config) from None
        raise ModelError(f"The model at {config.base_url} sent a line of its streamed reply longer "
                         f"than {_size(MAX_SSE_LINE_BYTES)}; Hearthside stopped reading it.") from None
    if not done and not state.finish:
        raise _malformed(config, "the stream ended before the answer was complete")
    return state.reply()


def _error_text(err: Any) -> str:
    text = str(err.get("message") or err) if isinstance(err, dict) else str(err)
    return text if len(text) <= MAX_ERROR_DETAIL_CHARS else text[:MAX_ERROR_DETAIL_CHARS] + "…"


#: A line end in an event stream: CRLF, LF or a lone CR.
_EOL = re.compile(rb"\r\n|\r|\n")


async def _bounded_lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[str]:
    """The lines of a byte stream, each at most ``limit`` bytes (else :class:`_TooLarge`, as
    soon as the partial line passes it: the rest is never buffered). Lines split at ASCII line
    ends, so UTF-8 is never cut inside a character."""
    buf = bytearray()
    async for chunk in chunks:
        scan = max(0, len(buf) - 1)  # a CR at the old end may pair with an LF just arrived
        buf += chunk
        start = 0
        while (m := _EOL.search(buf, max(start, scan))) is not None:
            if m.group() == b"\r" and m.end() == len(buf):
                break  # maybe the first half of CRLF
            if m.start() - start > limit:
                raise _TooLarge("line")
            yield buf[start:m.start()].decode("utf-8", "replace")
            start = m.end()
        del buf[:start]
        if len(buf) > limit:
            raise _TooLarge("line")
    if buf:
        if buf.endswith(b"\r"):
            del buf[-1:]
        yield buf.decode("utf-8", "replace")
