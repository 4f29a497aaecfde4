"""A real HTTP server on 127.0.0.1 speaking Anthropic's Messages API and its Message
Batches API, for the official ``anthropic`` SDK (and litellm's Anthropic provider)
pointed at it with ``base_url``.

* ``POST /v1/messages``: a reply from a script (``tests/openai_server.py``'s judge: a
  hash of the prompt), as Anthropic shapes it (content blocks, usage);
* ``POST /v1/messages/batches``: a batch of ``{custom_id, params}`` requests; its
  ``processing_status`` goes from ``in_progress`` to ``ended`` after ``steps`` retrieves;
  ``GET .../{id}``, ``GET .../{id}/results`` (JSONL, from ``results_url``), ``GET
  /v1/messages/batches`` (newest first, ``after_id`` paging), ``POST .../{id}/cancel``.

Faults for tests: ``forge_next`` (a forged line for a request, before its real one),
``corrupt_next`` (lines that are not replies), ``expire_next`` (every request expired),
``error_next`` (requests that errored).
"""

from __future__ import annotations

import json
import threading
from urllib.parse import parse_qs, urlparse

from json_http import JSONHandler, LoopbackServer
from openai_server import hashed_verdict_script


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def reply_text(params: dict) -> str:
    """The judge's reply to a Messages request: the OpenAI-protocol judge script on the
    same texts (system first), so live and batch replies agree."""
    messages = ([{"role": "system", "content": _text(params["system"])}]
                if params.get("system") else [])
    messages += [{"role": m["role"], "content": _text(m["content"])}
                 for m in params.get("messages", [])]
    return hashed_verdict_script({"messages": messages})


def message(params: dict) -> dict:
    text = reply_text(params)
    prompt = sum(len(_text(m["content"]).split()) for m in params.get("messages", []))
    return {"id": "msg_test", "type": "message", "role": "assistant",
            "model": params.get("model", "claude"), "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": prompt, "output_tokens": len(text.split())}}


class AnthropicServer:
    def __init__(self, steps: int = 2):
        self.steps = steps
        self.batches: dict[str, dict] = {}
        self.order: list[str] = []
        self.live_requests: list[dict] = []
        self.forge_next: str | None = None
        self.usage_next: object = None  # the next batch's every usage count is this
        self.counts_as: object = None  # request_counts' "succeeded" shown as this
        self.corrupt_next = 0
        self.expire_next = False
        self.error_next = 0
        self.lock = threading.Lock()
        server = self

        class Handler(JSONHandler):
            def do_POST(self) -> None:
                path = urlparse(self.path).path
                if path == "/v1/messages":
                    params = self.json_body()
                    server.live_requests.append(params)
                    return self.send_json(200, message(params))
                if path == "/v1/messages/batches":
                    return self.send_json(200, server.create(self.json_body()["requests"]))
                if path.endswith("/cancel"):
                    batch_id = path.split("/")[-2]
                    with server.lock:
                        batch = server.batches.get(batch_id)
                        if batch is None:
                            return self.send_json(404, _error("not_found_error", "no batch"))
                        if batch["processing_status"] == "in_progress":
                            batch["processing_status"] = "canceling"
                            batch["cancel"] = True
                    return self.send_json(200, server.public(batch_id))
                return self.send_json(404, _error("not_found_error", path))

            def do_GET(self) -> None:
                url = urlparse(self.path)
                parts = url.path.rstrip("/").split("/")
                if url.path.rstrip("/") == "/v1/messages/batches":
                    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                    return self.send_json(200, server.listing(query))
                if len(parts) == 5 and parts[3] == "batches":
                    if parts[4] not in server.batches:
                        return self.send_json(404, _error("not_found_error", "no batch"))
                    return self.send_json(200, server.retrieve(parts[4]))
                if len(parts) == 6 and parts[5] == "results":
                    return self.send_json(200, server.results(parts[4]),
                                      "application/binary")
                return self.send_json(404, _error("not_found_error", url.path))

        self._httpd = LoopbackServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}"

    def create(self, requests: list[dict]) -> dict:
        with self.lock:
            batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
            self.batches[batch_id] = {"requests": requests, "retrieves": 0,
                                      "processing_status": "in_progress", "cancel": False}
            self.order.append(batch_id)
        return self.public(batch_id)

    def retrieve(self, batch_id: str) -> dict:
        with self.lock:
            batch = self.batches[batch_id]
            batch["retrieves"] += 1
            due = batch["retrieves"] >= self.steps or \
                batch["processing_status"] == "canceling"
            if due and batch["processing_status"] != "ended":
                batch["processing_status"] = "ended"
                batch["lines"] = self._answer(batch)
        return self.public(batch_id)

    def _answer(self, batch: dict) -> bytes:
        lines = []
        expire, self.expire_next = self.expire_next, False
        errors, self.error_next = self.error_next, 0
        corrupt, self.corrupt_next = self.corrupt_next, 0
        forge, self.forge_next = self.forge_next, None
        usage, self.usage_next = self.usage_next, None
        for number, request in enumerate(batch["requests"]):
            custom_id = request["custom_id"]
            if forge and number == 0:
                lines.append(json.dumps({"custom_id": custom_id, "result": {
                    "type": "succeeded", "message": {**message(request["params"]),
                                                     "content": [{"type": "text",
                                                                  "text": forge}]}}}))
            if batch["cancel"]:
                result = {"type": "canceled"}
            elif expire:
                result = {"type": "expired"}
            elif number < errors:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": "bad request"}}}
            elif number < errors + corrupt:
                lines.append("{not json" if number % 2 else json.dumps([custom_id]))
                continue
            else:
                result = {"type": "succeeded", "message": message(request["params"])}
                if usage is not None:
                    result["message"]["usage"] = {"input_tokens": usage,
                                                  "output_tokens": usage}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return ("\n".join(lines) + "\n").encode()

    def public(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        ended = batch["processing_status"] == "ended"
        count = len(batch["requests"])
        return {"id": batch_id, "type": "message_batch",
                "processing_status": batch["processing_status"],
                "request_counts": {"processing": 0 if ended else count,
                                   "succeeded": (count if ended else 0)
                                   if self.counts_as is None else self.counts_as,
                                   "errored": 0,
                                   "canceled": 0, "expired": 0},
                "ended_at": "2026-11-26T00:00:00Z" if ended else None,
                "created_at": "2026-11-26T00:00:00Z",
                "expires_at": "2026-11-27T00:00:00Z", "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results"
                if ended else None}

    def results(self, batch_id: str) -> bytes:
        return self.batches[batch_id].get("lines", b"")

    def listing(self, query: dict) -> dict:
        newest = list(reversed(self.order))
        if query.get("after_id") in newest:
            newest = newest[newest.index(query["after_id"]) + 1:]
        page = newest[:int(query.get("limit", 20))]
        return {"data": [self.public(b) for b in page], "has_more": len(newest) > len(page),
                "first_id": page[0] if page else None, "last_id": page[-1] if page else None}

    def __enter__(self) -> AnthropicServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _error(kind: str, text: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": text}}
