"""A dry run's estimate of a call before it is made: its prompt tokens by litellm's
tokenizer for the model, and its cost by litellm's price table (`fbi evaluate
--dry-run`, and a perturbation's token budget)."""

from __future__ import annotations

from fbi.providers import import_litellm


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD for a call of this size from litellm's cost data; 0 for a model that runs on
    this machine; None for unknown models."""
    from fbi.providers import runs_here

    if runs_here(model):
        return 0.0
    litellm = import_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:
        return None
    return prompt_cost + completion_cost


def count_tokens(model: str, messages: list[dict[str, str]]) -> int:
    """The prompt tokens of ``messages`` for ``model``, by litellm's tokenizer for it (a
    dry run's estimate); about 4 characters a token when it has none."""
    litellm = import_litellm()
    try:
        return int(litellm.token_counter(model=model, messages=messages))
    except Exception:  # a tokenizer litellm cannot find: ~4 characters a token
        return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)
