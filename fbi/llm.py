"""One async model interface: cache, retries with backoff, a pool of servers, tokens
and cost, over a transport ([`fbi.transports`][fbi.transports]: fbi's own HTTP client for
OpenAI-protocol servers, litellm for every other provider).

Every LLM call fbi makes (judging, perturbing, explanation checks, robustness answers) goes through
[`ModelClient.complete`][fbi.llm.ModelClient.complete]. It knows nothing of judges or categories.

litellm is imported lazily (it takes seconds and would slow `fbi --help`), with its cost
map read from the package rather than the network, and not at all on the direct path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fbi.reward  # noqa: F401  (importing it registers the reward models' providers)
from fbi._request_json import key_frame, messages_json
from fbi.cache import ResponseCache
from fbi.errors import ConfigError, FbiWarning, MissingKey, ModelError, ModelUnavailable
from fbi.escaping import without_surrogates
from fbi.logprobs import checked_token_logprobs
from fbi.prices import reasoning_cost
from fbi.provider_errors import (
    CONFIGURATION,
    FIXES,
    POOL_COOLDOWN_S,
    RETRYABLE,
    describe_error,
    error_kind,
    retry_after,
)
from fbi.redaction import (
    SECRET_CARRIERS,
    is_secret_arg,
    keep_secret,
    known_secrets_redactor,
    public_url,
)
from fbi.retries import RequestRateLimiter, RetryPolicy
from fbi.transports import (
    LitellmTransport,
    PoolExhausted,
    ServerPool,
    Transport,
    direct,
    environment_key,
    import_litellm,
    provider_for,
)
from fbi.wire import reply_limit

#: The embedded offline judge, registered as a litellm custom provider "local".
LOCAL_JUDGE = "local/smollm2-135m"

#: Consecutive configuration failures that stop a run (the circuit breaker).
BREAKER_THRESHOLD = 5

@dataclass(frozen=True)
class ModelRequest:
    """Everything that decides a model's reply. API keys are never part of it."""

    model: str
    """The model string (``openai/gpt-4o``, ``local/smollm2-135m``)."""
    messages: tuple[tuple[str, str], ...]
    """(role, content) pairs."""
    temperature: float = 0.0
    """Sampling temperature (0: greedy, the paper's setting)."""
    max_tokens: int | None = None
    """The reply's token cap (None: the provider's default)."""
    response_schema: dict[str, Any] | None = None
    """JSON schema for structured output."""
    api_base: str | None = None
    """The server's URL, for self-hosted servers (a pool's first server)."""
    top_logprobs: int = 0
    """Ask for the top-k token log-probabilities (0: none)."""
    seed: int | None = None
    """The provider's sampling seed, when given."""
    model_args: tuple[tuple[str, Any], ...] = ()
    """Further provider parameters (--model-arg top_p=0.9), sorted by name."""
    sample: int = 0
    """The k-th asking of the same request (--samples): its own reply."""

    def cache_key(self) -> str:
        """sha256 of the canonical JSON of the fields that change the output.

        Time-outs and retry settings are left out: they change whether a reply arrives,
        not what it says. The api_base stays in: another server may serve another model.
        The text hashed is ``json.dumps`` of those fields (sorted keys, compact, not
        ASCII-escaped), built from two parts: everything but the messages, the same for
        every call of a strategy and so dumped once, and the messages, escaped string by
        string (a cached re-run makes 50,400 keys: `_messages_json`).
        """
        head, tail = key_frame(self)
        canonical = head + messages_json(self.messages, ascii_only=False) + tail
        return hashlib.sha256(canonical.encode()).hexdigest()

    def prompt_hash(self) -> str:
        """sha256 of the rendered messages (as ``json.dumps(messages)`` writes them): the
        one prompt hash every record carries."""
        return hashlib.sha256(messages_json(self.messages, ascii_only=True).encode()).hexdigest()

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass
class ModelResponse:
    text: str
    """The reply's text."""
    prompt_tokens: int = 0
    """Tokens in the request, as the provider counted them."""
    completion_tokens: int = 0
    """Tokens in the reply."""
    cost: float | None = None
    """USD from litellm's cost data; None when the model is unknown."""
    latency_s: float = 0.0
    """Seconds from request to reply (0 when cached)."""
    cached: bool = False
    """Answered from the response cache."""
    finish_reason: str | None = None
    """Why the reply ended (``stop``, ``length``, ...), as the provider said."""
    token_logprobs: list[list[tuple[str, float]]] | None = None
    """Per generated token, (text, log-probability) of the chosen token and then of its top
    alternatives, when the request asked for them and the provider returns them."""
    reasoning: str | None = None
    """A reasoning model's thinking, kept apart from ``text`` (the server's reasoning
    field, Anthropic's thinking blocks through litellm, and any block of thinking the
    content opens with: `fbi.thinking`); never parsed."""
    reasoning_tokens: int = 0
    """Of ``completion_tokens``, those spent reasoning, as the provider counted them."""
    reasoning_cost: float | None = 0.0
    """USD of the reasoning tokens at the model's reply-token price; None when unpriced."""
    content: str | None = None
    """The content as it came, when it held thinking that was split off (a judge splits
    it again knowing the answers it was shown)."""
    logprobs_problem: str | None = None
    """Why the log-probabilities the server sent cannot be used (not numbers, NaN, above
    0): they are dropped, and a judge that asked for them reads the reply as
    unreadable, with this reason."""

    def __post_init__(self) -> None:
        # a lone surrogate (JSON's "\ud800") is no character a UTF-8 log can hold
        self.text = without_surrogates(self.text)
        if self.reasoning is not None:
            self.reasoning = without_surrogates(self.reasoning)
        if self.content is not None:
            self.content = without_surrogates(self.content)
        if isinstance(self.token_logprobs, str):  # (a transport's word on their shape)
            self.logprobs_problem, self.token_logprobs = self.token_logprobs, None
        tokens, problem = checked_token_logprobs(self.token_logprobs)
        self.token_logprobs = tokens
        self.logprobs_problem = self.logprobs_problem or problem

    def usage(self) -> dict[str, Any]:
        """The usage fields of a call record."""
        return {"prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost": self.cost,
                "latency_s": self.latency_s, "cached": self.cached}

    def to_cache(self) -> dict[str, Any]:
        entry = {"text": self.text, "prompt_tokens": self.prompt_tokens,
                 "completion_tokens": self.completion_tokens, "cost": self.cost,
                 "finish_reason": self.finish_reason, "token_logprobs": self.token_logprobs}
        if self.reasoning is not None or self.reasoning_tokens:
            entry.update(reasoning=self.reasoning, reasoning_tokens=self.reasoning_tokens,
                         reasoning_cost=self.reasoning_cost)
        if self.content is not None:
            entry["content"] = self.content
        if self.logprobs_problem is not None:
            entry["logprobs_problem"] = self.logprobs_problem
        return entry


