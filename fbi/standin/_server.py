"""The stand-in's server: the OpenAI chat-completions protocol (``POST
/v1/chat/completions``, ``GET /v1/models``) over the standard library's HTTP server, on
this machine only. A reply is `chat_completion` of `reply_text`: the shape vLLM and
OpenAI answer in, with usage counted as words."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fbi.standin._replies import reply_text

#: The largest request body read (a judge prompt is tens of kilobytes).
MAX_REQUEST_BYTES = 32 * 1024 * 1024


def chat_completion(text: str, request: dict[str, Any],
                    message: dict[str, Any] | None = None,
                    choice: dict[str, Any] | None = None,
                    usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAI chat completion replying ``text`` to ``request``; ``message``,
    ``choice`` and ``usage`` add fields (a reasoning model's thinking, log-probabilities,
    token details)."""
    prompt_tokens = sum(len(str(m.get("content") or "").split())
                        for m in request.get("messages") or () if isinstance(m, dict))
    completion_tokens = len(text.split()) + int((usage or {}).get("extra_tokens", 0))
    details = {k: v for k, v in (usage or {}).items() if k != "extra_tokens"}
    return {
        "id": "chatcmpl-standin", "object": "chat.completion", "created": 0,
        "model": request.get("model", "stand-in"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text, **(message or {})},
                     **(choice or {})}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens, **details}}


class StandIn:
    """The stand-in judge's server on ``host:port`` (0: any free port); ``url`` is what
    ``--api-base`` takes. ``with StandIn() as server:`` serves on a thread; `serve`
    blocks."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1",
                 answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
        answer = answer or (lambda request: chat_completion(reply_text(request), request))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass  # a quiet server: the commands it answers print what matters

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [
                        {"id": "stand-in", "object": "model", "owned_by": "fbi"}]})
                return self._send(404, {"error": {"message": f"no {self.path} here",
                                                  "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if not self.path.rstrip("/").endswith("/chat/completions") or \
                        not 0 <= length <= MAX_REQUEST_BYTES:
                    return self._send(404, {"error": {"message": f"no {self.path} here",
                                                      "type": "not_found"}})
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = None
                if not isinstance(request, dict):
                    return self._send(400, {"error": {"message": "the body is not a JSON "
                                                      "object", "type": "invalid_request"}})
                return self._send(200, answer(request))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a time-out): nothing to answer

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024  # the default backlog of 5 resets connections

        self._httpd = Server((host, port), Handler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def serve(self) -> None:
        """Serve until the process is stopped (Ctrl-C or SIGTERM)."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> StandIn:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
