"""One async model interface over litellm: cache, retries with backoff, tokens and cost.

Every LLM call fbi makes (judging, perturbing, explanation checks, robustness answers)
goes through :meth:`ModelClient.complete`. It knows nothing of judges or categories.

litellm is imported lazily (it takes seconds and would slow `fbi --help`), with its cost
map read from the package rather than the network.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from fbi.cache import ResponseCache
from fbi.errors import ModelError

#: The embedded offline judge, registered as a litellm custom provider "local".
LOCAL_JUDGE = "local/smollm2-135m"

# Errors worth another try: rate limits, server trouble, time-outs, dropped connections.
_RETRYABLE_NAMES = ("RateLimitError", "InternalServerError", "ServiceUnavailableError",
                    "Timeout", "APIConnectionError", "APIError", "BadGatewayError")


def import_litellm():
    """Import litellm once, offline-safe and quiet, with the local provider registered."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    if not getattr(litellm, "_fbi_ready", False):
        litellm.suppress_debug_info = True
        litellm.drop_params = True  # a provider without json_schema gets free text instead
        litellm.telemetry = False
        from fbi.local_judge import register

        register(litellm)
        litellm._fbi_ready = True
    return litellm


@dataclass(frozen=True)
class ModelRequest:
    """Everything that decides a model's reply. API keys are never part of it."""

    model: str
    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    temperature: float = 0.0
    max_tokens: int | None = None
    response_schema: dict[str, Any] | None = None  # JSON schema for structured output
    api_base: str | None = None
    top_logprobs: int = 0  # ask for the top-k token log-probabilities (0: none)

    def cache_key(self) -> str:
        """sha256 of the canonical JSON of the fields that change the output.

        Time-outs and retry settings are left out: they change whether a reply arrives,
        not what it says. The api_base stays in: another server may serve another model.
        """
        canonical = json.dumps({
            "model": self.model, "messages": self.messages, "temperature": self.temperature,
            "max_tokens": self.max_tokens, "response_schema": self.response_schema,
            "api_base": self.api_base, **({"top_logprobs": self.top_logprobs}
                                          if self.top_logprobs else {}),
        }, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def prompt_hash(self) -> str:
        """sha256 of the rendered messages: the one prompt hash every record carries."""
        return hashlib.sha256(json.dumps(self.messages).encode()).hexdigest()

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass
class ModelResponse:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None  # USD from litellm's cost data; None when the model is unknown
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    # per generated token, the log-probabilities of the top candidates (chosen one first),
    # when the request asked for them and the provider returns them
    token_logprobs: list[list[float]] | None = None

    def usage(self) -> dict[str, Any]:
        """The usage fields of a call record."""
        return {"prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost": self.cost,
                "latency_s": self.latency_s, "cached": self.cached}

    def to_cache(self) -> dict[str, Any]:
        return {"text": self.text, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost": self.cost,
                "finish_reason": self.finish_reason, "token_logprobs": self.token_logprobs}


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter; a server's Retry-After wins when given."""

    max_retries: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay_s * 4)
        return self.rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** attempt))


class ModelClient:
    """Calls models through litellm, with the response cache and retries.

    ``sleep`` is injectable so retry timing can be tested without waiting.
    """

    def __init__(
        self,
        cache: ResponseCache | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        sleep=asyncio.sleep,
    ):
        self.cache = cache
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.calls_made = 0  # requests that reached a model (retries included)

    def cached(self, request: ModelRequest) -> ModelResponse | None:
        if self.cache is None:
            return None
        hit = self.cache.get(request.cache_key())
        return ModelResponse(**hit, cached=True) if hit else None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's reply to ``request``: from the cache, or from the model."""
        hit = self.cached(request)
        if hit is not None:
            return hit
        response = await self._call_with_retries(request)
        if self.cache is not None:
            self.cache.put(request.cache_key(), request.model, response.to_cache())
        return response

    async def _call_with_retries(self, request: ModelRequest) -> ModelResponse:
        attempt = 0
        while True:
            try:
                return await self._call(request)
            except Exception as error:
                if not _is_retryable(error) or attempt >= self.retry.max_retries:
                    raise ModelError(f"{request.model}: {_describe(error)}") from error
                await self._sleep(self.retry.delay(attempt, _retry_after(error)))
                attempt += 1

    async def _call(self, request: ModelRequest) -> ModelResponse:
        litellm = import_litellm()
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
        if request.api_base:
            kwargs["api_base"] = request.api_base
        if request.top_logprobs:
            kwargs.update(logprobs=True, top_logprobs=request.top_logprobs)
        if request.response_schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "verdict", "schema": request.response_schema, "strict": False}}
        started = time.perf_counter()
        self.calls_made += 1
        reply = await litellm.acompletion(**kwargs)
        latency = time.perf_counter() - started
        choice = reply.choices[0]
        usage = getattr(reply, "usage", None)
        return ModelResponse(
            text=choice.message.content or "",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cost=_cost(litellm, reply),
            latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            token_logprobs=_token_logprobs(choice) if request.top_logprobs else None,
        )


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
    from fbi.local_judge import abort_all

    abort_all()


