"""fbi's own HTTP client for the OpenAI chat-completions protocol, and the reading of that
protocol's replies (live, and in a provider's batch file).

* [`HTTPTransport`][fbi.providers.HTTPTransport] speaks the OpenAI chat-completions protocol
  itself: the protocol vLLM, SGLang, TGI, llama.cpp's server, Ollama and OpenAI serve. fbi uses it
  for ``openai/NAME`` and ``hosted_vllm/NAME`` with ``--api-base``
  ([`direct`][fbi.providers.direct]): a team driving a pool of its own servers is then limited by
  the servers, not by a general client's per-call work (issue 39;
  ``benchmarks/transport_throughput.py``). Its calls go out on aiohttp: httpx's connection pool
  slows as requests wait for a connection (measured: a raw httpx loop made 58 calls/s at
  concurrency 256 where a raw aiohttp loop made 992, the server allowing 1,280); its one
  synchronous call, the probe, on httpx;
* [`LitellmTransport`][fbi.providers.LitellmTransport] (`_litellm`) sends everything
  else through litellm, for its providers.

Both return a [`ModelResponse`][fbi.providers.ModelResponse], and both refuse a reply
that is not one: no choices, a usage that is no count, or (HTTP) a body that is not JSON
([`BadReply`][fbi.providers.BadReply], retried); the HTTP transport also refuses a reply
served by another model than the one asked for ([`WrongModel`][fbi.providers.WrongModel]:
a server of a pool serving something else is routed around, not recorded). Everything
above them — the cache, retries, the pool, redaction, records — is the model client's
([`ModelClient`][fbi.providers.ModelClient]), the same for both.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from fbi.providers._errors import BadReply, WrongModel, http_error
from fbi.providers._logprobs import token_logprobs_of
from fbi.providers._prices import cost_of
from fbi.providers._registry import (
    HEADER_ARGS,
    Provider,
    register_provider,
    served_name,
)
from fbi.providers._response import ModelResponse, token_count
from fbi.providers._wire import BoundedHTTP, RawResponse


def reply_of(body: Any, asked: str | None = None, server: str | None = None) -> ModelResponse:
    """A chat-completions body (a dict) as a
    [`ModelResponse`][fbi.providers.ModelResponse]; BadReply when it is not one,
    WrongModel when ``asked`` is given and the body names another model (see
    [`same_model`][fbi.providers.same_model])."""
    if not isinstance(body, dict):
        raise BadReply("the reply is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadReply("the reply has no choices")
    served = body.get("model")
    if served is not None and not isinstance(served, str):
        raise BadReply(f"the reply's model {served!r} is not a name")
    # a server that names no model (an empty name) cannot be told from one serving
    # another; one that leaves the field out is taken at its word
    if asked is not None and served is not None and not same_model(asked, served):
        raise WrongModel(asked, served, server)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    text = message.get("content")
    if text is not None and not isinstance(text, str):
        raise BadReply("the reply's content is not text")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return ModelResponse.received(
        text=text or "", prompt_tokens=token_count(usage, "prompt_tokens"),
        completion_tokens=token_count(usage, "completion_tokens"),
        finish_reason=choice.get("finish_reason") if isinstance(
            choice.get("finish_reason"), str) else None,
        served_by=served if isinstance(served, str) else None,
        token_logprobs=token_logprobs_of(choice),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        reasoning_tokens=token_count(details, "reasoning_tokens")
        if isinstance(details, dict) else 0)


def same_model(asked: str, served: str) -> bool:
    """Whether a reply served by ``served`` answers a request for ``asked``: the same name
    (case aside, any provider prefix dropped), a dated release of it
    (``gpt-4o-2024-08-06``, ``gpt-4-0613``, ``claude-3-5-sonnet@20240620``), its
    ``latest`` tag (``llama3:latest``), or the same file (``/models/llama-3``). A name that
    merely starts like it (``llama-3-70b`` for ``llama-3``, ``gpt-4o-mini`` for
    ``gpt-4o``) is another model."""
    a, s = served_name(asked).casefold(), served.casefold()
    if a == s or s.endswith("/" + a) or a.endswith("/" + s):
        return True
    return s.startswith(a) and _RELEASE.fullmatch(s[len(a):]) is not None


#: What may follow a model's name in the name of one of its releases: a date
#: (-2024-08-06, -20240806, -0613, @20240620), a version (Gemini's -001) or the latest
#: tag (:latest, -latest).
_RELEASE = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4})|[-:@]latest")


# ------------------------------------------------------------------ direct HTTP


class HTTPTransport:
    """The OpenAI chat-completions protocol (see the module docstring).

    One ``aiohttp.ClientSession`` per event loop (fbi's runner starts one loop per run),
    with unlimited connections: the runner's concurrency is the limit. What litellm
    would send goes into the body: every --model-arg as a field of its own,
    ``extra_body``'s fields beside them, ``extra_headers`` as headers."""

    def __init__(self, timeout_s: float = 120.0, max_reply_bytes: int | None = None):
        self.http = BoundedHTTP(timeout_s, max_reply_bytes)

    def _request(self, arguments: dict[str, Any], server: str | None, api_key: str | None
                 ) -> tuple[str, dict[str, Any], dict[str, str], str]:
        body = {name: value for name, value in arguments.items()
                if name not in ("timeout", "num_retries", "max_retries", "api_key",
                                "api_base", "extra_body", *HEADER_ARGS)}
        body["model"] = served_name(arguments["model"])
        body.update(arguments.get("extra_body") or {})
        headers = {"Content-Type": "application/json"}
        for name in HEADER_ARGS:
            headers.update({str(k): str(v) for k, v in (arguments.get(name) or {}).items()})
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        base = (server or "").rstrip("/")
        return base + "/chat/completions", body, headers, body["model"]

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse:
        url, body, headers, asked = self._request(arguments, server, api_key)
        started = time.perf_counter()
        found = await self.http.post(url, _dumps(body), headers)
        return self._read(found, asked, server, time.perf_counter() - started)

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse:
        """The same request, synchronously (the probe call, before any event loop)."""
        url, body, headers, asked = self._request(arguments, server, api_key)
        started = time.perf_counter()
        found = self.http.post_now(url, _dumps(body), headers)
        return self._read(found, asked, server, time.perf_counter() - started)

    @staticmethod
    def _read(response: RawResponse, asked: str, server: str | None,
              latency: float) -> ModelResponse:
        if response.status_code >= 400:
            raise http_error(response.status_code, _error_message(response), response)
        try:
            body = json.loads(response.content)
        except ValueError:  # not JSON, or not UTF-8
            raise BadReply(f"HTTP {response.status_code} with a body that is not "
                           "JSON") from None
        reply = reply_of(body, asked, server)
        reply.latency_s = latency
        reply.cost = cost_of(asked, reply.prompt_tokens, reply.completion_tokens)
        return reply

    async def aclose(self) -> None:
        """Close this event loop's session (the runner calls it before its loop ends)."""
        await self.http.aclose()


def _dumps(body: dict[str, Any]) -> bytes:
    # allow_nan=False: a non-finite number never leaves fbi as invalid JSON
    return json.dumps(body, ensure_ascii=False, allow_nan=False).encode()


def _error_message(response: Any) -> str:
    """The server's own error message (OpenAI's {"error": {"message": ...}}, FastAPI's
    {"detail": ...}), else the start of the body."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str) or body.get("detail") or body.get("message"):
            return str(error or body.get("detail") or body.get("message"))[:300]
    return response.text[:200]


# The OpenAI protocol's own servers (vLLM, SGLang, TGI, llama.cpp, Ollama, OpenAI) when
# their URL is given.
for _prefix in ("openai", "hosted_vllm"):
    register_provider(Provider(_prefix, HTTPTransport, needs_server=True))
