"""How a model request reaches a model: one [`Transport`][fbi.transports.Transport] per way of
sending.

* [`HTTPTransport`][fbi.transports.HTTPTransport] speaks the OpenAI chat-completions protocol
  itself: the protocol vLLM, SGLang, TGI, llama.cpp's server, Ollama and OpenAI serve. fbi uses it
  for ``openai/NAME`` and ``hosted_vllm/NAME`` with ``--api-base``
  ([`direct`][fbi.transports.direct]): a team driving a pool of its own servers is then limited by
  the servers, not by a general client's per-call work (issue 39;
  ``benchmarks/transport_throughput.py``). Its calls go out on aiohttp: httpx's connection pool
  slows as requests wait for a connection (measured: a raw httpx loop made 58 calls/s at
  concurrency 256 where a raw aiohttp loop made 992, the server allowing 1,280); its one
  synchronous call, the probe, on httpx;
* [`LitellmTransport`][fbi.transports.LitellmTransport] sends everything else through litellm,
  for its providers.

Both return a [`Reply`][fbi.transports.Reply], and both refuse a reply that is not one: no
choices, a usage that is no count, or (HTTP) a body that is not JSON
([`BadReply`][fbi.provider_errors.BadReply], retried); the HTTP transport also refuses a reply
served by another model than the one asked for
([`WrongModel`][fbi.provider_errors.WrongModel]: a server of a pool serving something else is routed
around, not recorded). Everything above them — the cache, retries, the pool, redaction, records —
is the model client's ([`fbi.llm`][fbi.llm]), the same for both.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from fbi.logprobs import token_logprobs_of
from fbi.provider_errors import (  # noqa: F401  (the transports' errors, named here too)
    AuthenticationError,
    BadReply,
    BadRequestError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    ProviderHTTPError,
    RateLimitError,
    WrongModel,
    http_error,
)
from fbi.thinking import split_thinking
from fbi.wire import BoundedHTTP, RawResponse

#: --model-arg names that are HTTP headers, not body fields, on the direct path.
HEADER_ARGS = ("extra_headers", "headers")


@dataclass(frozen=True)
class Provider:
    """A provider fbi sends to itself, named by the prefix of its model strings
    (``PREFIX/NAME``); every other model goes through litellm."""

    prefix: str
    """The model strings' prefix, e.g. ``openai`` for ``openai/NAME``."""
    transport: Any
    """Makes the provider's [`Transport`][fbi.transports.Transport], given the client's
    time-out in seconds."""
    needs_server: bool = False
    """Only when a server is given (--api-base); without one, litellm's own provider of
    that name (``openai/gpt-4o`` is OpenAI's)."""
    server_help: str = ""
    """For a provider that only works with a server: what to run there, said when
    --api-base is missing (a ConfigError before any call)."""


#: The providers fbi sends to itself, by prefix (`register_provider` adds one).
PROVIDERS: dict[str, Provider] = {}


def register_provider(provider: Provider) -> None:
    """Send the calls of ``PREFIX/NAME`` models through ``provider``'s transport."""
    PROVIDERS[provider.prefix] = provider


def provider_for(model: str, api_base: str | None) -> Provider | None:
    """The provider fbi sends this model's calls to itself, or None (litellm's)."""
    if "/" not in model:
        return None
    provider = PROVIDERS.get(model.split("/", 1)[0])
    if provider is None or (provider.needs_server and not api_base):
        return None
    return provider


def direct(model: str, api_base: str | None) -> bool:
    """Whether fbi sends this model's calls itself
    ([`provider_for`][fbi.transports.provider_for])."""
    return provider_for(model, api_base) is not None


def served_name(model: str) -> str:
    """The model's name as its server knows it: ``openai/llama-3`` → ``llama-3``."""
    return model.split("/", 1)[1] if "/" in model else model


@dataclass
class Reply:
    """One chat completion as a transport read it."""

    text: str
    """The reply's text."""
    prompt_tokens: int = 0
    """Tokens in the request, as the server counted them."""
    completion_tokens: int = 0
    """Tokens in the reply."""
    cost: float | None = None
    """USD, from the price list; None when unknown."""
    finish_reason: str | None = None
    """Why the reply ended (``stop``, ``length``, ...)."""
    served_by: str | None = None
    """The model the reply says it came from."""
    token_logprobs: list | None = None
    """Per token, the chosen token's log-probability and its top alternatives'."""
    latency_s: float = 0.0
    """Seconds from request to reply."""
    reasoning: str | None = None
    """A reasoning model's thinking, apart from the reply."""
    reasoning_tokens: int = 0
    """Tokens the model spent reasoning, when the server counts them."""
    content: str | None = None
    """The reply's content as it came, when it held thinking that was split off (the
    judge splits it again, knowing the answers: `fbi.thinking`)."""

    def __post_init__(self) -> None:
        # thinking in the content is split off even beside a server's reasoning field: a
        # draft there is thinking too, never the verdict
        reply, thinking = split_thinking(self.text)
        if thinking is not None:
            self.content, self.text = self.text, reply
            self.reasoning = thinking if self.reasoning is None else \
                f"{self.reasoning}\n\n{thinking}"