def allow_local_calls() -> None:
    """Undo :func:`abort_local_calls` when a new run starts."""
    from fbi.local_judge import allow_all

    allow_all()


def _token_logprobs(choice) -> list[list[float]] | None:
    """Top log-probabilities per token from an OpenAI-shaped choice, chosen token first."""
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if content is None and isinstance(logprobs, dict):
        content = logprobs.get("content")
    if not content:
        return None
    tokens = []
    for token in content:
        token = token if isinstance(token, dict) else token.model_dump()
        top = [t["logprob"] for t in token.get("top_logprobs") or []]
        tokens.append([token["logprob"], *[p for p in top if p != token["logprob"]]][:10])
    return tokens


_UNPRICED: set[str] = set()  # models litellm has no price for: not looked up again


def _cost(litellm, reply) -> float | None:
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


def _is_retryable(error: Exception) -> bool:
    if "LocalCallAborted" in f"{type(error).__name__}: {error}":
        return False  # the run is being interrupted
    if isinstance(error, asyncio.TimeoutError | TimeoutError | ConnectionError):
        return True
    status = getattr(error, "status_code", None)
    if status in (408, 409, 429) or (isinstance(status, int) and status >= 500):
        return True
    return type(error).__name__ in _RETRYABLE_NAMES and status not in (400, 401, 403, 404)


def _retry_after(error: Exception) -> float | None:
    """Seconds from a Retry-After header on the error's HTTP response, if any."""
    for headers in (getattr(getattr(error, "response", None), "headers", None),
                    getattr(error, "litellm_response_headers", None)):
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    return None


def _describe(error: Exception) -> str:
    """The provider's error in one line, secrets removed: what records and the console
    may hold. This is the one place provider error text enters fbi."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return redact(f"{type(error).__name__}: {text}")[:400]


_SECRET_PATTERNS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]{6,}"), r"\1 [redacted]"),
    (re.compile(r"(?i)((?:authorization|x-api-key|api[-_ ]?key|token)[\"']?\s*[:=]\s*[\"']?)"
                r"(?:(?:basic|bearer|token)\s+)?[^\s\"',}]+"), r"\1[redacted]"),
    (re.compile(r"\bsk-[\w-]{6,}"), "sk-[redacted]"),
    (re.compile(r"\bhf_[A-Za-z0-9]{6,}"), "hf_[redacted]"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@"), r"\1[redacted]@"),
)


def redact(text: str) -> str:
    """``text`` without API keys, bearer tokens, ``Authorization`` values and URL
    credentials — and without the value of any secret-looking environment variable
    (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``), wherever a provider echoed it."""
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(("_KEY", "_TOKEN", "_SECRET")):
            text = text.replace(value, "[redacted]")
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def public_url(url: str | None) -> str | None:
    """A URL without its user:password part, fit to be written down."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD for a call of this size from litellm's cost data; None for unknown models."""
    litellm = import_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:
        return None
    return prompt_cost + completion_cost


def litellm_version() -> str:
    """The installed litellm's version, without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return ""


def count_tokens(model: str, messages: list[dict[str, str]]) -> int:
    litellm = import_litellm()
    try:
        return int(litellm.token_counter(model=model, messages=messages))
    except Exception:  # a tokenizer litellm cannot find: ~4 characters a token
        return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)
