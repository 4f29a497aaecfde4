"""USD per token of a model, from the price table litellm ships, read without importing
litellm (3 s): the direct HTTP path prices its replies with it, as litellm would.

The table is litellm's ``model_prices_and_context_window_backup.json`` (the one
``LITELLM_LOCAL_MODEL_COST_MAP`` makes litellm use), found through the package's
location and read once.
"""

from __future__ import annotations

import functools
import json
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from fbi.files import read_text

_TABLE = "model_prices_and_context_window_backup.json"


@functools.cache
def _prices() -> dict[str, Any]:
    spec = find_spec("litellm")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / _TABLE
        if path.is_file():
            try:
                return json.loads(read_text(path))
            except (OSError, ValueError):
                return {}
    return {}


def runs_here(model: str) -> bool:
    """Whether the model runs on this machine (its provider says so: the embedded judge,
    a local reward model): nothing is paid for its calls, a price of 0 rather than an
    unknown one."""
    from fbi.providers._registry import registered_provider

    provider = registered_provider(model)
    return provider is not None and provider.on_this_machine


def price_of(model: str, batch: bool = False) -> tuple[float, float] | None:
    """(USD per prompt token, per reply token) of ``model`` (``openai/gpt-4o-mini`` or
    ``gpt-4o-mini``); the batch prices with ``batch`` where the table has them (else the
    live ones, an upper bound). None for a model the table does not price."""
    if runs_here(model):
        return 0.0, 0.0
    table = _prices()
    entry = table.get(model) or table.get(model.split("/", 1)[-1])
    if not isinstance(entry, dict):
        return None
    suffix = "_batches" if batch else ""
    prompt = entry.get(f"input_cost_per_token{suffix}", entry.get("input_cost_per_token"))
    reply = entry.get(f"output_cost_per_token{suffix}", entry.get("output_cost_per_token"))
    if not isinstance(prompt, int | float) or not isinstance(reply, int | float):
        return None
    return float(prompt), float(reply)


def cost_of(model: str, prompt_tokens: int, completion_tokens: int,
            batch: bool = False) -> float | None:
    """USD of a call of this size (see `price_of`), None when unpriced."""
    price = price_of(model, batch)
    if price is None:
        return None
    return prompt_tokens * price[0] + completion_tokens * price[1]


def reasoning_cost(model: str, reasoning_tokens: int, batch: bool = False) -> float | None:
    """USD of ``reasoning_tokens`` at the model's reply-token price (providers count
    reasoning among the reply tokens and bill it so); 0 for none, None when unpriced."""
    if not reasoning_tokens:
        return 0.0
    price = price_of(model, batch)
    return None if price is None else reasoning_tokens * price[1]