class Transport(Protocol):
    """Sends one request (its litellm-style arguments) to one server."""

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> Reply: ...

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> Reply: ...

    async def aclose(self) -> None: ...


# ------------------------------------------------------------------ reading replies


_UNPRICED: set[str] = set()  # models litellm has no price for: not looked up again


def litellm_cost(litellm, reply) -> float | None:
    """USD of a reply: litellm's own figure when it computed one, else from its price
    data; None for a model it has no price for (remembered, since the look-up is slow)."""
    hidden = getattr(reply, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:
        return float(hidden["response_cost"])
    model = str(getattr(reply, "model", ""))
    if model in _UNPRICED:
        return None
    try:
        return float(litellm.completion_cost(completion_response=reply))
    except Exception:
        _UNPRICED.add(model)
        return None


def import_litellm():
    """Import litellm once, offline-safe and quiet, with the local provider registered."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    if not getattr(litellm, "_fbi_ready", False):
        litellm.suppress_debug_info = True
        litellm.drop_params = True  # a provider without json_schema gets free text instead
        litellm.telemetry = False
        from fbi.local import register

        register(litellm)
        litellm._fbi_ready = True
    return litellm



#: More tokens than any model reads or writes in one call: a usage count above it is a
#: server's lie (it would price a call at millions of dollars).
MAX_TOKEN_COUNT = 10_000_000


def token_count(usage: dict, name: str) -> int:
    """A usage field (``prompt_tokens``) as a count of tokens; a `BadReply` for one that
    is no whole number from 0 to `MAX_TOKEN_COUNT` (an absurd count would price a call
    at millions of dollars)."""
    value = usage.get(name) or 0
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0 or value != int(value):
        raise BadReply(f"usage {name} {value!r} is not a count of tokens")
    if value > MAX_TOKEN_COUNT:
        raise BadReply(f"usage {name} {value!r} is more tokens than any call holds")
    return int(value)


def reply_of(body: Any, asked: str | None = None, server: str | None = None) -> Reply:
    """A chat-completions body (a dict) as a [`Reply`][fbi.transports.Reply]; BadReply when
    it is not one, WrongModel when ``asked`` is given and the body names another model (see
    [`same_model`][fbi.transports.same_model])."""
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
    return Reply(
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
                   api_key: str | None) -> Reply:
        url, body, headers, asked = self._request(arguments, server, api_key)
        started = time.perf_counter()
        found = await self.http.post(url, _dumps(body), headers)
        return self._read(found, asked, server, time.perf_counter() - started)

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> Reply:
        """The same request, synchronously (the probe call, before any event loop)."""
        url, body, headers, asked = self._request(arguments, server, api_key)
        started = time.perf_counter()
        found = self.http.post_now(url, _dumps(body), headers)
        return self._read(found, asked, server, time.perf_counter() - started)

    @staticmethod
    def _read(response: RawResponse, asked: str, server: str | None, latency: float) -> Reply:
        from fbi.prices import cost_of

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


# ------------------------------------------------------------------ litellm


class LitellmTransport:
    """Every other provider, through ``litellm.acompletion``."""

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> Reply:
        litellm = import_litellm()
        started = time.perf_counter()
        reply = await litellm.acompletion(**self._with(arguments, server, api_key))
        return self._read(litellm, reply, time.perf_counter() - started)

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> Reply:
        litellm = import_litellm()
        started = time.perf_counter()
        reply = litellm.completion(**self._with(arguments, server, api_key))
        return self._read(litellm, reply, time.perf_counter() - started)

    @staticmethod
    def _with(arguments: dict[str, Any], server: str | None, api_key: str | None
              ) -> dict[str, Any]:
        arguments = dict(arguments)
        if server:
            arguments["api_base"] = server
        if api_key:
            arguments["api_key"] = api_key
        return arguments

    @staticmethod
    def _read(litellm: Any, reply: Any, latency: float) -> Reply:
        choices = getattr(reply, "choices", None)
        if not choices:
            raise BadReply("the reply has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        usage = getattr(reply, "usage", None)
        counts = {name: getattr(usage, name, 0) or 0
                  for name in ("prompt_tokens", "completion_tokens")}
        details = getattr(usage, "completion_tokens_details", None)
        reasoning_tokens = getattr(details, "reasoning_tokens", 0) or 0
        reasoning = getattr(message, "reasoning_content", None)
        text = getattr(message, "content", None)
        if text is not None and not isinstance(text, str):
            raise BadReply("the reply's content is not text")
        return Reply(
            text=text or "", prompt_tokens=token_count(counts, "prompt_tokens"),
            completion_tokens=token_count(counts, "completion_tokens"),
            cost=litellm_cost(litellm, reply), latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            served_by=getattr(reply, "model", None), token_logprobs=token_logprobs_of(choice),
            reasoning=reasoning if isinstance(reasoning, str) else None,
            reasoning_tokens=token_count({"r": reasoning_tokens}, "r"))

    async def aclose(self) -> None:
        return None


# ------------------------------------------------------------------ a pool of servers


@dataclass
class ServerPool:
    """Several servers of one model (--api-base given more than once): each call goes to
    a healthy one at random; a server whose call fails is left out for
    ``cooldown_s`` while the others answer, and one that serves another model is left
    out for good. The first server names the pool in requests and cache keys."""

    servers: tuple[str, ...]
    """The servers' URLs; the first names the pool."""
    cooldown_s: float = 10.0
    """How long a server whose call failed is left out."""
    clock: Any = time.monotonic
    """The time source (injected in tests)."""
    rng: Any = None
    """The random source that picks a server (seeded in tests)."""
    _until: dict[str, float] = field(default_factory=dict)
    _excluded: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import random

        self.rng = self.rng or random.Random()

    @property
    def name(self) -> str:
        return self.servers[0]

    def healthy(self) -> list[str]:
        now = self.clock()
        return [s for s in self.servers
                if s not in self._excluded and self._until.get(s, 0.0) <= now]

    def pick(self, tried: set[str] = frozenset()) -> str | None:
        """A healthy server not yet tried for this call, or None."""
        choices = [s for s in self.healthy() if s not in tried]
        return self.rng.choice(choices) if choices else None

    def failed(self, server: str) -> None:
        self._until[server] = self.clock() + self.cooldown_s

    def exclude(self, server: str, why: str) -> None:
        self._excluded[server] = why

    @property
    def excluded(self) -> dict[str, str]:
        return dict(self._excluded)


class PoolExhausted(Exception):
    """Every server of a pool failed within its cooldown, or was left out."""

    def __init__(self, pool: ServerPool, last: BaseException | None):
        self.pool, self.last = pool, last
        left_out = "; ".join(f"{server}: {why}" for server, why in pool.excluded.items())
        reason = f" (left out: {left_out})" if left_out else ""
        super().__init__(f"every server of the pool failed within the last "
                         f"{pool.cooldown_s:g} s{reason}")


# The OpenAI protocol's own servers (vLLM, SGLang, TGI, llama.cpp, Ollama, OpenAI) when
# their URL is given.
for _prefix in ("openai", "hosted_vllm"):
    register_provider(Provider(_prefix, HTTPTransport, needs_server=True))


def environment_key(model: str) -> str | None:
    """The key a direct-path model finds in the environment (OPENAI_API_KEY for openai/,
    HOSTED_VLLM_API_KEY for hosted_vllm/), as litellm would read it."""
    provider = model.split("/", 1)[0]
    return os.environ.get(f"{provider.upper()}_API_KEY") or None


#: The variables litellm reads a provider's server from when no api_base is given, by
#: provider (any other provider P: P_API_BASE, P_BASE_URL).
ENDPOINT_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
    "azure": ("AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"),
    "together_ai": ("TOGETHERAI_API_BASE", "TOGETHER_AI_API_BASE"),
}
#: Unprefixed model names litellm gives to a provider other than OpenAI, by how they start.
_BARE_PROVIDERS = (("claude", "anthropic"), ("gemini", "gemini"), ("mistral", "mistral"),
                   ("command", "cohere"))


def environment_endpoint(model: str) -> str | None:
    """The server a model's calls go to when no api_base is given, as litellm reads it
    from the environment (``OPENAI_BASE_URL`` for ``gpt-4-turbo`` and ``openai/…``), or
    None for the provider's own. It belongs to the cache key and to ``run.json``: a reply
    a test server made is never served as the provider's (issue 50)."""
    if model.startswith("local/"):
        from fbi.local import runtime_endpoint

        return runtime_endpoint()
    if "/" in model:
        provider = model.split("/", 1)[0]
    else:
        provider = next((name for start, name in _BARE_PROVIDERS
                         if model.lower().startswith(start)), "openai")
    names = ENDPOINT_VARIABLES.get(provider) or (f"{provider.upper()}_API_BASE",
                                                  f"{provider.upper()}_BASE_URL")
    return next((os.environ[name] for name in names if os.environ.get(name)), None)
