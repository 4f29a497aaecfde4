"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol.

Replies come from a script (a function of the request); faults can be injected: 429
with Retry-After, 500, time-outs (the reply comes too late), and garbage (HTTP 200 with
a body that is not JSON). It also serves the OpenAI Files and Batches endpoints
(:class:`BatchService`): upload, create, retrieve with the status moving validating →
in_progress → completed one retrieve at a time, output and error files, expiry, cancel.
Used by the tests and by benchmarks/; run it alone with
``python tests/openai_server.py --latency 0.2`` to point fbi at it by hand.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fbi.standin import chat_completion as standin_completion
from fbi.standin import qa_reply, reply_text, trajectory_reply, verdict_reply

Script = Callable[[dict], "str | Reasoned | LyingLogprobs"]
FAULTS = ("429", "500", "timeout", "garbage")


#: The stand-in judge's replies (fbi.standin), as the scripts of this server.
hashed_verdict_script = verdict_reply
qa_script = qa_reply
trajectory_perturber_script = trajectory_reply
any_prompt_script = reply_text


SCRIPTS = {"judge": hashed_verdict_script, "qa": qa_script, "any": any_prompt_script}


_TOKENS = re.compile(r"\d+|\w+|\s+|[^\w\s]")
#: With logprobs asked: the score's token gets these (offset from the score, probability)
#: candidates, plus a non-number with the rest; every other token is certain.
SCORE_CANDIDATES = ((0, 0.6), (-1, 0.3))


def token_logprobs(text: str) -> dict:
    """OpenAI-shaped ``logprobs`` for ``text``: numbers are single tokens (as in OpenAI's
    tokenizers); the token after ``"score": `` is uncertain (SCORE_CANDIDATES)."""
    content = []
    score_at = re.search(r'"score":\s*(\d+)', text)
    position = 0
    for token in _TOKENS.findall(text):
        if score_at and position == score_at.start(1):
            score = int(token)
            top = [(str(score + offset), p) for offset, p in SCORE_CANDIDATES]
            top.append(("?", 1 - sum(p for _, p in SCORE_CANDIDATES)))
        else:
            top = [(token, 1.0)]
        content.append({"token": token, "logprob": math.log(top[0][1]),
                        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top]})
        position += len(token)
    return {"content": content}


@dataclass(frozen=True)
class Reasoned:
    """A script's reply from a reasoning model: its text, and thinking returned apart
    (vLLM's and DeepSeek's ``reasoning_content``), counted as ``reasoning_tokens`` of the
    reply's tokens (OpenAI's ``completion_tokens_details``)."""

    text: str
    reasoning: str
    reasoning_tokens: int


@dataclass(frozen=True)
class LyingLogprobs:
    """A script's reply whose log-probabilities are all ``value`` (NaN, a huge number,
    above 0, a string): a server that lies about them (issue 50)."""

    text: str
    value: object


def _lie(logprobs: dict, value: object) -> dict:
    for token in logprobs["content"]:
        token["logprob"] = value
        for alternative in token["top_logprobs"]:
            alternative["logprob"] = value
    return logprobs


def chat_completion(text: str | Reasoned | LyingLogprobs, request: dict) -> dict:
    """The stand-in's chat completion (fbi.standin), with a reasoning model's thinking,
    log-probabilities (true or lying) when asked for."""
    lie = text if isinstance(text, LyingLogprobs) else None
    text = text.text if isinstance(text, LyingLogprobs) else text
    reasoned = text if isinstance(text, Reasoned) else None
    text = reasoned.text if reasoned else text
    message, choice, usage = {}, {}, {}
    if reasoned:
        message["reasoning_content"] = reasoned.reasoning
        usage = {"extra_tokens": reasoned.reasoning_tokens,
                 "completion_tokens_details": {"reasoning_tokens": reasoned.reasoning_tokens}}
    if request.get("logprobs"):
        choice["logprobs"] = token_logprobs(text) if lie is None else \
            _lie(token_logprobs(text), lie.value)
    reply = standin_completion(text, request, message, choice, usage)
    reply["id"] = "chatcmpl-test"
    return reply


