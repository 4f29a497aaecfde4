"""`fbi watch`: ask a judge a small canary set again and again, and raise an alarm when
its behaviour changed (`_evidence`).

**The canary.** ``per_category`` instances of each category of the suite, a seeded random
choice (the same for the same suite and seed). **A step** asks every stream (a strategy
on one category) as many judgments as the stream has canary instances, each of an
instance drawn uniformly *with replacement* from the stream's canary, by a generator
seeded by the watch's seed and the step's number. The draw is what makes the
e-process's null exact: an unchanged judge's judgments of a stream are then independent
draws of one failure rate, whatever each instance's own rate (asking every instance once
a step would make the steps' counts sums of different rates, which the null does not
describe). A judgment *fails* when its instance's outcome (paper §4, `fbi.metrics`)
is an error left undetected, a score-invariant rewrite penalised, or no readable
verdict — a judge that starts answering garbage has changed too.

**State.** The calls go into ``DIR/judgments.jsonl`` (a step interrupted resumes where it
stopped; a failed call is asked again on the next run); a step whose every judgment
came back is one line of ``DIR/watch.jsonl``. The response cache is never used: a cached
reply would hide the very change the watch looks for.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from fbi.datasets import Dataset
from fbi.errors import InputError
from fbi.judge import Evaluation, EvaluationConfig, default_strategies, plan_calls
from fbi.metrics import outcome_of
from fbi.providers import ModelClient, ModelRequest
from fbi.records import Instance, Judgment
from fbi.run_spec import RunIdentity, RunTotals
from fbi.runs import Call, Phase, Progress, Stage, StageFolder, now
from fbi.settings import ModelSettings
from fbi.watch._evidence import largest_log_e
from fbi.watch._history import (
    WATCH_FILE,
    StreamStep,
    WatchShape,
    WatchStep,
    append_step,
    read_history,
    recomputed,
)

#: Marks a drawn copy's instance id: ``ID#wSTEP.DRAW``.
_DRAW = "#w"


@dataclass(frozen=True)
class WatchConfig:
    """What `fbi watch` is asked: checked when made (the Python API refuses what the CLI
    refuses)."""

    model: ModelSettings
    """The judge watched."""
    strategies: tuple[str, ...] = ()
    """The strategies asked (empty: the judge kind's default, ``vanilla`` for a chat judge)."""
    per_category: int = 10
    """Canary instances per category; a step asks each stream this many judgments."""
    alpha: float = 0.01
    """The false-alarm level over the watch's whole life (Ville's inequality)."""
    seed: int = 0
    """Seeds the canary's choice and every step's draws."""
    prompts_dir: Path | None = None
    """Strategies of the user's own (``--prompts DIR``)."""

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or \
                not 0 < self.alpha < 1:
            raise InputError(f"--alpha {self.alpha}: must lie strictly between 0 and 1")
        if -math.log(self.alpha) >= largest_log_e():
            raise InputError(f"--alpha {self.alpha:g}: the alarm would sound at E = "
                             f"1/α = e^{-math.log(self.alpha):.0f}, past any e-value "
                             "fbi can hold "
                             f"(e^{largest_log_e():.0f}), so it could never sound. Fix: "
                             "give an α of 1e-300 or more (0.01 is usual)")
        if self.per_category < 1:
            raise InputError(f"--canary {self.per_category}: at least 1 instance per "
                             "category")


class Watch(Stage):
    """One step of a watch (see the module docstring): run it once per step."""

    kind = "watch"
    title = "a canary set asked again and again, with a drift alarm (fbi watch)"
    outputs = ("judgments.jsonl", WATCH_FILE)

    def __init__(self, suite: Dataset, config: WatchConfig, output_dir: str | Path,
                 force: bool = False):
        self.config, self.output_dir = config, Path(output_dir)
        self.settings = config.model
        self.folder = StageFolder(self.output_dir / "run.json", force=force)
        canary = suite.select(sample=config.per_category, sample_seed=config.seed)
        if not canary.instances:
            raise InputError(f"{suite.spec}: the suite holds no instance to watch. Fix: give "
                             "a dataset with instances (fbi datasets lists them)")
        strategies = config.strategies or default_strategies(config.model.model)
        # the judge stage's identity of the canary: prompts, dataset, parameters
        self.evaluation = Evaluation(canary, EvaluationConfig(
            model=config.model, strategies=strategies, prompts_dir=config.prompts_dir),
            self.output_dir, force)
        self.canary = canary
        self.shape = self._shape()
        self.history: list[WatchStep] = read_history(self.output_dir, self.shape)
        self.result: WatchStep | None = None
        """The step this run finished, once it has."""
        self.incomplete = 0
        """Judgments of this step that did not come back (a failed call)."""

    @property
    def step(self) -> int:
        """The step this run asks."""
        return len(self.history) + 1

    def identity(self) -> RunIdentity:
        identity = self.evaluation.identity()
        identity.parameters.alpha = self.config.alpha
        return identity

    def draws(self, step: int) -> list[Instance]:
        """The instances step ``step`` asks: per category, as many draws with replacement
        from its canary as it has instances, each a copy under its own id."""
        rng = random.Random(f"{self.config.seed}:{step}")
        by_category: dict[str, list[Instance]] = defaultdict(list)
        for instance in self.canary.instances:
            by_category[instance.category].append(instance)
        drawn = []
        for category in sorted(by_category):
            members = by_category[category]
            for n in range(len(members)):
                chosen = members[rng.randrange(len(members))]
                drawn.append(chosen.model_copy(update={"id": f"{chosen.id}{_DRAW}{step}.{n}"}))
        return drawn

    def _shape(self) -> WatchShape:
        """What each of this watch's steps holds (`read_history` checks every line)."""
        per_category = Counter(i.category for i in self.canary.instances)
        strategies = [s.name for s in self.evaluation.strategies]
        identity = json.dumps({"instances": sorted(i.id for i in self.canary.instances),
                               "strategies": strategies, "seed": self.config.seed})
        return WatchShape(
            judge=self.settings.model, alpha=self.config.alpha,
            canary=hashlib.sha256(identity.encode()).hexdigest()[:16],
            streams={(s, c): n for s in strategies for c, n in per_category.items()})

    def phases(self) -> Iterator[Phase]:
        self.history = read_history(self.output_dir, self.shape)
        self.judgments: dict[str, Judgment] = {}
        mark = f"{_DRAW}{self.step}."

        def keep(judgment: Judgment) -> None:
            if mark in judgment.instance_id:
                self.judgments[judgment.call_id] = judgment

        evaluation = self.evaluation
        self.planned = [
            # each asking its own reply: two draws of one instance (or two instances
            # sharing a gold answer) must not share one in-flight call
            dataclasses.replace(call, planned=functools.partial(_own_asking, call, n + 1))
            for n, call in enumerate(plan_calls(self.draws(self.step), evaluation.strategies,
                                                evaluation.registry, evaluation.config))]
        yield Phase(self.output_dir / "judgments.jsonl", Judgment, self.planned,
                    keep_records=False, visit=keep, collect=keep)

    def finish(self, totals: RunTotals) -> None:
        returned = [self.judgments.get(c.call_id) for c in self.planned]
        self.incomplete = sum(j is None or j.status == "error" for j in returned)
        if self.incomplete:  # a step counts whole or not at all: it resumes next run
            return
        by_stream: dict[tuple[str, str], list[bool]] = defaultdict(list)
        roles: dict[tuple[str, str], dict[str, Judgment]] = defaultdict(dict)
        for judgment in returned:
            roles[(judgment.strategy, judgment.instance_id)][judgment.role] = judgment
        for (strategy, _), group in roles.items():
            outcome = outcome_of(group)
            by_stream[(strategy, outcome.category)].append(
                outcome.outcome in ("undetected", "penalised", "unparseable"))
        self.result = self._record(by_stream, len(self.planned))
        append_step(self.output_dir, self.result)
        self.history.append(self.result)

    def _record(self, by_stream: dict[tuple[str, str], list[bool]], calls: int) -> WatchStep:
        """This step's line: each stream's counts, and the evidence over the whole
        history computed from the counts alone (`recomputed`)."""
        streams = [StreamStep(strategy=strategy, category=category, failures=sum(failed),
                              asked=len(failed), log_e=None)
                   for (strategy, category), failed in sorted(by_stream.items())]
        step = WatchStep(step=self.step, at=now(), judge=self.settings.model, calls=calls,
                         streams=streams, log_e=None, alpha=self.config.alpha, alarm=False,
                         canary=self.shape.canary)
        return recomputed([*self.history, step], self.config.alpha)[-1]


def _own_asking(call: Call, number: int) -> ModelRequest:
    return dataclasses.replace(call.request, sample=number)




class WatchOutcome(NamedTuple):
    """What one step of [`fbi.watch`][fbi.watch.watch] did."""

    totals: RunTotals
    """The step's calls: made, failed, stopped."""
    step: WatchStep | None
    """The step's line of ``watch.jsonl`` (its evidence, whether the alarm sounds), or
    None when the step did not finish (a failed call, a stop): it resumes next time."""


def watch(suite: str | Dataset, output: str | Path, judge: str | ModelSettings | WatchConfig,
          *, client: ModelClient | None = None, progress: Progress | None = None,
          force: bool = False) -> WatchOutcome:
    """One step of a watch (what ``fbi watch`` does each step): the canary of ``suite``
    asked of the judge, the step added to ``output/watch.jsonl`` with the evidence over
    the whole history. ``judge``: a model string, its settings, or a whole
    [`WatchConfig`][fbi.watch.WatchConfig]. Never answered from the response cache (a
    ``client`` given is the caller's); scheduling steps is the caller's (cron, or the
    command's ``--every``)."""
    from fbi.datasets import load_dataset

    config = judge if isinstance(judge, WatchConfig) else WatchConfig(
        ModelSettings(model=judge) if isinstance(judge, str) else judge)
    stage = Watch(load_dataset(suite) if isinstance(suite, str) else suite, config, output,
                  force)
    totals = stage.run(client or config.model.client(None), progress)
    return WatchOutcome(totals, stage.result)
