"""Option bundles: options commands share, given to a command as one typed parameter
(as Inspect's ``Unpack[GenerateConfigArgs]``), so each option is declared once and no
command's signature lists them one by one.

``@calls_bundle`` adds --concurrency, --timeout, --retries, --max-cost, --api-key, --rpm
and --no-probe, and the command receives ``calls: CallOptions``; the other bundles are
the response cache (``cache``), provider batches (``batch``) and a reasoning model's
effort (``reasoning``). A command's own groups of options (evaluate's dataset choice,
the hunt's search) are bundles of that command's module, made with `bundle`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbi.cli._run import (
    batch_of,
    batch_options,
    cache_options,
    concurrency_option,
    max_cost_option,
    model_access_options,
    model_settings,
    reasoning_options,
    retries_option,
    timeout_option,
    with_reasoning,
)


def _names(options: tuple[Callable, ...]) -> list[str]:
    """The parameter names the click decorators ``options`` add."""
    def probe() -> None: ...

    for option in options:
        option(probe)
    return [param.name for param in probe.__click_params__]  # type: ignore[attr-defined]


def bundle(name: str, build: Callable[..., Any], *options: Callable) -> Callable:
    """A decorator adding the click ``options`` (in this order) to a command, which
    receives them as one parameter ``name``: ``build(**their values)``."""
    names = _names(options)

    def apply(command: Callable) -> Callable:
        @functools.wraps(command)
        def gathered(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build(**{n: kwargs.pop(n) for n in names})
            return command(*args, **kwargs)

        for option in reversed(options):
            gathered = option(gathered)
        return gathered

    return apply


@dataclass(frozen=True)
class CallOptions:
    """How a command's model calls are made: at once, patient, retried, paid for, keyed."""

    concurrency: int = 8
    timeout: float = 120.0
    retries: int = 6
    max_cost: float | None = None
    api_key: str | None = None
    """--api-key: held in memory only, never written."""
    rpm: float | None = None
    no_probe: bool = False

    def settings(self, model: str, api_bases: tuple[str, ...] | str | None = (),
                 **sampling: Any):
        """The ModelSettings of ``model`` on ``api_bases`` (several: a pool) with these
        options, and ``sampling`` (temperature, max_tokens, seed, model_args)."""
        return model_settings(model, api_bases, concurrency=self.concurrency,
                              timeout=self.timeout, retries=self.retries,
                              max_cost=self.max_cost, rpm=self.rpm, no_probe=self.no_probe,
                              **sampling)

    def client(self, settings, cache: CacheChoice | None = None):
        """The ModelClient of ``settings``: the response cache as ``cache`` says (none
        without one: the gate and the watch never read it), and --api-key."""
        from fbi.cache import ResponseCache

        store = None if cache is None or cache.no_cache else ResponseCache(cache.cache_path)
        return settings.client(store, api_key=self.api_key)


calls_bundle = bundle("calls", CallOptions, concurrency_option, timeout_option,
                      retries_option, max_cost_option, model_access_options)


@dataclass(frozen=True)
class CacheChoice:
    """--no-cache and --cache."""

    no_cache: bool = False
    cache_path: Path | None = None


cache_bundle = bundle("cache", CacheChoice, cache_options)


@dataclass(frozen=True)
class BatchChoice:
    """--batch, --wait, --poll and --batch-fallback."""

    batch: bool = False
    wait: bool = False
    poll: float = 30.0
    batch_fallback: str = "batch"

    def options(self, concurrency: int):
        """The run's BatchOptions, or None without --batch (--wait alone: a usage error)."""
        return batch_of(self.batch, self.wait, self.poll, self.batch_fallback, concurrency)


batch_bundle = bundle("batch", BatchChoice, batch_options)


@dataclass(frozen=True)
class ReasoningChoice:
    """--reasoning-effort and --thinking-budget."""

    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def model_args(self, given: tuple[tuple[str, object], ...] = ()
                   ) -> tuple[tuple[str, object], ...]:
        """``given`` --model-arg values with these as the parameters they send."""
        return with_reasoning(given, self.reasoning_effort, self.thinking_budget)


reasoning_bundle = bundle("reasoning", ReasoningChoice, reasoning_options)

