"""A judge run, indexed for `fbi view`: what its pages ask, answered from memory, with
each judgment's full record read back alone from where its line starts.

Built once per run by reading its log the way a report does (`fbi.runs.load_run`, lean
records) and then kept small: one row per instance × strategy (its outcome, as the
report counts it, `fbi.metrics.instance_outcomes`) and one per call (its role and byte
offset), in numpy arrays; the rates of the grid (`fbi.metrics.aggregate`, the report's
own numbers); the instances themselves, shared with every run over the same dataset
file. The lean judgments are dropped once indexed. Raw replies and reasoning are never
held: the instance page reads its calls' lines by offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fbi.errors import InputError
from fbi.files import open_regular
from fbi.metrics import InstanceOutcome, aggregate, instance_outcomes, missing_outcomes
from fbi.records import Instance, Judgment
from fbi.runs import load_run
from fbi.taxonomy import strategy_order
from fbi.view._catalog import RunEntry

#: Outcome codes of the index's rows (`fbi.metrics.InstanceOutcome.outcome`).
OUTCOMES = ("detected", "undetected", "retained", "penalised", "unparseable", "missing")
_CODE = {name: code for code, name in enumerate(OUTCOMES)}
#: Call roles, in the order the instance page shows them.
ROLES = ("gold", "perturbed", "gold-first", "perturbed-first")


@dataclass(frozen=True)
class Stamp:
    """What a run's log looked like when indexed: a change means index it again."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> Stamp:
        stat = path.stat()
        return cls(stat.st_size, stat.st_mtime_ns)


@dataclass
class RunIndex:
    """One judge run, indexed (see the module docstring)."""

    entry: RunEntry
    """The run as the runs page lists it."""
    stamp: Stamp
    """Its judgments.jsonl when indexed."""
    instances: dict[str, Instance]
    """The run's instances by id (shared by runs over one dataset file)."""
    ids: list[str]
    """Instance ids in row order: by category, then id."""
    strategies: list[str]
    """Its strategies, in the paper's order."""
    paradigms: dict[str, str]
    """Each strategy's paradigm."""
    row_instance: np.ndarray
    """Per instance × strategy row: the instance's position in ``ids``."""
    row_strategy: np.ndarray
    """Per row: the strategy's position in ``strategies``."""
    row_outcome: np.ndarray
    """Per row: the outcome's code (`OUTCOMES`)."""
    call_instance: np.ndarray
    """Per call (first sample): the instance's position in ``ids``."""
    call_strategy: np.ndarray
    """Per call: the strategy's position."""
    call_role: np.ndarray
    """Per call: the role's position in `ROLES`."""
    call_offset: np.ndarray
    """Per call: where its last record's line starts in judgments.jsonl."""
    rates: list = field(default_factory=list)
    """The report's rate rows (`fbi.metrics.GroupRate`): per category, ability, overall and
    score-invariant, per strategy."""
    calls: int = 0
    """Calls recorded (first samples)."""
    cost_usd: float | None = 0.0
    """What they cost, every invocation together: the priced calls' sum; None when no
    call made was priced (the model has no price data: unknown, never $0)."""
    unpriced_calls: int = 0
    """Calls made (not from the cache, not failed) of unknown price."""
    unreadable_calls: int = 0
    """Calls without a readable verdict."""
    problems: list[str] = field(default_factory=list)
    """What could not be read, said."""
    _positions: dict[str, int] | None = field(default=None, repr=False)

    def outcomes(self, judge: str | None = None) -> list[InstanceOutcome]:
        """The rows as `InstanceOutcome`s under the name ``judge`` (default the run's
        key): what the comparison tests read."""
        judge = judge or self.entry.key
        result = []
        for i, s, o in zip(self.row_instance.tolist(), self.row_strategy.tolist(),
                           self.row_outcome.tolist(), strict=True):
            instance = self.instances[self.ids[i]]
            strategy = self.strategies[s]
            result.append(InstanceOutcome(instance.id, judge, strategy,
                                          self.paradigms[strategy], instance.ability,
                                          instance.category, OUTCOMES[o]))  # type: ignore[arg-type]
        return result

    def outcome_of(self, instance_id: str) -> dict[str, str]:
        """Strategy → outcome of one instance."""
        at = self.position_of(instance_id)
        rows = np.flatnonzero(self.row_instance == at) if at is not None else []
        return {self.strategies[int(self.row_strategy[r])]: OUTCOMES[int(self.row_outcome[r])]
                for r in rows}

    def position_of(self, instance_id: str) -> int | None:
        if self._positions is None:
            self._positions = {instance_id: n for n, instance_id in enumerate(self.ids)}
        return self._positions.get(instance_id)

    def judgments_of(self, instance_id: str) -> list[Judgment]:
        """The full records (raw reply, reasoning) of one instance's calls, each read
        alone from its offset, in strategy then role order."""
        at = self.position_of(instance_id)
        if at is None:
            return []
        calls = np.flatnonzero(self.call_instance == at)
        calls = sorted(calls.tolist(), key=lambda c: (int(self.call_strategy[c]),
                                                      int(self.call_role[c])))
        path = self.entry.folder / "judgments.jsonl"
        if Stamp.of(path).size < self.stamp.size:
            raise InputError(f"{path}: shorter than when it was read (it was rewritten). "
                             "Fix: reload the page")
        records = []
        with open_regular(path, "rb") as log:
            for call in calls:
                log.seek(int(self.call_offset[call]))
                records.append(Judgment.model_validate_json(log.readline()))
        return records


