"""The one reply record: what a model said and what it cost, however it came
(a transport, the response cache, a provider's batch file, an Inspect log, a reparse)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from fbi.escaping import without_surrogates
from fbi.providers._errors import BadReply
from fbi.providers._logprobs import checked_token_logprobs
from fbi.thinking import split_thinking


@dataclass
class ModelResponse:
    """One reply of a model, the one record every transport, the cache, a provider's
    batch file and a reparse make: its text, tokens, cost and how it came."""

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
    served_by: str | None = None
    """The model the reply says it came from (never cached: a cached reply is the
    model's the request named)."""
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

    @classmethod
    def received(cls, **fields: Any) -> ModelResponse:
        """A reply as a transport read it: thinking that opens its text is split off
        into ``reasoning`` (even beside a server's reasoning field: a draft there is
        thinking too, never the verdict), the text as it came kept in ``content`` (the
        judge splits it again, knowing the answers: `fbi.thinking`)."""
        response = cls(**fields)
        reply, thinking = split_thinking(response.text)
        if thinking is not None:
            response.content, response.text = response.text, reply
            response.reasoning = thinking if response.reasoning is None else \
                f"{response.reasoning}\n\n{thinking}"
        return response

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



#: More tokens than any model reads or writes in one call: a usage count above it is a
#: server's lie (it would price a call at millions of dollars).
MAX_TOKEN_COUNT = 10_000_000


def token_count(usage: dict, name: str) -> int:
    """A usage field (``prompt_tokens``) as a count of tokens; a `BadReply` for one that
    is no whole number from 0 to `MAX_TOKEN_COUNT` (an absurd count would price a call
    at millions of dollars)."""
    value = usage.get(name) or 0
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadReply(f"usage {name} {_shown(value)} is not a count of tokens")
    if value > MAX_TOKEN_COUNT:  # (compared as integers: past 2**1024 no float holds it)
        raise BadReply(f"usage {name} {_shown(value)} is more tokens than any call holds")
    return value


def _shown(value: object) -> str:
    """A value as a message shows it: short, even for an integer of thousands of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"(an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits)"
    return repr(value)[:60]


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
