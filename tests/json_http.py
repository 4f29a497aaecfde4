"""What the loopback JSON servers of the tests share: a handler that reads and sends JSON
quietly, and a threaded server that does not reset connections under load."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JSONHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def send_json(self, status: int, payload, content_type: str = "application/json"
                  ) -> None:
        """``payload`` as JSON (bytes as they are)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def json_body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")


class LoopbackServer(ThreadingHTTPServer):
    request_queue_size = 128  # (5, the default, resets connections under load)
    daemon_threads = True
