"""A real, scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

The remote model is the one part Hearthside tests may fake, and then only as a real HTTP server
speaking the real protocol: ``POST /v1/chat/completions`` (JSON or server-sent events, whichever
the request asks for) and ``GET /v1/models``. Each request takes the next scripted step; when the
script is empty the ``default`` step answers. Every request body is recorded.

Steps are dicts:
  {"text": "..."}                         an assistant message
  {"tool_calls": [("name", "{json}")]}    tool calls (optionally with "text")
  {"status": 500} / {"status": 429, "retry_after": "0"} / {"status": 401, "error": "..."}
  {"raw": "not json"}                     a 200 with a body that is not a completion
  {"hang": True}                          starts a stream, sends one piece, never finishes
  {"sse": "data: ...\n\n"}                 a 200 event stream with exactly this body, then close
  {"huge": "sse_line", "size": 50_000_000} a reply of ``size`` bytes made lazily, in 64 KiB writes:
                                          sse_line (one endless event line), sse_text (many text
                                          chunks), sse_args (many tool-call argument chunks), body
                                          (one JSON completion) or error (a 400 error body). Whether
                                          the client hung up early is kept in ``huge_sent``.
  {"delay": 0.5, ...}                     waits before answering (combine with any of the above)
  {"gate": threading.Event(), ...}        waits (at most 60 s) until the test sets the event
  a callable(request_body) -> step        decides from the request
  by_system({"marker": [steps], ...})     a callable that routes on the request's system prompt:
                                          each agent (a persona, each specialist) gets its own
                                          script (and so its own latency), first marker found wins

``GET /v1/models`` lists ``model_ids``; set ``models_error = (status, message)`` to answer it
with that HTTP status and an OpenAI-shaped error body instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Step = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class FakeModel:
    """Start with ``with FakeModel() as fm:``; point the client at ``fm.base_url``."""

    def __init__(self, script: list[Step] | None = None, default: Step | None = None,
                 model_ids: tuple[str, ...] = ("fake-model",)) -> None:
        self.script: list[Step] = list(script or [])
        self.default: Step = default or {"text": "HEARTBEAT_OK"}
        self.model_ids = model_ids
        self.models_error: tuple[int, str] | None = None
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.active = 0
        self.max_active = 0
        #: (bytes written, whether the client hung up before the end) for each "huge" step
        self.huge_sent: list[tuple[int, bool]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models") and fake.models_error is not None:
                    status, message = fake.models_error
                    fake._json(self, status, {"error": {"message": message, "type": "invalid_request_error"}})
                elif self.path.rstrip("/").endswith("/models"):
                    models = [{"id": m, "object": "model"} for m in fake.model_ids]
                    fake._json(self, 200, {"object": "list", "data": models})
                else:
                    fake._json(self, 404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_unparsable": raw.decode("utf-8", "replace")}
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    step = fake.script.pop(0) if fake.script else fake.default
                    fake.active += 1
                    fake.max_active = max(fake.max_active, fake.active)
                try:
                    if callable(step):
                        step = step(body)
                    fake._answer(self, body, step)
                finally:
                    with fake.lock:
                        fake.active -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stop_event.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def env(self) -> dict[str, str]:
        return {"HEARTHSIDE_MODEL_BASE_URL": self.base_url, "HEARTHSIDE_MODEL": self.model_ids[0]}

    def add(self, *steps: Step) -> None:
        with self.lock:
            self.script.extend(steps)

    # -- answers ---------------------------------------------------------------------------
    def _json(self, h: BaseHTTPRequestHandler, status: int, doc: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: dict[str, Any]) -> None:
        if step.get("delay"):
            self.stop_event.wait(float(step["delay"]))
        if step.get("gate") is not None:
            step["gate"].wait(60)
        if "status" in step:
            extra = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else None
            self._json(h, int(step["status"]), {"error": {"message": step.get("error", "scripted failure")}}, extra)
            return
        if "huge" in step:
            self._huge(h, str(step["huge"]), int(step["size"]))
            return
        if "sse" in step:
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.end_headers()
            h.wfile.write(str(step["sse"]).encode())
            return
        if "raw" in step:
            data = str(step["raw"]).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        text = str(step.get("text", ""))
        calls = [(f"call_{i}_{len(self.requests)}", name, args)
                 for i, (name, args) in enumerate(step.get("tool_calls", []))]
        if not body.get("stream") and not step.get("hang"):
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                                     for cid, n, a in calls]
            self._json(h, 200, {"id": "cmpl", "object": "chat.completion", "model": body.get("model"),
                                "choices": [{"index": 0, "message": msg,
                                             "finish_reason": "tool_calls" if calls else "stop"}]})
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()

        def send(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {"id": "c", "object": "chat.completion.chunk", "model": body.get("model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            h.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            h.wfile.flush()

        send({"role": "assistant"})
        if step.get("hang"):
            send({"content": "thinking"})
            self.stop_event.wait(60)
            return
        pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
        for p in pieces:
            send({"content": p})
        for i, (cid, name, args) in enumerate(calls):
            half = len(args) // 2
            send({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                  "function": {"name": name, "arguments": args[:half]}}]})
            send({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]})
        send({}, "tool_calls" if calls else "stop")
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()


    def _huge(self, h: BaseHTTPRequestHandler, kind: str, size: int) -> None:
        """Send a reply of about ``size`` bytes without ever holding it: 64 KiB at a time."""
        piece = 64 * 1024
        filler = b"x" * piece
        if kind == "sse_line":
            head, tail = b'data: {"choices":[{"index":0,"delta":{"content":"', b'"}}]}\n\n'
            ctype, status = "text/event-stream", 200
        elif kind == "body":
            head = b'{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'
            tail = b'"}}]}'
            ctype, status = "application/json", 200
        elif kind == "error":
            head, tail, ctype, status = b'{"error":{"message":"', b'"}}', "application/json", 400
        elif kind in ("sse_text", "sse_args"):
            head = tail = b""
            ctype, status = "text/event-stream", 200
            if kind == "sse_text":
                delta: dict[str, Any] = {"content": "x" * piece}
            else:
                delta = {"tool_calls": [{"index": 0, "id": "c1",
                                         "function": {"name": "recall", "arguments": "x" * piece}}]}
            filler = f"data: {json.dumps({'choices': [{'index': 0, 'delta': delta}]})}\n\n".encode()
        else:
            raise ValueError(f"unknown huge reply {kind!r}")
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        if kind in ("body", "error"):
            h.send_header("Content-Length", str(size))
        h.end_headers()
        sent = 0
        try:
            h.wfile.write(head)
            sent = len(head)
            while sent + len(filler) + len(tail) <= size:
                h.wfile.write(filler)
                sent += len(filler)
            rest = size - sent - len(tail)
            h.wfile.write((filler * 2)[:max(0, rest)] + tail)
            sent = size
            if kind.startswith("sse"):
                h.wfile.write(b"data: [DONE]\n\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with self.lock:
                self.huge_sent.append((sent, True))
            return
        with self.lock:
            self.huge_sent.append((sent, False))


def by_system(routes: dict[str, list[Step] | Step],
              default: Step | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A step that answers each agent from its own script, told apart by a marker in the system
    prompt (a specialist's instructions): a list is taken step by step (its last step repeats), a
    single step always answers. Use it as ``FakeModel(default=by_system({...}))``."""
    lock = threading.Lock()
    queues = {k: (list(v) if isinstance(v, list) else [v]) for k, v in routes.items()}

    def step(body: dict[str, Any]) -> dict[str, Any]:
        msgs = body.get("messages") or [{}]
        system = str(msgs[0].get("content") or "") if msgs[0].get("role") == "system" else ""
        for marker, queue in queues.items():
            if marker in system:
                with lock:
                    chosen = queue.pop(0) if len(queue) > 1 else queue[0]
                return chosen(body) if callable(chosen) else dict(chosen)
        fallback = default or {"text": "HEARTBEAT_OK"}
        return fallback(body) if callable(fallback) else dict(fallback)
    return step


def wait_for(pred: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``pred`` until true or ``timeout``; returns the last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return bool(pred())


#: The line Hearthside puts in front of every user message sent to the model (docs/guide.md).
TIME_LINE = r"Current time: (Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day \d{4}-\d\d-\d\d \d\d:\d\d \([^()\s]+\)\."


def said(content: str) -> str:
    """What the user typed, from a user message the model got: checks the ``Current time:``
    line in front of it and returns the rest (the window and the terminal show only that)."""
    import re

    m = re.match(TIME_LINE + r"\n\n", content)
    assert m, f"no Current time line in front of {content[:120]!r}"
    return content[m.end():]


class RecordingApprover:
    """An approver for agent tests: answers ``answer`` and records which tools it was asked about."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def approve(self, tool: Any, call: Any, args: Any) -> bool:
        self.asked.append(call.name)
        return self.answer
