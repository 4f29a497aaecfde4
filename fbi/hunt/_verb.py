"""`fbi.hunt`, the library verb under ``fbi hunt``: plan a hunt over a dataset or
trajectories, run it, say what it found (the stage itself is `fbi.hunt._hunt`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from fbi.errors import InputError
from fbi.findings import HuntResult
from fbi.hunt._config import HuntConfig
from fbi.hunt._hunt import Hunt, HuntStatus
from fbi.providers import ModelClient
from fbi.records import GoldItem
from fbi.runs import RunTotals


class HuntOutcome(NamedTuple):
    """What [`fbi.hunt`][fbi.hunt.hunt] did."""

    totals: RunTotals
    """The hunt's calls: made, cached, failed; stopped or not."""
    result: HuntResult | None
    """``hunt.json``: every candidate description and the confirmed findings, or None
    when the hunt stopped before its end (it resumes, nothing concluded yet)."""
    queued: int
    """The confirmed findings' missed edits written to ``queue.jsonl`` for vetting."""


def plan_hunt(config: HuntConfig, output: str | Path, dataset: str = "sample", *,
              trajectories: str | None = None, tools: str | Path | None = None,
              force: bool = False,
              observer: Callable[[HuntStatus], None] | None = None) -> Hunt:
    """The hunt ``config`` asks, over the gold answers of ``dataset`` (a spec as
    ``--dataset`` takes it) or the gold trajectories of ``trajectories`` (``sample`` or
    a file; ``tools``: an override file of what the tools declare,
    `fbi.trajectories.ToolOverrides`), into ``output``: ready to run or price;
    ``rows_read`` says how many rows the source held."""
    from fbi.datasets import load_gold_items

    if trajectories is None:
        if tools is not None:
            raise InputError("--tools corrects agents' tools: give it with --trajectories")
        items, rows = load_gold_items(dataset)
    else:
        from fbi.trajectories import (
            ToolOverrides,
            gold_only,
            read_trajectories,
            sample_trajectories,
        )

        if dataset != "sample":
            raise InputError("give --dataset (answers) or --trajectories (agents), not both")
        read = sample_trajectories() if trajectories == "sample" else \
            read_trajectories(trajectories)
        if tools is not None:
            read = ToolOverrides.read(tools).apply(read, str(tools))
        items, rows = [GoldItem.of_trajectory(t) for t in gold_only(read)], len(read)
        dataset = f"trajectories:{trajectories}"
    stage = Hunt(items, config, output, dataset, force, observer=observer)
    stage.rows_read = rows
    return stage


def hunt(judge: str | HuntConfig, output: str | Path, dataset: str = "sample", *,
         trajectories: str | None = None, tools: str | Path | None = None,
         client: ModelClient | None = None,
         progress=None, force: bool = False,
         observer: Callable[[HuntStatus], None] | None = None,
         announce: Callable[[Hunt], None] | None = None) -> HuntOutcome:
    """Search a judge's blind spots (what ``fbi hunt`` does): edits of the gold answers
    (or trajectories) it misses more often than random edits, found within the budget
    and confirmed on held-out items; writes ``output/hunt.json``, ``hunt.md`` and
    ``queue.jsonl``. ``judge``: a model string (the default budget, seed and
    strategies) or a whole [`HuntConfig`][fbi.hunt.HuntConfig]. ``client`` defaults to
    the judge's, with the response cache; ``observer`` is told each round's status;
    ``announce`` is given the planned hunt before its first call."""
    from fbi.cache import ResponseCache
    from fbi.judge import default_strategies
    from fbi.settings import ModelSettings

    if isinstance(judge, str):
        judge = HuntConfig(model=ModelSettings(model=judge), strategies=default_strategies(
            judge, "answer" if trajectories is None else "trajectory"))
    stage = plan_hunt(judge, output, dataset, trajectories=trajectories, tools=tools,
                      force=force, observer=observer)
    if announce is not None:
        announce(stage)
    totals = stage.run(client or judge.model.client(ResponseCache()), progress)
    return HuntOutcome(totals, stage.result, stage.queued)
