"""Servers that lie or attack (issue 50): a compressed bomb, a body of 100 MB, a body
that never ends, an absurd usage count, a redirect to another origin carrying a secret
header, a Pooling reply with two results for one input. fbi's direct transport bounds
what it reads and where it sends, and every lie is one failed call with its reason,
never gigabytes, a traceback or a number nobody can trust. Memory is measured in a child
process (its peak RSS), so the bound is this process's own, not the suite's."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from json_http import JSONHandler, LoopbackServer

from fbi.providers import ModelClient, ModelRequest

REPLY = {"id": "x", "object": "chat.completion", "model": "judge",
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": '{"score": 3}'}}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 4}}


class Hostile:
    """A loopback server whose reply to a chat request is ``behaviour``'s; it notes
    every request (path and headers) it sees."""

    def __init__(self, behaviour: str, other: Hostile | None = None):
        self.behaviour, self.other, self.seen = behaviour, other, []
        owner = self

        class Handler(JSONHandler):
            def do_POST(self) -> None:
                owner.seen.append((self.path, dict(self.headers)))
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.answer(self)

        self.server = LoopbackServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, handler: JSONHandler) -> None:
        kind = self.behaviour
        if kind == "bomb":  # 1 GB of spaces, gzipped to about a megabyte
            body = gzip.compress(b" " * (1 << 30), compresslevel=9)
            handler.send_response(200)
            handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        elif kind == "huge":  # 100 MB of JSON
            body = json.dumps({**REPLY, "padding": "x" * (100 << 20)}).encode()
            handler.send_json(200, body)
        elif kind == "endless":  # chunked, a chunk a second, forever
            handler.send_response(200)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            try:
                while True:
                    handler.wfile.write(b"1\r\n \r\n")
                    handler.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
        elif kind == "usage":
            handler.send_json(200, {**REPLY, "usage": {"prompt_tokens": 10**21,
                                                       "completion_tokens": 4}})
        elif kind == "redirect-away":
            handler.send_response(307)
            handler.send_header("Location", self.other.url + "/chat/completions")
            handler.end_headers()
        elif kind == "redirect-here":
            if handler.path.endswith("/v2/chat/completions"):
                handler.send_json(200, REPLY)
            else:
                handler.send_response(308)
                handler.send_header("Location", "/v2/chat/completions")
                handler.end_headers()
        elif kind == "two-rewards":
            handler.send_json(200, {"data": [{"index": 0, "data": [0.9]},
                                             {"index": 1, "data": [-3.0]}]})
        else:
            handler.send_json(200, REPLY)

    def __enter__(self) -> Hostile:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def ask(url: str, model: str = "openai/judge", timeout: float = 30.0, **args):
    """One request through the transport fbi picks for ``model`` (no retries)."""
    import asyncio

    client = ModelClient(timeout_s=timeout, probe_first=False)
    request = ModelRequest(model, (("user", "Rate it."),), api_base=url,
                           model_args=tuple(args.items()))

    async def once():
        transport = client.transport_for(request)
        try:
            return await transport.send(client._arguments(request), request.api_base, None)
        finally:
            await transport.aclose()

    return asyncio.run(once())


#: The child's peak resident memory is its VmHWM: a new address space's own high-water
#: mark (``ru_maxrss`` outlives exec, so a child forked from a test process that just
#: built a gigabyte would report the parent's peak).
CHILD = """
import json, re, sys
sys.path.insert(0, {tests!r})
from test_hostile_servers import ask
try:
    ask({url!r}, timeout={timeout})
    outcome = "answered"
except Exception as error:
    outcome = type(error).__name__ + ": " + str(error)
print(json.dumps({{"outcome": outcome,
                   "peak_mb": int(re.search(r"VmHWM:\\s+(\\d+)",
                                            open("/proc/self/status").read())[1]) / 1024}}))
"""


def in_a_child(url: str, timeout: float = 30.0) -> dict:
    code = CHILD.format(tests=str(Path(__file__).parent), url=url, timeout=timeout)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("behaviour, said", [
    ("bomb", "over 16 MB"), ("huge", "over 16 MB"),
])
def test_a_reply_is_read_within_its_size_bound(behaviour, said):
    with Hostile(behaviour) as server:
        found = in_a_child(server.url)
    assert found["outcome"].startswith("BadReply") and said in found["outcome"]
    assert found["peak_mb"] < 400  # (the bomb decompresses to 1 GB; the body is 100 MB)


@pytest.mark.slow
def test_a_body_that_never_ends_is_cut_off_at_the_time_out():
    with Hostile("endless") as server:
        found = in_a_child(server.url, timeout=3)
    assert "answered" not in found["outcome"]
    assert "Timeout" in found["outcome"] or "timeout" in found["outcome"].lower()


def test_an_absurd_usage_count_is_no_reply_and_no_cost():
    from fbi.providers import BadReply

    with Hostile("usage") as server, pytest.raises(BadReply, match="more tokens than"):
        ask(server.url)


def test_no_request_and_no_secret_follow_a_redirect_to_another_origin():
    from fbi.providers import BadReply

    with Hostile("plain") as elsewhere, Hostile("redirect-away", elsewhere) as server, \
            pytest.raises(BadReply, match="another origin"):
        ask(server.url, extra_headers={"X-Api-Key": "sk-secret-header"})
    assert elsewhere.seen == []  # nothing was sent there, the secret header least of all
    assert server.seen[0][1]["X-Api-Key"] == "sk-secret-header"


def test_a_redirect_within_the_server_is_followed():
    with Hostile("redirect-here") as server:
        reply = ask(server.url)
    assert reply.text == '{"score": 3}'
    assert [path for path, _ in server.seen] == ["/v1/chat/completions",
                                                 "/v2/chat/completions"]


def test_a_pooling_reply_with_two_results_for_one_input_is_no_reward():
    from fbi.providers import BadReply

    with Hostile("two-rewards") as server, pytest.raises(BadReply, match="2 results"):
        ask(server.url, model="reward/rm")


@pytest.mark.slow
def test_the_probe_call_is_bounded_the_same_way():
    """The synchronous probe (httpx) reads within the same bounds."""
    from fbi.providers import BadReply, HTTPTransport

    with Hostile("bomb") as server, pytest.raises(BadReply, match="over 16 MB"):
        HTTPTransport(30).send_now({"model": "openai/judge", "messages": []}, server.url,
                                   None)
    with Hostile("redirect-away", Hostile("plain")) as server, \
            pytest.raises(BadReply, match="another origin"):
        HTTPTransport(30).send_now({"model": "openai/judge", "messages": []}, server.url,
                                   None)
