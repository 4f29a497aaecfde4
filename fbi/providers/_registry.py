"""The provider registry: which way a model's calls go, by the prefix of its model string.

A provider fbi sends to itself is a [`Provider`][fbi.providers.Provider] (a prefix and a
[`Transport`][fbi.providers.Transport] factory) registered with
[`register_provider`][fbi.providers.register_provider], as Inspect registers a model API
with ``@modelapi``: ``openai/NAME`` and ``hosted_vllm/NAME`` with ``--api-base``
(fbi's own HTTP client, `_http`), ``reward/NAME`` and ``hf-reward/PATH`` (reward models,
`_reward`), ``local/NAME`` (the embedded judge, `fbi.providers.local`). Every other model
string goes through litellm (`_litellm`). A new provider is one file that registers
itself (``docs/examples/keyed_gateway.py``); what sets a provider apart (a model run on
this machine, a reply limit of its own) is said by its fields, never by its name in the
core.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fbi.registry import Registry

if TYPE_CHECKING:
    from fbi.providers._response import ModelResponse

#: --model-arg names that are HTTP headers, not body fields, on the direct path.
HEADER_ARGS = ("extra_headers", "headers")


@dataclass(frozen=True)
class Provider:
    """A provider fbi sends to itself, named by the prefix of its model strings
    (``PREFIX/NAME``); every other model goes through litellm."""

    prefix: str
    """The model strings' prefix, e.g. ``openai`` for ``openai/NAME``."""
    transport: Any
    """Makes the provider's [`Transport`][fbi.providers.Transport], given the client's
    time-out in seconds."""
    needs_server: bool = False
    """Only when a server is given (--api-base); without one, litellm's own provider of
    that name (``openai/gpt-4o`` is OpenAI's)."""
    server_help: str = ""
    """For a provider that only works with a server: what to run there, said when
    --api-base is missing (a ConfigError before any call)."""
    check: Callable[[str, bool], None] | None = None
    """Before a run, ``check(model, fetch)``: ConfigError (or MissingExtra) with the fix
    when ``model`` cannot run here; with ``fetch``, it may fetch what the model needs now
    (the embedded judge's weights; a dry run fetches nothing)."""
    probe: bool = True
    """Whether a tiny call before the run checks the server, key and model (a model run
    in this process has none of them: its ``check`` says all there is)."""
    on_this_machine: bool = False
    """Its calls run on this machine: they cost nothing (a price of 0, not unknown)."""
    endpoint: Callable[[], str] | None = None
    """What stands for the server in the cache key and ``run.json`` when none is given
    (the embedded judge's runtime, whose replies differ slightly from the other's)."""
    abort: Callable[[], None] | None = None
    """On Ctrl-C: make the calls in flight in this process end at once (API calls are
    cancelled by the runner)."""
    allow: Callable[[], None] | None = None
    """When a run starts: undo ``abort``."""
    reply_tokens: int | None = None
    """The reply limit its calls get when --max-tokens is not given (else the protocol's)."""
    explanation_chars: int | None = None
    """The judge's explanation cap when --explanation-chars is not given (else fbi's)."""
    sees_images: bool = True
    """Whether its models read images in a request (a request with images to one that
    does not is refused before any call, never sent without them)."""


#: The providers fbi sends to itself, by prefix (`register_provider` adds one): a
#: [`Registry`][fbi.registry.Registry] whose ``fbi.providers`` entry points are fbi's
#: own transports' modules, and any plug-in package's.
PROVIDERS: Registry[Provider] = Registry("provider", "fbi.providers")


def register_provider(provider: Provider) -> None:
    """Send the calls of ``PREFIX/NAME`` models through ``provider``'s transport (the
    same prefix registered again is replaced: the last word is the provider's)."""
    PROVIDERS.remove(provider.prefix)
    PROVIDERS.add(provider.prefix, provider)


def provider_for(model: str, api_base: str | None) -> Provider | None:
    """The provider fbi sends this model's calls to itself, or None (litellm's)."""
    provider = registered_provider(model)
    if provider is None or (provider.needs_server and not api_base):
        return None
    return provider


def registered_provider(model: str) -> Provider | None:
    """The registered provider of the model string's prefix, server or not (what the
    provider says of its models: where they run, their defaults)."""
    prefix = model.split("/", 1)[0] if "/" in model else None
    return PROVIDERS.get(prefix) if prefix in PROVIDERS else None


def direct(model: str, api_base: str | None) -> bool:
    """Whether fbi sends this model's calls itself
    ([`provider_for`][fbi.providers.provider_for])."""
    return provider_for(model, api_base) is not None


def served_name(model: str) -> str:
    """The model's name as its server knows it: ``openai/llama-3`` → ``llama-3``."""
    return model.split("/", 1)[1] if "/" in model else model


class Transport(Protocol):
    """Sends one request (its litellm-style arguments) to one server."""

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse: ...

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse: ...

    async def aclose(self) -> None: ...


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


def provider_family(model: str) -> str:
    """The provider a model string names, as litellm reads it: its prefix, or for a bare
    name the provider it starts like (``claude-…`` is Anthropic's, anything else
    OpenAI's)."""
    if "/" in model:
        return model.split("/", 1)[0]
    return next((name for start, name in _BARE_PROVIDERS
                 if model.lower().startswith(start)), "openai")


def environment_endpoint(model: str) -> str | None:
    """The server a model's calls go to when no api_base is given, as litellm reads it
    from the environment (``OPENAI_BASE_URL`` for ``gpt-4-turbo`` and ``openai/…``), or
    None for the provider's own. It belongs to the cache key and to ``run.json``: a reply
    a test server made is never served as the provider's (issue 50)."""
    registered = registered_provider(model)
    if registered is not None and registered.endpoint is not None:
        return registered.endpoint()
    provider = provider_family(model)
    names = ENDPOINT_VARIABLES.get(provider) or (f"{provider.upper()}_API_BASE",
                                                  f"{provider.upper()}_BASE_URL")
    return next((os.environ[name] for name in names if os.environ.get(name)), None)