def build_index(entry: RunEntry) -> RunIndex:
    """Index a judge run (see the module docstring). Raises `InputError` for a folder
    that is not a readable judge run."""
    path = entry.folder / "judgments.jsonl"
    stamp = Stamp.of(path) if path.exists() else Stamp(0, 0)
    run = load_run(entry.folder, full=False, offsets=True)
    outcomes = instance_outcomes(run.judgments)
    strategies = strategy_order({j.strategy for j in run.judgments} | set(run.spec.prompts))
    paradigms = {j.strategy: j.paradigm for j in run.judgments}
    for name, prompt in run.spec.prompts.items():
        paradigms.setdefault(name, prompt.paradigm or "single")
    judge = run.judgments[0].judge if run.judgments else run.spec.model
    judged = [(s, paradigms[s]) for s in strategies]
    outcomes += missing_outcomes(outcomes, run.instances.values(), judge, judged)
    known = {o.instance_id for o in outcomes} | {j.instance_id for j in run.judgments}
    ids = sorted(known & run.instances.keys(),
                 key=lambda i: (run.instances[i].category, i))
    position = {instance_id: n for n, instance_id in enumerate(ids)}
    column = {strategy: n for n, strategy in enumerate(strategies)}
    kept = [o for o in outcomes if o.instance_id in position]
    calls = [j for j in run.judgments if j.instance_id in position and j.role in ROLES]
    unpriced = sum(j.cost is None and not j.cached and j.status != "error"
                   for j in run.judgments)
    index = RunIndex(
        entry=entry, stamp=stamp, instances=run.instances, ids=ids, strategies=strategies,
        paradigms=paradigms,
        row_instance=_array((position[o.instance_id] for o in kept), np.int32, len(kept)),
        row_strategy=_array((column[o.strategy] for o in kept), np.int16, len(kept)),
        row_outcome=_array((_CODE[o.outcome] for o in kept), np.int8, len(kept)),
        call_instance=_array((position[j.instance_id] for j in calls), np.int32, len(calls)),
        call_strategy=_array((column[j.strategy] for j in calls), np.int16, len(calls)),
        call_role=_array((ROLES.index(j.role) for j in calls), np.int8, len(calls)),
        call_offset=_array((run.offsets[j.call_id] for j in calls), np.int64, len(calls)),
        rates=aggregate(outcomes),
        calls=len(run.judgments),
        cost_usd=None if unpriced and all(j.cost is None for j in run.judgments)
        else sum(j.cost or 0.0 for j in run.judgments), unpriced_calls=unpriced,
        unreadable_calls=sum(j.status != "ok" for j in run.judgments),
        problems=list(run.problems),
    )
    strays = len(known - run.instances.keys())
    if strays:
        index.problems.append(f"{strays} judged instance(s) are not in the run's "
                              "instances.jsonl: they are left out of the pages")
    return index


def _array(values: Iterable, dtype, count: int) -> np.ndarray:
    return np.fromiter(values, dtype=dtype, count=count)