class ModelClient:
    """The one model interface: the response cache, retries with backoff, the circuit
    breaker, a pool of servers, and the secrets kept out of replies, over a transport
    ([`fbi.transports`][fbi.transports]): fbi's own HTTP client for OpenAI-protocol servers, litellm
    for every other provider.

    ``sleep`` is injectable so retry timing can be tested without waiting; ``transport``
    sends every call through the one given (tests), instead of choosing by model.
    """

    def __init__(
        self,
        cache: ResponseCache | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        sleep=asyncio.sleep,
        api_key: str | None = None,
        rpm: float | None = None,
        breaker: int = BREAKER_THRESHOLD,
        probe_first: bool = True,
        api_pool: Iterable[str] = (),
        transport: Transport | None = None,
    ):
        self.cache = cache
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.api_key = api_key  # held in memory only: never in a request, record or cache
        if api_key:
            keep_secret(api_key)
        # the secrets a reply may echo (this key, the environment's), as they are now
        self._redact = known_secrets_redactor()
        self._limiter = RequestRateLimiter(rpm) if rpm else None
        self.breaker = breaker
        self.probe_first = probe_first  # see preflight
        self._configuration_failures = 0  # in a row, across concurrent calls
        self.calls_made = 0  # requests that reached a model (retries included)
        # (model, api_base) whose check_model waits for the first call the cache cannot
        # answer: see preflight
        self._unchecked: tuple[str, str | None] | None = None
        # Several servers of one model (--api-base given more than once): requests name
        # the first, and each call goes to a healthy server of the pool. The first names
        # the pool in requests and cache keys, so a reply's key never depends on which
        # server answered.
        servers = tuple(dict.fromkeys(api_pool))
        self.pool = ServerPool(servers, POOL_COOLDOWN_S) if len(servers) > 1 else None
        self._litellm = LitellmTransport()
        self._own: dict[str, Transport] = {}  # provider prefix → its transport, made once
        self._transport = transport
        # (model, api_base) → the stand-in key it needs, or None: litellm's check of the
        # environment is too slow to make for every call
        self._placeholder_keys: dict[tuple[str, str | None], str | None] = {}
        self._in_flight: dict[str, asyncio.Future] = {}  # cache key → the call making it

    @property
    def api_pool(self) -> tuple[str, ...]:
        return self.pool.servers if self.pool else ()

    def pooled(self, api_base: str | None) -> bool:
        """Whether calls to ``api_base`` are spread over a pool of servers."""
        return self.pool is not None and api_base == self.pool.name

    def transport_for(self, request: ModelRequest) -> Transport:
        """The transport of the request's provider
        ([`fbi.transports.provider_for`][fbi.transports.provider_for]:
        fbi's HTTP client for an OpenAI-protocol server), litellm for the rest."""
        if self._transport is not None:
            return self._transport
        provider = provider_for(request.model, request.api_base)
        if provider is None:
            return self._litellm
        if provider.prefix not in self._own:
            self._own[provider.prefix] = provider.transport(self.timeout_s,
                                                            reply_limit())
        return self._own[provider.prefix]

    def cached(self, request: ModelRequest, key: str | None = None) -> ModelResponse | None:
        """The cache's reply to ``request`` (``key``: its cache key, when known)."""
        if self.cache is None:
            return None
        hit = self.cache.get(key or request.cache_key())
        return ModelResponse(**hit, cached=True) if hit else None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's reply to ``request``: from the cache, or from the model. A request
        the same as one in flight waits for that call's reply (marked ``cached``: it cost
        nothing more) rather than paying again — a best-of-N row asks the same
        single-answer question once for every pair its answer is in."""
        key = request.cache_key()
        hit = self.cached(request, key)
        if hit is not None:
            return hit
        waiting = self._in_flight.get(key)
        if waiting is not None:
            response = await asyncio.shield(waiting)
            return dataclasses.replace(response, cached=True, latency_s=0.0)
        call = asyncio.ensure_future(self._complete_uncached(request, key))
        self._in_flight[key] = call
        try:
            return await asyncio.shield(call)
        finally:
            if call.done():
                self._in_flight.pop(key, None)
            else:  # this caller was cancelled: the call goes on for any other waiting
                # on it, and leaves the table when it ends
                call.add_done_callback(lambda _: self._in_flight.pop(key, None))

    async def _complete_uncached(self, request: ModelRequest, key: str) -> ModelResponse:
        try:
            self.check_deferred()
        except ConfigError as error:  # stops the run; what is saved stays saved
            raise ModelUnavailable(str(error)) from None
        response = await self._call_with_retries(request)
        if self.cache is not None:
            self.cache.put(key, request.model, response.to_cache())
        return response

    async def aclose(self) -> None:
        """Close what the transports hold for the running event loop (the runner calls it
        before its loop ends)."""
        for transport in [*self._own.values(), *([self._transport] if self._transport
                                                  else [])]:
            await transport.aclose()

    async def _call_with_retries(self, request: ModelRequest) -> ModelResponse:
        """Retry only what another try can fix; stop the run (`ModelUnavailable`)
        once ``breaker`` calls in a row found the model unreachable. In a pool, a call
        that fails on one server goes to another healthy one at once."""
        attempt = 0
        tried: set[str] = set()
        while True:
            server = request.api_base
            try:
                if self.pooled(request.api_base):
                    server = self.pool.pick(tried)
                    if server is None:
                        raise PoolExhausted(self.pool, None)
                    tried.add(server)
                response = await self._call(request, server)
                self._configuration_failures = 0
                return response
            except ConfigError as error:  # fbi's own: no call of this run can succeed
                raise ModelUnavailable(str(error)) from None
            except Exception as error:
                kind = error_kind(error)
                if server in tried and kind not in ("rejected", "interrupted"):
                    if kind == "wrong_model":  # a server of another model: for good
                        self.pool.exclude(server, describe_error(error))
                    else:
                        self.pool.failed(server)
                    continue  # the next healthy server, or PoolExhausted
                if kind in RETRYABLE and attempt < self.retry.max_retries:
                    await self._sleep(self.retry.delay(attempt, retry_after(error)))
                    attempt += 1
                    tried = set()
                    continue
                message = f"{request.model}: {describe_error(error)}"
                if kind in CONFIGURATION:
                    self._configuration_failures += 1
                    if self.breaker and self._configuration_failures >= self.breaker:
                        raise ModelUnavailable(
                            f"{self._configuration_failures} calls in a row failed ({kind}): "
                            f"{message}. Fix: {FIXES[kind]}") from error
                raise ModelError(message) from error

    def preflight(self, model: str, api_base: str | None,
                  requests: Iterable[ModelRequest] | None = None) -> None:
        """Before a run: [`check_model`][fbi.llm.check_model], then (unless ``probe_first``
        is off, the model is the embedded one, or every request is answered from the cache)
        one probe call.
        ``requests`` None means the calls are not known yet: probe anyway. Once per client.

        When every one of ``requests`` (the run's first calls) is in the cache, nothing is checked
        yet: a cached re-run then needs neither litellm (3 s to import) nor the network.
        [`check_deferred`][fbi.llm.ModelClient.check_deferred] checks before the first call the
        cache cannot answer."""
        requests = None if requests is None else list(requests)
        answered = requests is not None and all(self.cached(r) is not None for r in requests)
        if answered and requests:
            self._unchecked = (model, api_base)
            return
        check_model(model, api_base, self.api_key)
        if answered or not self.probe_first or model.startswith("local/"):
            return
        self.probe(model, api_base)
        self.probe_first = False

    def check_deferred(self) -> None:
        """The [`check_model`][fbi.llm.check_model] that
        [`preflight`][fbi.llm.ModelClient.preflight] left for the first real call."""
        if self._unchecked is not None:
            model, api_base = self._unchecked
            self._unchecked = None
            check_model(model, api_base, self.api_key)

    def probe(self, model: str, api_base: str | None) -> None:
        """One tiny uncached call, so a wrong model, key or server is a message before a
        run starts rather than a thousand failed calls. Only a configuration failure
        (`CONFIGURATION`) is an error here; a busy or flaky server is the run's
        retries' business. Every server of a pool is asked: one that serves another
        model is left out of the run (a warning says so), one that fails otherwise is
        the run's to route around; the probe fails only when none answers.
        Synchronous: no event loop outlives it, and Ctrl-C stops it."""
        servers = self.pool.servers if self.pooled(api_base) else (api_base,)
        failures, answered = [], False
        for server in servers:
            request = ModelRequest(model, (("user", "Reply with OK."),), max_tokens=5,
                                   api_base=api_base)
            self.calls_made += 1
            try:
                self.transport_for(request).send_now(self._arguments(request), server,
                                                     self.api_key_for(model, server))
                answered = True
            except ConfigError:
                raise  # fbi's own finding (a local model that cannot load): said as it is
            except Exception as error:
                kind = error_kind(error)
                if kind not in CONFIGURATION:
                    answered = True  # reachable, only busy: the run's retries handle it
                    continue
                failures.append((server, kind, error))
                if len(servers) > 1 and kind == "wrong_model":
                    self.pool.exclude(server, describe_error(error))
        if answered:
            for server, kind, error in failures:
                warnings.warn(f"{model}: the pool's server {public_url(server)} is left "
                              f"out ({kind}): {describe_error(error)}", FbiWarning,
                              stacklevel=2)
            return
        _, kind, error = failures[0]
        pool = f" on all {len(servers)} servers of the pool" if len(servers) > 1 else ""
        raise ConfigError(f"{model}: the probe call failed{pool} ({kind}): "
                          f"{describe_error(error)}. Fix: {FIXES[kind]}") from None

    def api_key_for(self, model: str, api_base: str | None) -> str | None:
        """The key to send: --api-key; on the direct path, the provider's variable (none:
        a self-hosted server wants none); else a stand-in for a keyless compatible server
        behind litellm, or None (litellm reads the provider's variable)."""
        if self.api_key:
            return self.api_key
        if direct(model, api_base):
            return environment_key(model)
        where = (model, api_base)
        if where not in self._placeholder_keys:
            self._placeholder_keys[where] = _placeholder_key(model, api_base)
        return self._placeholder_keys[where]

    def batch_body(self, request: ModelRequest, model_name: str) -> dict[str, Any]:
        """The body of ``request`` in an OpenAI-format batch file: what a live call would
        send, under the provider's own model name, without connection settings or
        secrets."""
        body = self._arguments(request)
        for connection in ("timeout", "num_retries", "max_retries", *SECRET_CARRIERS):
            body.pop(connection, None)
        return {name: value for name, value in {**body, "model": model_name}.items()
                if not is_secret_arg(name)}

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The request's arguments, as litellm takes them (the HTTP transport reads the
        same): everything but the server and the key, which the transport adds."""
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.message_dicts(),
            "temperature": request.temperature,
            "timeout": self.timeout_s,
            "num_retries": 0,  # retries are ours, so Retry-After and jitter are honoured
            "max_retries": 0,
        }
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.seed is not None or request.sample:
            # the k-th sample is seeded k past the run's seed: different, reproducible
            kwargs["seed"] = (request.seed or 0) + request.sample
        kwargs.update(request.model_args)
        if request.top_logprobs and supports_logprobs(request.model, request.api_base) \
                is not False:
            # (asked of a provider without them, litellm refuses the whole call)
            kwargs.update(logprobs=True, top_logprobs=request.top_logprobs)
        if request.response_schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "verdict", "schema": request.response_schema, "strict": False}}
        return kwargs

    async def _call(self, request: ModelRequest, server: str | None) -> ModelResponse:
        if self._limiter is not None:
            await self._limiter.wait()
        self.calls_made += 1
        reply = await self.transport_for(request).send(
            self._arguments(request), server, self.api_key_for(request.model, server))
        return ModelResponse(
            text=self._redact(reply.text), prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens, cost=reply.cost,
            latency_s=reply.latency_s, finish_reason=reply.finish_reason,
            token_logprobs=reply.token_logprobs if request.top_logprobs else None,
            reasoning=None if reply.reasoning is None else self._redact(reply.reasoning),
            reasoning_tokens=reply.reasoning_tokens,
            reasoning_cost=reasoning_cost(request.model, reply.reasoning_tokens),
            content=None if reply.content is None else self._redact(reply.content))


@functools.cache
def supports_logprobs(model: str, api_base: str | None = None) -> bool | None:
    """Whether this model's calls can carry token log-probabilities (``top_logprobs``):
    the embedded judge and the direct path always ask (a server without them leaves them
    out); through litellm, True or False from its table of supported parameters, None
    when it does not know the model."""
    if model.startswith("local/") or direct(model, api_base):
        return True  # fbi's own decoding loop, or fbi's own request
    litellm = import_litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        supported = litellm.get_supported_openai_params(model=name,
                                                        custom_llm_provider=provider)
    except Exception:  # litellm raises many kinds for a model it does not know
        return None
    return None if supported is None else "top_logprobs" in supported


def check_model(model: str, api_base: str | None = None, api_key: str | None = None, *,
                fetch_weights: bool = True) -> None:
    """What can be checked without a call: litellm knows the model's provider, and a key
    for it is set (or given, or a custom ``api_base`` may need none). ConfigError says
    what to set. The embedded judge's weights are fetched now when they are not here
    yet, unless ``fetch_weights`` is False (a dry run fetches nothing)."""
    if model.startswith("local/"):
        from fbi.local import check_available

        check_available(model, fetch=fetch_weights)
        return
    provider = provider_for(model, api_base)
    if provider is not None and provider.server_help and not api_base:
        raise ConfigError(f"{model}: no server. Fix: give --api-base ({provider.server_help})")
    if provider is not None:
        return  # fbi speaks to the server itself; it may want no key
    litellm = import_litellm()
    try:
        provider = litellm.get_llm_provider(model, api_base=api_base)[1]
    except Exception:
        raise ConfigError(
            f"unknown model {model!r}: litellm cannot tell which provider serves it. Fix: "
            "write it as PROVIDER/MODEL, e.g. openai/gpt-4o, anthropic/claude-3-5-sonnet-"
            "20240620 or openai/NAME with --api-base for an OpenAI-compatible server") from None
    if api_key or api_base:
        return
    missing = _missing_keys(model)
    if missing:
        raise MissingKey(f"{model}: no API key for {provider}. Fix: set "
                          f"{' or '.join(missing)}, or pass --api-key (or set FBI_API_KEY)")


def _missing_keys(model: str) -> list[str]:
    """The provider key variables litellm looks for and does not find ([] when set or
    when litellm cannot say)."""
    try:
        found = import_litellm().validate_environment(model=model)
    except Exception:
        return []
    return [] if found.get("keys_in_environment") else list(found.get("missing_keys") or [])


def _placeholder_key(model: str, api_base: str | None) -> str | None:
    """A stand-in key for a self-hosted server (vLLM, llama.cpp, Ollama) that wants none,
    when the provider's key is not set: litellm's OpenAI client refuses to send a request
    without one."""
    if not api_base or model.startswith("local/") or not _missing_keys(model):
        return None
    return "fbi-no-key"


def json_object_in(text: str) -> dict | None:
    """The JSON object a reply holds: the whole reply (code fences allowed), or the span
    from its first '{' to its last '}'. None when there is none."""
    stripped = _CODE_FENCE.sub("", text.strip())
    for candidate in (stripped, stripped[stripped.find("{"): stripped.rfind("}") + 1]):
        try:
            data = json.loads(candidate, strict=False)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    return None



_CODE_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def abort_local_calls() -> None:
    """Make the embedded judge stop generating (Ctrl-C): calls in flight end at the next
    token with an error, queued ones at once. API calls are cancelled by the caller."""
    from fbi.local import abort_all

    abort_all()


def allow_local_calls() -> None:
    """Undo [`abort_local_calls`][fbi.llm.abort_local_calls] when a new run starts."""
    from fbi.local import allow_all

    allow_all()


def litellm_version() -> str:
    """The installed litellm's version, without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return ""
