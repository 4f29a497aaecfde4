"""The providers whose batch services fbi drives, and how (``fbi evaluate --batch``; the
harness's side is `fbi.runs`' batch runner): ``openai`` and ``azure`` (OpenAI's
chat-completions JSONL) and ``mistral`` (Mistral's Batch API: lines of ``custom_id`` and
``body``, the model set on the job; litellm cannot cancel its jobs, nor list them: an
orphaned Mistral job is not adopted), through litellm's files and batches API;
``anthropic`` (Message Batches) and ``gemini`` through their official SDKs
(`_batch_services`). Others are refused with a message naming these. A batch output
line is read as a live reply is (`_http.reply_of`), at the batch price.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fbi.errors import ConfigError
from fbi.providers._batch_services import (
    ENDPOINT,
    AnthropicBatches,
    BatchService,
    GeminiBatches,
    LitellmBatches,
)
from fbi.providers._errors import BadReply, WrongModel
from fbi.providers._http import reply_of
from fbi.providers._litellm import import_litellm
from fbi.providers._prices import cost_of, reasoning_cost
from fbi.providers._response import ModelResponse
from fbi.redaction import redact_known_secrets
from fbi.registry import Registry


def _openai_line(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}


def _mistral_line(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Mistral's layout: the model is the job's, and a seed is ``random_seed``."""
    body = {key: value for key, value in body.items() if key != "model"}
    if "seed" in body:
        body["random_seed"] = body.pop("seed")
    return {"custom_id": custom_id, "body": body}


@dataclass(frozen=True)
class BatchProtocol:
    """How fbi drives one provider's batch service: through litellm (``line`` given), or
    through the provider's own SDK (``sdk``)."""

    name: str
    """The provider as help text and messages name it."""
    line: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    """Through litellm: (call id, body) → input line."""
    model_on_job: bool = False
    """Litellm needs the model to create and retrieve its jobs."""
    can_cancel: bool = True
    """Its batches can be cancelled."""
    can_list: bool = True
    """Its batches can be listed (how orphans are found)."""
    sdk: Callable[..., BatchService] | None = None
    """Through the provider's SDK: (model, provider's model name, api_base, key,
    time-out) → the service."""
    deployment: bool = False
    """Its model strings name a deployment, not a model: a reply names the model the
    deployment serves, which fbi cannot know, so it is not checked against the request."""

    def service(self, provider: str, model: str, model_name: str, api_base: str | None,
                key: str | None, timeout_s: float) -> BatchService:
        """The batch service of ``model``'s calls."""
        if self.sdk is not None:
            return self.sdk(model, model_name, api_base, key, timeout_s)
        assert self.line is not None
        return LitellmBatches(self.name, provider, model, api_base, key, self.line,
                              self.model_on_job, self.can_cancel, self.can_list)


#: The batch services fbi drives, by litellm's provider name (`register_batch_protocol`
#: adds one): a [`Registry`][fbi.registry.Registry] whose ``fbi.batch_protocols`` entry
#: points are the modules registering them (fbi's own: this one).
BATCH_PROTOCOLS: Registry[BatchProtocol] = Registry("batch protocol",
                                                    "fbi.batch_protocols")


def register_batch_protocol(provider: str, protocol: BatchProtocol) -> None:
    """Drive the batch service of litellm's ``provider`` (``openai``, ...) this way (the
    same provider registered again is replaced)."""
    BATCH_PROTOCOLS.remove(provider)
    BATCH_PROTOCOLS.add(provider, protocol)


for _name, _protocol in (
        ("openai", BatchProtocol("OpenAI", _openai_line)),
        ("azure", BatchProtocol("Azure", _openai_line, deployment=True)),
        ("mistral", BatchProtocol("Mistral", _mistral_line, model_on_job=True,
                                  can_cancel=False, can_list=False)),
        ("anthropic", BatchProtocol("Anthropic", sdk=AnthropicBatches)),
        ("gemini", BatchProtocol("Gemini", sdk=GeminiBatches))):
    register_batch_protocol(_name, _protocol)


def batch_providers() -> str:
    """The providers whose batch API fbi drives, named for help text ("OpenAI, Azure,
    ..."): the one list the CLI's help and messages read."""
    return ", ".join(protocol.name for protocol in BATCH_PROTOCOLS.values())


def provider_of(model: str, api_base: str | None) -> tuple[str, str]:
    """(provider, the provider's own model name); ConfigError for a provider whose batch
    API fbi does not drive."""
    try:
        model_name, provider = import_litellm().get_llm_provider(model, api_base=api_base)[:2]
    except Exception:  # litellm knows no provider for it (reward/, local/, a typo)
        raise ConfigError(f"{model}: batch mode drives the batch APIs of "
                          f"{batch_providers()}, and litellm knows no provider for this "
                          "model. Fix: run without --batch") from None
    if provider not in BATCH_PROTOCOLS:
        raise ConfigError(f"{model}: batch mode drives the batch APIs of "
                          f"{batch_providers()}, not {provider}. Fix: run without --batch")
    return provider, model_name


def batch_reply(line: dict, model: str, check_model: bool = True) -> ModelResponse | None:
    """A batch output line as a reply, or None when the request failed or the line is
    not the shape a reply has (the provider's file is input like any other: its body is
    read as a live reply is, `_http.reply_of`) — or
    it names another model than the one asked for, as a live reply may not."""
    response = line.get("response")
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return None
    try:
        reply = reply_of(response.get("body"), asked=model if check_model else None)
    except (BadReply, WrongModel):
        return None
    return dataclasses.replace(
        reply, text=redact_known_secrets(reply.text),
        cost=batch_cost(model, reply.prompt_tokens, reply.completion_tokens),
        reasoning=None if reply.reasoning is None else redact_known_secrets(reply.reasoning),
        content=None if reply.content is None else redact_known_secrets(reply.content),
        reasoning_cost=reasoning_cost(model, reply.reasoning_tokens, batch=True))


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD at the provider's batch prices from litellm's price table; the live price (an
    upper bound) where it has no batch price; None for a model it does not know."""
    return cost_of(model, prompt_tokens, completion_tokens, batch=True)