@dataclass(frozen=True)
class Filters:
    """What the instances page is asked for: every field a URL parameter, so a filtered
    view is a link to share."""

    runs: tuple[str, ...] = ()
    """The runs looked at (keys); none means every judge run served."""
    categories: tuple[str, ...] = ()
    """Only these categories."""
    abilities: tuple[str, ...] = ()
    """Only these abilities (short names: LF, F, IF, R)."""
    strategies: tuple[str, ...] = ()
    """Only outcomes under these strategies."""
    outcomes: tuple[str, ...] = ()
    """Only instances with one of these outcomes (under a run and strategy looked at)."""
    missed_by: str = ""
    """With ``caught_by``: instances this run missed (undetected) under a strategy …"""
    caught_by: str = ""
    """… under which that run detected the error."""
    text: str = ""
    """Words that must all occur in the question, an answer or the id (any case)."""
    page: int = 1
    """Which page of results (50 a page)."""


PAGE_SIZE = 50


@dataclass
class Matches:
    """The instances the filters keep: how many, and one page of them."""

    total: int
    """Instances kept."""
    page: list[tuple[Instance, dict[str, dict[str, str]]]]
    """This page's instances, each with its outcome per run (key) and strategy, for the
    runs and strategies looked at."""


def matching(indexes: Sequence[RunIndex], filters: Filters,
             by_key: dict[str, RunIndex]) -> Matches:
    """The instances the filters keep, in category then id order (see `Filters`). Only
    the arrays are scanned; outcomes are gathered for the page shown alone."""
    wanted = [_CODE[o] for o in filters.outcomes if o in _CODE]
    words = filters.text.casefold().split()
    contrast = _missed_but_caught(filters, by_key) \
        if filters.missed_by or filters.caught_by else None
    found: dict[str, Instance] = {}
    for index in indexes:
        allowed = np.fromiter((_instance_matches(index.instances[i], filters, words)
                               and (contrast is None or i in contrast) for i in index.ids),
                              dtype=bool, count=len(index.ids))
        keep = allowed[index.row_instance] & np.isin(index.row_strategy,
                                                      _strategy_codes(index, filters))
        if wanted:
            keep &= np.isin(index.row_outcome, wanted)
        for position in np.unique(index.row_instance[keep]).tolist():
            instance = index.instances[index.ids[position]]
            found.setdefault(instance.id, instance)
    ordered = sorted(found.values(), key=lambda i: (i.category, i.id))
    start = (max(filters.page, 1) - 1) * PAGE_SIZE
    page = []
    for instance in ordered[start:start + PAGE_SIZE]:
        outcomes = {}
        for index in indexes:
            shown = {s: o for s, o in index.outcome_of(instance.id).items()
                     if not filters.strategies or s in filters.strategies}
            if shown:
                outcomes[index.entry.key] = shown
        page.append((instance, outcomes))
    return Matches(len(ordered), page)


def _strategy_codes(index: RunIndex, filters: Filters) -> list[int]:
    return [n for n, s in enumerate(index.strategies)
            if not filters.strategies or s in filters.strategies]


def _instance_matches(instance: Instance, filters: Filters, words: list[str]) -> bool:
    if filters.categories and instance.category not in filters.categories:
        return False
    if filters.abilities and instance.ability.short not in filters.abilities:
        return False
    if words:
        text = " ".join((instance.id, instance.instruction, instance.gold_answer,
                         instance.perturbed_answer,
                         *(content for _, content in instance.context))).casefold()
        return all(word in text for word in words)
    return True


def _missed_but_caught(filters: Filters, by_key: dict[str, RunIndex]) -> set[str]:
    """Instances run A missed and run B caught under one strategy (both readable)."""
    if not (filters.missed_by and filters.caught_by):
        raise InputError("missed by / caught by: choose both runs (A missed, B caught)")
    for key in (filters.missed_by, filters.caught_by):
        if key not in by_key:
            raise InputError(f"missed by / caught by: no judge run '{key}' here. Fix: "
                             "choose runs from the runs page")
    a, b = by_key[filters.missed_by], by_key[filters.caught_by]

    def pairs(index: RunIndex, outcome: str) -> set[tuple[str, str]]:
        keep = index.row_outcome == _CODE[outcome]
        return {(index.ids[int(i)], index.strategies[int(s)])
                for i, s in zip(index.row_instance[keep].tolist(),
                                index.row_strategy[keep].tolist(), strict=True)
                if not filters.strategies or index.strategies[int(s)] in filters.strategies}

    both = pairs(a, "undetected") & pairs(b, "detected")
    return {instance_id for instance_id, _ in both}