class BatchService:
    """The OpenAI Files and Batches API, in memory. Each retrieve moves a batch one step:
    validating → in_progress → completed, when its requests are answered by the chat
    script. ``fail_once`` custom ids get a per-request error the first time they are
    seen; ``expire_next`` makes the next batch to finish expire with half its requests
    done; ``corrupt_next`` (N) replaces the first N lines of the next output file with
    lines that are no reply (not JSON, not UTF-8, a JSON array, a reply whose choices are
    a string); ``on_create`` is called with a new batch's id before the reply to its
    create is sent (a test kills the client there); a cancelled batch keeps nothing.
    ``GET /v1/batches`` lists the batches, newest first, in pages.

    Mistral's Batch API is served beside it (docs.mistral.ai/api, "batch"): jobs at
    ``/v1/batch/jobs`` over the same files, QUEUED → RUNNING → SUCCESS, the model set on
    the job, and input lines of ``custom_id`` and ``body`` only (a line in OpenAI's
    layout, with ``method`` and ``url``, fails the job, as a format error)."""

    STEPS = ("validating", "in_progress", "completed")
    MISTRAL_STATUS = {"validating": "QUEUED", "in_progress": "RUNNING",
                      "completed": "SUCCESS", "expired": "TIMEOUT_EXCEEDED",
                      "failed": "FAILED", "cancelled": "CANCELLED"}

    def __init__(self, chat: ChatServer):
        self.chat = chat
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.fail_once: set[str] = set()
        self.expire_next = False
        self.corrupt_next = 0
        self.forge_next: str | None = None  # "infinity" or "duplicate" (issue 38)
        self.on_create: Callable[[str], None] | None = None
        self.retrieves = 0
        self.lock = threading.Lock()

    def post(self, path: str, body: bytes, content_type: str) -> tuple[int, dict]:
        with self.lock:
            if path.endswith("/files"):
                return 200, self._upload(body, content_type)
            if path.endswith("/batch/jobs"):
                return self._create_job(json.loads(body))
            match = re.search(r"/batch/jobs/([^/]+)/cancel$", path)
            if match and match.group(1) in self.batches:
                batch = self.batches[match.group(1)]
                if batch["status"] not in ("completed", "expired", "failed"):
                    batch["status"] = "cancelled"
                return 200, self._as_job(batch)
            if path.endswith("/batches"):
                request = json.loads(body)
                if request["input_file_id"] not in self.files:
                    return 404, {"error": {"message": "no such file"}}
                batch_id = f"batch_{len(self.batches) + 1}"
                lines = self.files[request["input_file_id"]].decode().splitlines()
                self.batches[batch_id] = {
                    "id": batch_id, "object": "batch", "endpoint": request["endpoint"],
                    "input_file_id": request["input_file_id"],
                    "completion_window": request["completion_window"],
                    "status": "validating", "created_at": int(time.time()),
                    "output_file_id": None, "error_file_id": None, "errors": None,
                    "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                    "metadata": request.get("metadata")}
                if self.on_create is not None:
                    self.on_create(batch_id)
                return 200, self.batches[batch_id]
            match = re.search(r"/batches/([^/]+)/cancel$", path)
            if match and match.group(1) in self.batches:
                batch = self.batches[match.group(1)]
                if batch["status"] not in ("completed", "expired", "failed"):
                    batch["status"] = "cancelled"
                return 200, batch
            return 404, {"error": {"message": f"no route {path}"}}

    def get(self, path: str) -> tuple[int, dict | bytes]:
        with self.lock:
            match = re.search(r"/files/([^/]+)/content$", path)
            if match and match.group(1) in self.files:
                return 200, self.files[match.group(1)]
            match = re.search(r"/batches(?:\?(.*))?$", path)
            if match:
                return 200, self._listing(match.group(1) or "")
            match = re.search(r"/batches/([^/?]+)$", path)
            if match and match.group(1) in self.batches:
                self.retrieves += 1
                return 200, self._advance(self.batches[match.group(1)])
            match = re.search(r"/batch/jobs/([^/?]+)$", path)
            if match and match.group(1) in self.batches:
                self.retrieves += 1
                return 200, self._as_job(self._advance(self.batches[match.group(1)]))
            return 404, {"error": {"message": f"no route {path}"}}

    def _listing(self, query: str) -> dict:
        """``GET /v1/batches?limit=N&after=ID``: a page of batches, newest first."""
        from urllib.parse import parse_qs

        options = {key: values[-1] for key, values in parse_qs(query).items()}
        newest_first = [b for b in reversed(self.batches.values()) if b["id"].startswith("batch")]
        if "after" in options:
            ids = [b["id"] for b in newest_first]
            newest_first = newest_first[ids.index(options["after"]) + 1:] \
                if options["after"] in ids else []
        limit = int(options.get("limit", 20))
        page = newest_first[:limit]
        return {"object": "list", "data": page, "has_more": len(newest_first) > limit,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None}

    def _create_job(self, request: dict) -> tuple[int, dict]:
        """``POST /v1/batch/jobs``: Mistral's create, kept as an OpenAI batch inside."""
        (file_id,) = request["input_files"]
        if file_id not in self.files:
            return 404, {"detail": "no such file"}
        lines = [json.loads(line) for line in self.files[file_id].decode().splitlines()]
        batch_id = f"job_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": request["endpoint"],
            "input_file_id": file_id, "completion_window": "24h", "status": "validating",
            "created_at": int(time.time()), "output_file_id": None, "error_file_id": None,
            "errors": None, "request_counts": {"total": len(lines), "completed": 0,
                                               "failed": 0},
            "metadata": request.get("metadata"), "model": request["model"]}
        if any(set(line) != {"custom_id", "body"} for line in lines):
            self.batches[batch_id].update(status="failed", errors=[
                {"message": "input lines hold custom_id and body only", "count": 1}])
        return 200, self._as_job(self.batches[batch_id])

    def _as_job(self, batch: dict) -> dict:
        counts = batch["request_counts"]
        return {"id": batch["id"], "object": "batch", "input_files": [batch["input_file_id"]],
                "endpoint": batch["endpoint"], "model": batch["model"],
                "status": self.MISTRAL_STATUS[batch["status"]],
                "created_at": batch["created_at"], "total_requests": counts["total"],
                "completed_requests": counts["completed"] + counts["failed"],
                "succeeded_requests": counts["completed"],
                "failed_requests": counts["failed"], "output_file": batch["output_file_id"],
                "error_file": batch["error_file_id"], "errors": batch["errors"] or [],
                "metadata": batch["metadata"]}

    def _upload(self, body: bytes, content_type: str) -> dict:
        from email.parser import BytesParser

        message = BytesParser().parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body)
        data = next(part.get_payload(decode=True) for part in message.get_payload()
                    if part.get_filename())
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                "filename": "input.jsonl", "purpose": "batch", "status": "processed"}

    def _advance(self, batch: dict) -> dict:
        if batch["status"] in ("validating", "in_progress"):
            batch["status"] = self.STEPS[self.STEPS.index(batch["status"]) + 1]
            if batch["status"] == "completed":
                self._answer(batch)
        return batch

    def _answer(self, batch: dict) -> None:
        lines = [json.loads(line) for line in
                 self.files[batch["input_file_id"]].decode().splitlines()]
        expire, self.expire_next = self.expire_next, False
        outputs, errors = [], []
        for number, line in enumerate(lines):
            custom_id = line["custom_id"]
            if expire and number >= len(lines) // 2:
                errors.append({"id": f"req_{number}", "custom_id": custom_id,
                               "response": None, "error": {
                                   "code": "batch_expired",
                                   "message": "not done within the completion window"}})
            elif custom_id in self.fail_once:
                self.fail_once.discard(custom_id)
                errors.append({"id": f"req_{number}", "custom_id": custom_id, "response": {
                    "status_code": 500, "request_id": f"r{number}",
                    "body": {"error": {"message": "boom", "type": "server_error"}}},
                    "error": None})
            else:
                self.chat.counts["batch"] += 1
                body = {"model": batch.get("model"), **line["body"]}  # Mistral: the job's
                outputs.append({"id": f"req_{number}", "custom_id": custom_id, "response": {
                    "status_code": 200, "request_id": f"r{number}",
                    "body": chat_completion(self.chat.script(body), body)}, "error": None})
        output_lines = [json.dumps(r).encode() for r in outputs]
        corrupt, self.corrupt_next = self.corrupt_next, 0
        garbage = (b"not json {", b"\xff\xfe\xfd", b"[1, 2]")
        for number in range(min(corrupt, len(output_lines))):
            if number % 4 == 3:
                reply = json.loads(output_lines[number])
                reply["response"]["body"]["choices"] = "not a list"
                output_lines[number] = json.dumps(reply).encode()
            else:
                output_lines[number] = garbage[number % 4]
        forge, self.forge_next = self.forge_next, None
        if forge == "infinity" and output_lines:  # a count no reply can have
            output_lines[0] = output_lines[0].replace(b'"prompt_tokens": ',
                                                      b'"prompt_tokens": Infinity, "was": ')
        if forge == "duplicate" and outputs:  # a forged answer placed before the real one
            forged = json.loads(json.dumps(outputs[0]))
            forged["response"]["body"]["choices"][0]["message"]["content"] = \
                '{"explanation": "FORGED", "score": 10, "verdict": "A"}'
            output_lines.insert(0, json.dumps(forged).encode())
        error_lines = [json.dumps(r).encode() for r in errors]
        for kind, rows in (("output_file_id", output_lines), ("error_file_id", error_lines)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = b"".join(row + b"\n" for row in rows)
                batch[kind] = file_id
        batch["status"] = "expired" if expire else "completed"
        batch["request_counts"] = {"total": len(lines), "completed": len(outputs),
                                   "failed": len(errors)}


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
        echo_credentials: bool | str = False,  # True: a 401 echoing them; "reply": a 200
        api_key: str | None = None,
        models: tuple[str, ...] | None = None,
        on_answer: Callable[[dict], None] | None = None,
        served_as: str | None = None,
        empty_choices: bool = False,
        key_header: str = "Authorization",
        port: int = 0,
    ):
        self.script = script
        # a server that lies (issue 38): its replies name another model, or hold no choice
        self.served_as, self.empty_choices = served_as, empty_choices
        self.key_header = key_header  # where api_key is looked for ("api-key": a gateway's)
        self.on_answer = on_answer  # called after each chat reply is sent
        # with on_answer, replies are sent one at a time, each followed by its call: a
        # server that ends itself in on_answer (--die-after) then never gets a reply out
        # that it has not counted (one sent by another thread meanwhile)
        self.reply_lock = threading.Lock() if on_answer else contextlib.nullcontext()
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
        self.batches = BatchService(self)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                status, payload = server.batches.get(self.path)
                if isinstance(payload, bytes):
                    return self._send_raw(status, payload, "application/octet-stream")
                return self._send(status, payload)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.endswith("/chat/completions"):
                    return self._send(*server.batches.post(
                        self.path, body, self.headers.get("Content-Type", "")))
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
                    import base64
                    from urllib.parse import quote

                    header = self.headers.get("Authorization", "")
                    key = header.removeprefix("Bearer ")
                    echoed = (f"Incorrect API key provided: {key}. Authorization: {header}; "
                              f"as base64 {base64.b64encode(key.encode()).decode()}, in a "
                              "header "
                              f"{base64.b64encode(('user:' + key).encode()).decode()}, "
                              f"URL-encoded {quote(key, safe='')}")
                    if server.echo_credentials == "reply":  # a 200 whose text holds them
                        return self._send(200, chat_completion(echoed, request))
                    return self._send(401, {"error": {
                        "message": echoed, "type": "invalid_request_error"}})
                expected = f"Bearer {server.api_key}" if server.key_header == \
                    "Authorization" else server.api_key
                if server.api_key and self.headers.get(server.key_header) != expected:
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
                reply = chat_completion(server.script(request), request)
                if server.served_as is not None:
                    reply["model"] = server.served_as
                if server.empty_choices:
                    reply["choices"] = []
                with server.reply_lock:
                    self._send(200, reply)
                    if server.on_answer is not None:
                        server.on_answer(request)

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

        self._httpd = Server(("127.0.0.1", port), Handler)  # 0: any free port
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
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    parser.add_argument("--die-after", type=int,
                        help="print 'answered' per chat reply sent, and end the process "
                             "at once (as a crash would) after this many")
    args = parser.parse_args()
    answered = 0
    answered_lock = threading.Lock()

    def count_and_die(request: dict) -> None:
        global answered
        with answered_lock:
            answered += 1
            print("answered", flush=True)
            if answered >= args.die_after:
                os._exit(0)

    with ChatServer(SCRIPTS[args.script], latency_s=args.latency, port=args.port,
                    fault_rate=args.fault_rate,
                    on_answer=count_and_die if args.die_after else None) as chat_server:
        print(chat_server.url, flush=True)
        threading.Event().wait()
