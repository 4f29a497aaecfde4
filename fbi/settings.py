"""How a stage reaches and samples its model: one
[`ModelSettings`][fbi.settings.ModelSettings], held by every stage's config (evaluate,
perturb, robustness, explain-check), from which the model client is made
([`ModelSettings.client`][fbi.settings.ModelSettings.client]).

The settings check themselves when made, so a Python caller gets the CLI's refusals as
an [`InputError`][fbi.InputError]: numbers finite and in range, a pool whose first
server is the api_base, and ``model_args`` that set nothing fbi sets itself and hold no
NaN or infinity (a provider would refuse every call after its retries). Secret model
arguments — HTTP headers, keys, tokens, passwords, credentials
(`fbi.redaction.is_secret_arg`) — are redacted wherever provider text enters fbi
from the moment the settings exist, and recorded only as ``[secret]``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fbi.errors import InputError, validation_summary
from fbi.redaction import (
    SECRET_PLACEHOLDER,
    holds_url_credentials,
    is_secret_arg,
    keep_nested_secrets,
    keep_secret_values,
    keep_url_secrets,
    without_nested_secrets,
)

#: litellm parameters that have an option of their own, or that fbi sets itself.
RESERVED_MODEL_ARGS = frozenset({
    "model", "messages", "api_key", "api_base", "temperature", "max_tokens", "seed",
    "response_format", "timeout", "num_retries", "max_retries", "stream", "logprobs",
    "top_logprobs"})
#: Bounds of the numeric settings (a mistyped 10000000000 is a message, not a machine out
#: of memory).
MAX_CONCURRENCY = 1024
MAX_RETRIES = 100


class ModelSettings(BaseModel):
    """A stage's model and how it is called; identity (what changes a reply) and the rest
    alike. ``None`` in a sampling field means the stage's own default."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model: str = Field(min_length=1)
    """A litellm model string (``openai/gpt-4o``, ``anthropic/…``, ``openai/NAME`` with
    an ``api_base``), or the embedded ``local/smollm2-135m``."""
    api_base: str | None = None
    """The model's server (an OpenAI-compatible URL), or the first server of a pool."""
    api_pool: tuple[str, ...] = ()
    """Every server of a pool of one model (more than one), the first the ``api_base``."""
    temperature: float | None = Field(default=None, ge=0, le=5, allow_inf_nan=False)
    """Sampling temperature; None: the stage's own (0 for judges, 0.7 for perturbation)."""
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    """The reply's token limit; None: the stage's own."""
    seed: int | None = Field(default=None, ge=-(2 ** 63), le=2 ** 63 - 1)
    """Sampling seed, for providers that take one."""
    model_args: tuple[tuple[str, Any], ...] = ()
    """Further parameters of the request (``--model-arg top_p=0.9``), sorted by name."""
    concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    """Calls in flight at once."""
    timeout_s: float = Field(default=120.0, ge=1, le=86_400, allow_inf_nan=False)
    """Seconds per call."""
    retries: int = Field(default=6, ge=0, le=MAX_RETRIES)
    """Retries of a call on 429, 5xx and time-outs."""
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Stop before spending more (USD); None: no limit."""
    rpm: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """At most this many requests a minute; None: no limit."""
    probe: bool = True
    """Make one tiny call before the run, so a wrong model, key or server is a message."""

    def __init__(self, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise InputError(f"model settings: {validation_summary(error)}. Fix: correct "
                             "the value") from None

    @field_validator("model_args", mode="before")
    @classmethod
    def _checked_args(cls, value: Any) -> tuple[tuple[str, Any], ...]:
        items = sorted(dict(value).items()) if value else []
        for name, arg in items:
            if not isinstance(name, str) or not name:
                raise ValueError(f"{name!r} is not a parameter name")
            if name in RESERVED_MODEL_ARGS:
                raise ValueError(f"{name!r} is set by its own option or by fbi")
            found = _non_finite(arg)
            if found is not None:
                raise ValueError(f"{name}={found}: not a finite number (every call would "
                                 "be refused)")
            try:
                json.dumps(arg, allow_nan=False)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: {arg!r} is not a JSON value") from None
        return tuple(items)

    @model_validator(mode="after")
    def _pool_named_by_its_first(self) -> ModelSettings:
        if self.api_pool:
            if len(set(self.api_pool)) != len(self.api_pool):
                raise ValueError("api_pool names a server twice")
            if self.api_base != self.api_pool[0]:
                raise ValueError("api_base must be the pool's first server")
        return self

    def model_post_init(self, context: Any) -> None:
        # every secret these settings carry is redacted wherever text enters fbi: a
        # secret argument's value, one nested under a secret-named key, a server URL's
        # password or secret query parameter
        for name, value in self.model_args:
            if is_secret_arg(name):
                keep_secret_values(value)
            else:
                keep_nested_secrets(value)
        for url in (self.api_base, *self.api_pool):
            keep_url_secrets(url)

    @property
    def endpoint(self) -> str | None:
        """The server the calls go to: the api_base, or without one the server the
        environment names for the provider (``OPENAI_BASE_URL``), or None for the
        provider's own; ``run.json`` records it as its ``api_base``."""
        from fbi.providers import environment_endpoint

        return self.api_base or environment_endpoint(self.model)

    @property
    def secret_arg_names(self) -> list[str]:
        """The names of the model arguments that hold secrets: by their name, or by a
        URL with a password in their value."""
        return [name for name, value in self.model_args
                if is_secret_arg(name) or holds_url_credentials(value)]

    def recorded_model_args(self) -> dict[str, Any]:
        """The model arguments as run.json keeps them: a secret's value is ``[secret]``."""
        secret = set(self.secret_arg_names)
        return {name: SECRET_PLACEHOLDER if name in secret
                else without_nested_secrets(value) for name, value in self.model_args}

    def client(self, cache=None, api_key: str | None = None, **options: Any):
        """The [`ModelClient`][fbi.providers.ModelClient] these settings describe."""
        from fbi.providers import ModelClient, RetryPolicy

        return ModelClient(cache=cache, timeout_s=self.timeout_s,
                           retry=RetryPolicy(max_retries=self.retries), api_key=api_key,
                           rpm=self.rpm, probe_first=self.probe, api_pool=self.api_pool,
                           **options)


def _non_finite(value: Any) -> str | None:
    """The first NaN or infinity inside a JSON-like value, as text, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            found = _non_finite(item)
            if found is not None:
                return found
    return None


def parse_model_arg(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as (KEY, VALUE), VALUE read as JSON where it parses (0.9, true,
    {"a": 1}) and as text otherwise; InputError for a pair without a key, or a JSON
    NaN or infinity (which no provider takes)."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"--model-arg {item!r} is not KEY=VALUE, e.g. top_p=0.9")

    def refuse(name: str) -> Any:
        raise InputError(f"--model-arg {key}={raw}: {name} is not a finite number. Fix: "
                         "give a number")

    try:
        value = json.loads(raw, parse_constant=refuse)
    except json.JSONDecodeError:
        value = raw
    found = _non_finite(value)
    if found is not None:
        refuse(found)
    return key, value
