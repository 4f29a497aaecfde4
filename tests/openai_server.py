"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol.

Replies come from a script (a function of the request); faults can be injected: 429
with Retry-After, 500, time-outs (the reply comes too late), and garbage (HTTP 200 with
a body that is not JSON). Used by the tests and by benchmarks/; run it alone with
``python tests/openai_server.py --latency 0.2`` to point fbi at it by hand.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Script = Callable[[dict], str]
FAULTS = ("429", "500", "timeout", "garbage")


def hashed_verdict_script(request: dict) -> str:
    """A deterministic judge: the verdict is a hash of the prompt, in the asked format."""
    prompt = "\n".join(m.get("content") or "" for m in request["messages"])
    digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    if '"verdict"' in prompt:
        verdict = ("A", "B", "tie", "both_bad")[digest % 4]
        return json.dumps({"explanation": "Compared both answers.", "verdict": verdict})
    ranges = re.findall(r"an integer from (\d+) to (\d+)", prompt)
    if not ranges:  # not a judge prompt (fbi's probe call)
        return "OK"
    low, high = (int(x) for x in ranges[-1])
    score = low + digest % (high - low + 1)
    return json.dumps({"explanation": "Checked the answer.", "score": score})


def qa_script(request: dict) -> str:
    """A QA model for the robustness suites: rewrites on request, else a fixed answer
    (the first option for multiple choice)."""
    prompt = "\n".join(m.get("content") or "" for m in request["messages"])
    if "Rewrite the question" in prompt:
        question = prompt.split("Question: ", 1)[-1].split("\n", 1)[0]
        return json.dumps({"rewrites": [f"{question} (put another way {n})"
                                        for n in range(1, 4)]})
    if re.search(r"^A\. ", prompt, re.M):
        return json.dumps({"answer": "A", "confidence": 60})
    return json.dumps({"answer": "Paris", "confidence": 60})


SCRIPTS = {"judge": hashed_verdict_script, "qa": qa_script}


class ChatServer:
    """Start with ``with ChatServer(...) as server:``; ``server.url`` is the api_base."""

    def __init__(
        self,
        script: Script = hashed_verdict_script,
        fault_rate: float = 0.0,
        faults: tuple[str, ...] = FAULTS,
        latency_s: float = 0.0,
        timeout_delay_s: float = 3.0,
        retry_after: str = "0",
        seed: int = 0,
        echo_credentials: bool = False,
        api_key: str | None = None,
        models: tuple[str, ...] | None = None,
    ):
        self.script = script
        self.fault_rate = fault_rate
        self.faults = faults
        self.latency_s = latency_s
        self.timeout_delay_s = timeout_delay_s
        self.retry_after = retry_after
        self.rng = random.Random(seed)
        # a careless provider: every request is refused with 401 and a body that repeats
        # the Authorization header it received
        self.echo_credentials = echo_credentials
        self.api_key = api_key  # when set, any other Authorization gets 401
        self.models = models  # when set, any other model gets 404 model_not_found
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()  # "ok", "429", "500", "timeout", "garbage"
        self.authorization_seen: set[str] = set()
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = json.loads(body or b"{}")
                with server.lock:
                    server.authorization_seen.add(self.headers.get("Authorization", ""))
                    fault = None
                    if server.fault_rate and server.rng.random() < server.fault_rate:
                        fault = server.rng.choice(server.faults)
                    server.counts[fault or "ok"] += 1
                    if fault is None:
                        server.requests.append(request)
                if server.echo_credentials:
                    header = self.headers.get("Authorization", "")
                    return self._send(401, {"error": {
                        "message": f"Incorrect API key provided: {header}. Authorization: "
                                   f"{header}", "type": "invalid_request_error"}})
                if server.api_key and self.headers.get("Authorization") != \
                        f"Bearer {server.api_key}":
                    return self._send(401, {"error": {"message": "Incorrect API key provided",
                                                      "type": "invalid_request_error",
                                                      "code": "invalid_api_key"}})
                if server.models is not None and request.get("model") not in server.models:
                    return self._send(404, {"error": {
                        "message": f"The model `{request.get('model')}` does not exist",
                        "type": "invalid_request_error", "code": "model_not_found"}})
                if server.latency_s:
                    time.sleep(server.latency_s)
                if fault == "timeout":
                    time.sleep(server.timeout_delay_s)
                if fault == "429":
                    return self._send(429, {"error": {"message": "rate limited",
                                                      "type": "rate_limit"}},
                                      {"Retry-After": server.retry_after})
                if fault == "500":
                    return self._send(500, {"error": {"message": "boom", "type": "server"}})
                if fault == "garbage":
                    return self._send_raw(200, b"<html>not json at all", "text/html")
                text = server.script(request)
                prompt_tokens = sum(len((m.get("content") or "").split())
                                    for m in request.get("messages", []))
                return self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": request.get("model", "test"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": prompt_tokens,
                              "completion_tokens": len(text.split()),
                              "total_tokens": prompt_tokens + len(text.split())},
                })

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                self._send_raw(status, json.dumps(payload).encode(), "application/json",
                               headers)

            def _send_raw(self, status, body: bytes, content_type: str, headers=None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a time-out): nothing to answer

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024  # the default backlog of 5 resets connections

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--script", choices=sorted(SCRIPTS), default="judge")
    args = parser.parse_args()
    with ChatServer(SCRIPTS[args.script], latency_s=args.latency,
                    fault_rate=args.fault_rate) as chat_server:
        print(chat_server.url, flush=True)
        threading.Event().wait()
