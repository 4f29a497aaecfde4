"""What both runtimes of the embedded judge share: the reply they return, and how a
token is chosen from the logits and reported with its log-probabilities."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: What the stream reports for a token: its text, its log-probability and the top
#: alternatives as (text, log-probability), most likely first.
TokenLogprobs = tuple[str, float, list[tuple[str, float]]]


@dataclass
class Generation:
    """One reply of the embedded model."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "length"
    logprobs: list[TokenLogprobs] = field(default_factory=list)  # when asked for


class ContextOverflow(ValueError):
    """The prompt and the reply budget do not fit the model's context."""


def check_fits(prompt_tokens: int, max_tokens: int, context: int) -> None:
    """ContextOverflow, in llama-cpp-python's own words, when the prompt and the reply
    budget exceed the context (both runtimes say it alike)."""
    if prompt_tokens + max_tokens > context:
        raise ContextOverflow(f"Requested tokens ({prompt_tokens + max_tokens}) exceed "
                              f"context window of {context}")


def draw(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The most likely token at temperature 0, else one drawn at the temperature."""
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    weights = np.exp(scaled - scaled.max())
    cumulative = np.cumsum(weights)
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def token_logprobs(logits: np.ndarray, token: int, piece: str, top: int,
                   text_of: Callable[[int], str]) -> TokenLogprobs:
    """The model's own log-probabilities (temperature 1, before the grammar), as OpenAI
    reports them: the chosen token's and the ``top`` most likely, by their text."""
    values = logits.astype(np.float64)
    values -= values.max()
    values -= np.log(np.exp(values).sum())
    best = np.argpartition(-values, top)[:top]
    best = best[np.argsort(-values[best])]
    return piece, float(values[token]), [(text_of(int(t)), float(values[t])) for t in best]
