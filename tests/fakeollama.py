"""A real HTTP server on 127.0.0.1 that answers like Ollama or an online OpenAI-compatible service.

It speaks Ollama's ``GET /api/tags`` (when ``ollama``) and the OpenAI ``GET /v1/models``; with
``key`` set, ``/v1/models`` answers 401 with an OpenAI-style error unless the bearer key matches.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class FakeModelServer:
    def __init__(self, models: tuple[str, ...] = (), ollama: bool = True, key: str = "") -> None:
        self.models = models
        self.seen_keys: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                auth = self.headers.get("Authorization", "")
                fake.seen_keys.append(auth)
                if self.path == "/api/tags" and ollama:
                    self._send(200, {"models": [{"name": m, "model": m} for m in fake.models]})
                elif self.path == "/v1/models":
                    if key and auth != f"Bearer {key}":
                        self._send(401, {"error": {"message": "Incorrect API key provided: wr***ey.",
                                                   "type": "invalid_request_error"}})
                        return
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
                else:
                    self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


_held: list[object] = []


def closed_port() -> int:
    """A port nothing listens on: bound and never listened on, and held until the process ends,
    so a server started meanwhile (in this test or a parallel worker) cannot take it. A
    connection there is refused at once."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _held.append(s)
    return int(s.getsockname()[1])
