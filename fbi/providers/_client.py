"""One async model interface: cache, retries with backoff, a pool of servers, tokens
and cost, over a transport (the provider registry's: fbi's own HTTP client for
OpenAI-protocol servers, reward endpoints, litellm for every other provider).

Every LLM call fbi makes (judging, perturbing, explanation checks, robustness answers) goes
through [`ModelClient.complete`][fbi.providers.ModelClient.complete]. It knows nothing of
judges or categories.
"""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from collections.abc import Iterable
from typing import Any

from fbi.cache import ResponseCache
from fbi.errors import ConfigError, FbiWarning, ModelError, ModelUnavailable
from fbi.providers._errors import (
    CONFIGURATION,
    FIXES,
    POOL_COOLDOWN_S,
    RETRYABLE,
    describe_error,
    error_kind,
    retry_after,
)
from fbi.providers._images import RequestImage, content_parts, fitted
from fbi.providers._litellm import (
    LitellmTransport,
    check_model,
    placeholder_key,
    supports_logprobs,
)
from fbi.providers._pool import PoolExhausted, ServerPool
from fbi.providers._prices import reasoning_cost
from fbi.providers._registry import (
    PROVIDERS,
    Transport,
    direct,
    environment_key,
    provider_for,
    registered_provider,
)
from fbi.providers._request import ModelRequest
from fbi.providers._response import ModelResponse
from fbi.providers._retries import RequestRateLimiter, RetryPolicy
from fbi.providers._wire import reply_limit
from fbi.redaction import (
    SECRET_CARRIERS,
    is_secret_arg,
    keep_secret,
    known_secrets_redactor,
    public_url,
)

#: Consecutive configuration failures that stop a run (the circuit breaker).
BREAKER_THRESHOLD = 5


class ModelClient:
    """The one model interface: the response cache, retries with backoff, the circuit
    breaker, a pool of servers, and the secrets kept out of replies, over a transport
    (the provider registry's: fbi's own HTTP client for OpenAI-protocol servers, reward
    endpoints, litellm for every other provider).

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
        ([`fbi.providers.provider_for`][fbi.providers.provider_for]:
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
        """Before a run: [`check_model`][fbi.providers.check_model], then (unless ``probe_first``
        is off, the model's provider wants none, or every request is answered from the cache)
        one probe call.
        ``requests`` None means the calls are not known yet: probe anyway. Once per client.

        When every one of ``requests`` (the run's first calls) is in the cache, nothing is checked
        yet: a cached re-run then needs neither litellm (3 s to import) nor the network.
        [`check_deferred`][fbi.providers.ModelClient.check_deferred] checks before the first
        call the cache cannot answer."""
        requests = None if requests is None else list(requests)
        answered = requests is not None and all(self.cached(r) is not None for r in requests)
        if answered and requests:
            self._unchecked = (model, api_base)
            return
        check_model(model, api_base, self.api_key)
        provider = provider_for(model, api_base)
        if answered or not self.probe_first or (provider is not None and not provider.probe):
            return
        self.probe(model, api_base)
        self.probe_first = False

    def check_deferred(self) -> None:
        """The [`check_model`][fbi.providers.check_model] that
        [`preflight`][fbi.providers.ModelClient.preflight] left for the first real call."""
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
            self._placeholder_keys[where] = placeholder_key(model, api_base)
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
        messages = request.message_dicts() if not request.images else \
            content_parts(request.messages, self._seeing(request))
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
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

    @staticmethod
    def _seeing(request: ModelRequest) -> tuple[RequestImage, ...]:
        """The request's images as its provider takes them (`fitted`), or ConfigError
        when its judge cannot see."""
        provider = registered_provider(request.model)
        if provider is not None and not provider.sees_images:
            raise ConfigError(f"{request.model} cannot see images: an item with images "
                              "needs a judge that reads them (an openai/, anthropic/ or "
                              "gemini/ vision model, or a server serving one).")
        return fitted(request.model, request.images)

    async def _call(self, request: ModelRequest, server: str | None) -> ModelResponse:
        if self._limiter is not None:
            await self._limiter.wait()
        self.calls_made += 1
        reply = await self.transport_for(request).send(
            self._arguments(request), server, self.api_key_for(request.model, server))
        redact = self._redact
        return dataclasses.replace(
            reply, text=redact(reply.text),
            token_logprobs=reply.token_logprobs if request.top_logprobs else None,
            reasoning=None if reply.reasoning is None else redact(reply.reasoning),
            reasoning_cost=reasoning_cost(request.model, reply.reasoning_tokens),
            content=None if reply.content is None else redact(reply.content))


def abort_calls() -> None:
    """Ctrl-C: make the calls in flight in this process (the embedded judge's) end at
    once, each provider by its ``abort``; API calls are cancelled by the caller."""
    for provider in PROVIDERS.values():
        if provider.abort is not None:
            provider.abort()


def allow_calls() -> None:
    """Undo [`abort_calls`][fbi.providers.abort_calls] when a new run starts."""
    for provider in PROVIDERS.values():
        if provider.allow is not None:
            provider.allow()
