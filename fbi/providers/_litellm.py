"""Every provider fbi does not speak to itself, through litellm: the transport, what
litellm knows of a model before any call (its provider, its key, whether it returns
log-probabilities), and its price data.

litellm is imported lazily (it takes seconds and would slow `fbi --help`), with its cost
map read from the package rather than the network, and not at all on the direct path.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from fbi.errors import ConfigError, MissingKey
from fbi.providers._errors import BadReply
from fbi.providers._logprobs import token_logprobs_of
from fbi.providers._registry import direct, provider_for
from fbi.providers._response import ModelResponse, token_count

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
    """Import litellm once, offline-safe and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    if not getattr(litellm, "_fbi_ready", False):
        litellm.suppress_debug_info = True
        litellm.drop_params = True  # a provider without json_schema gets free text instead
        litellm.telemetry = False
        litellm._fbi_ready = True
    return litellm



class LitellmTransport:
    """Every other provider, through ``litellm.acompletion``."""

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse:
        litellm = import_litellm()
        started = time.perf_counter()
        reply = await litellm.acompletion(**self._with(arguments, server, api_key))
        return self._read(litellm, reply, time.perf_counter() - started)

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse:
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
    def _read(litellm: Any, reply: Any, latency: float) -> ModelResponse:
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
        return ModelResponse.received(
            text=text or "", prompt_tokens=token_count(counts, "prompt_tokens"),
            completion_tokens=token_count(counts, "completion_tokens"),
            cost=litellm_cost(litellm, reply), latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            served_by=getattr(reply, "model", None), token_logprobs=token_logprobs_of(choice),
            reasoning=reasoning if isinstance(reasoning, str) else None,
            reasoning_tokens=token_count({"r": reasoning_tokens}, "r"))

    async def aclose(self) -> None:
        return None


@functools.cache
def supports_logprobs(model: str, api_base: str | None = None) -> bool | None:
    """Whether this model's calls can carry token log-probabilities (``top_logprobs``):
    fbi's own providers always ask (a server without them leaves them out); through
    litellm, True or False from its table of supported parameters, None
    when it does not know the model."""
    if direct(model, api_base):
        return True  # fbi's own request
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
    what to set. A provider of fbi's own checks its model itself (`Provider.check`: the
    embedded judge's weights are fetched now when they are not here yet, unless
    ``fetch_weights`` is False: a dry run fetches nothing)."""
    provider = provider_for(model, api_base)
    if provider is not None and provider.check is not None:
        provider.check(model, fetch_weights)
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


def placeholder_key(model: str, api_base: str | None) -> str | None:
    """A stand-in key for a self-hosted server (vLLM, llama.cpp, Ollama) that wants none,
    when the provider's key is not set: litellm's OpenAI client refuses to send a request
    without one."""
    if not api_base or not _missing_keys(model):
        return None
    return "fbi-no-key"


def litellm_version() -> str:
    """The installed litellm's version, without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return ""

