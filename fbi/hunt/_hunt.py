"""`fbi hunt` as a stage of the run harness: rounds of probes chosen by the search, one
phase of held-out confirmation, then ``hunt.json``, ``hunt.md`` and ``queue.jsonl``
(issues 40 and 49).

**A probe** is an edit judged once, with the FBI protocol's own calls
([`fbi.judge.plan_calls`][fbi.judge.plan_calls]): single-answer strategies score the
edited answer and the gold answer (one gold call per item and strategy, shared by every
edit of the item); a pairwise strategy compares them in *one* order — the edit first or
second, chosen per probe, so "with the edit shown first" is something the hunt can say —
and the reference-guided one scores the edit against the gold. Missed means what the
FBI paper's §4 says: not penalised (single: not scored below the gold; pairwise: the gold
not preferred; reference: the top score). A reply about the edit fbi cannot read counts
as missed (no hostile edit lowers a miss rate by making the reply unreadable), and
``unreadable_calls`` says how many; an unreadable gold score or a failed call leaves the
probe out. A manipulation alone (the *sway* population) is missed when the judge rates
the answer *above* the gold, or prefers it.

Every call goes into one log, ``judgments.jsonl``, and counts against ``--budget``
whether the response cache answers it or not, so the search is the same whatever the
cache holds. The search is a deterministic function of the seed and the log: a hunt
stopped by Ctrl-C replays its rounds from the log (no call made twice) and goes on. The
log is read once; each round reads only the lines it adds, and keeps of each probe its
row of predicates (`fbi.hunt._table`), not its texts: the edits are in ``edits.jsonl``.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from fbi.errors import InputError
from fbi.findings import HuntExample, HuntResult
from fbi.hunt._describer import (
    PROPOSALS,
    SHOWN,
    DescriberCall,
    describe_call,
    edit_line,
    hypotheses_of,
    hypothesis_calls,
)
from fbi.hunt._findings import Summary, assemble, queue_instances
from fbi.hunt._operators import LLM, PROPOSAL, Edit, Operator, llm_categories, pool_edit
from fbi.hunt._predicates import describe
from fbi.hunt._search import Found, Search, Target
from fbi.hunt._space import EDIT_ORDERS, EditSpace, Root, predicates_for
from fbi.hunt._structure import PLACES
from fbi.hunt._table import Phase, Population, ProbeTable, Row
from fbi.judge import (
    PARSER_VERSION,
    EvaluationConfig,
    StrategyRegistry,
    check_reward_strategies,
    plan_calls,
    prompt_records,
)
from fbi.llm import ModelClient, litellm_version
from fbi.logs import LogState, read_log
from fbi.metrics import penalised
from fbi.outputs import write_atomically
from fbi.perturb import PerturbationCall, PerturbConfig, Perturber
from fbi.records import GoldItem, Judgment
from fbi.redaction import public_url
from fbi.reward import is_reward_model
from fbi.run_spec import DatasetRecord, Parameters, RunSettings, RunSpec, Selection, TotalsRecord
from fbi.runs import Call, DryRun, RunTotals, Stage, StageFolder, check_folder, dry_run, now
from fbi.runs import Phase as LogPhase
from fbi.settings import ModelSettings
from fbi.sources import write_dataset
from fbi.taxonomy import get_category, unknown_name_message

#: The search's version: a folder hunted by another version is refused on resume.
SEARCH_VERSION = "2"
#: The fewest calls a hunt can do anything with.
MIN_BUDGET = 40
DEFAULT_BUDGET = 3000
#: The share of the judge's budget the search spends; the rest confirms.
SEARCH_SHARE = 0.55
#: Of the confirmation's calls, the share spent on the held-out baseline.
BASELINE_SHARE = 0.35
#: Held-out probes a candidate gets at most (the rest go to the baseline).
CANDIDATE_CAP = 160
#: Of a round's draws, the share taken from items whose gold answer is already judged
#: (a single-answer edit of such an item costs one call, not two).
REUSE_SHARE = 0.6
#: What a hunt writes in its folder.
HUNT_FILES = ("judgments.jsonl", "perturbations.jsonl", "edits.jsonl", "describer.jsonl",
              "describer_edits.jsonl", "hunt.json", "hunt.md", "queue.jsonl")


def round_probes(budget: int) -> int:
    """Probes per search round: from the budget (fixed for a hunt, so a resumed hunt
    replays the same rounds), not from --concurrency."""
    return min(256, max(32, budget // 80))


@dataclass(frozen=True)
class HuntConfig:
    """What `fbi hunt` is asked: the judge, its strategies, the budget and the seed."""

    model: ModelSettings
    """The judge: its model, server or pool, sampling, concurrency and USD budget."""
    budget: int = DEFAULT_BUDGET
    """Model calls the hunt may make: the judge's (the preflight probe's included) and
    the perturber's."""
    strategies: tuple[str, ...] = ("vanilla",)
    """The strategies each edit is judged by (one per probe, chosen at random)."""
    seed: int = 0
    """Seeds the split, the draws and the search."""
    operators: tuple[str, ...] = ()
    """Restrict the search to these operators (``number-errors``, ``grammar+spelling``,
    ``chronology+manipulation/padding``, ``manipulation/padding``); empty: all."""
    label: str | None = None
    """The judge's name in the output."""
    prompts_dir: Path | None = None
    """A folder of the user's own strategy templates."""
    alpha: float = 0.05
    """The family-wise error level of the confirmed findings."""
    margin: float = 0.10
    """A finding must be missed this much more often than the baseline (10 points)."""
    search: Literal["adaptive", "grid"] = "adaptive"
    """``grid``: every probe a random edit, no suspicion tested (the baseline the
    adaptive search is measured against)."""
    perturber: ModelSettings | None = None
    """An LLM perturber: its edits in the categories no rule makes (``llm/CATEGORY``)
    join the search."""
    perturber_edits: int = 24
    """The perturber's edits asked per category, half of the items from each split;
    its calls count against ``budget``."""
    describer: ModelSettings | None = None
    """A model that reads missed and caught edits side by side midway through the search
    and proposes blind spots in words; each proposal is tested like any suspicion."""
    describer_edits: int = 12
    """Edits the describer makes for each proposal it cannot say with predicates, half
    of the items from each split; its calls count against ``budget``."""

    def __post_init__(self) -> None:
        if self.budget < MIN_BUDGET:
            raise InputError(f"--budget {self.budget} is too small: a hunt needs at least "
                             f"{MIN_BUDGET} calls (a few probes, then confirmation); give "
                             f"--budget {DEFAULT_BUDGET} or more to find quiet blind spots")
        if not 0 < self.alpha < 1:
            raise InputError(f"--alpha {self.alpha} must lie between 0 and 1")
        if not 0 <= self.margin < 1:
            raise InputError(f"--margin {self.margin} must lie in [0, 1)")
        for name in self.operators:
            if name.startswith(LLM) and self.perturber is None:
                if name.removeprefix(LLM) not in llm_categories():
                    raise InputError(unknown_name_message(
                        "LLM operator", name, [LLM + c for c in llm_categories()]))
                raise InputError(f"--operator {name} needs --perturber MODEL")
            Operator.parse(name)  # an unknown one is an InputError with the valid names
        if self.perturber is not None and not 2 <= self.perturber_edits <= 10_000:
            raise InputError("--perturber-edits: give 2 to 10000 edits per category")
        if self.describer is not None and not 2 <= self.describer_edits <= 1000:
            raise InputError("--describer-edits: give 2 to 1000 edits per proposal")
        if self.budget < MIN_BUDGET + self.perturber_calls + self.describer_calls:
            raise InputError(
                f"--budget {self.budget} is too small: the perturber's "
                f"{self.perturber_calls} calls, the describer's {self.describer_calls} "
                f"and {MIN_BUDGET} for the judge; give a larger --budget or fewer "
                "--perturber-edits or --describer-edits")

    @property
    def llm_operators(self) -> list[str]:
        """The perturber's categories searched (``--operator llm/…``, else all)."""
        if self.perturber is None:
            return []
        named = [n.removeprefix(LLM) for n in self.operators if n.startswith(LLM)]
        rules_named = [n for n in self.operators if not n.startswith(LLM)]
        return named or ([] if rules_named else llm_categories())

    @property
    def perturber_calls(self) -> int:
        """Calls asked of the perturber, at most."""
        return len(self.llm_operators) * self.perturber_edits

    @property
    def describer_calls(self) -> int:
        """Calls asked of the describer, at most: one to describe, then its edits."""
        return 0 if self.describer is None else 1 + PROPOSALS * self.describer_edits


class EditRecord(BaseModel):
    """A line of ``edits.jsonl``: one edit the hunt judged."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    id: str
    item_id: str
    operator: str
    placement: str | None = None
    seed: int
    shown: str
    """The answer the judge saw (with any manipulation added)."""
    edited: str | None = None
    """The error edit before the manipulation was added (None: ``shown``)."""
    rationale: str = ""
    generator: str = ""


@dataclass
class Planned:
    """One probe planned: an edit, how it is judged, and its row's fields."""

    edit: Edit
    strategy: str
    order: str | None
    calls: tuple[str, ...]
    population: Population
    phase: Phase
    candidate: int
    values: np.ndarray
    offset: int = -1
    """Its edit's line in ``edits.jsonl``."""
    call_objects: list[Call] = field(default_factory=list)


@dataclass
class HuntStatus:
    """What the hunt is doing, for a progress display."""

    stage: str
    """``search`` or ``confirmation``."""
    calls: int
    """Calls planned so far."""
    budget: int
    """The budget."""
    trying: str = ""
    """The suspicions being tested this round."""
    best: list[tuple[str, float, int]] = field(default_factory=list)
    """The strongest suspicions so far: (description, miss rate, probes)."""


class Hunt(Stage):
    """A blind-spot hunt over ``items`` (gold answers) for one judge."""

    kind = "hunt"

    def __init__(self, items: list[GoldItem], config: HuntConfig, output_dir: str | Path,
                 dataset_spec: str, force: bool = False,
                 observer: Callable[[HuntStatus], None] | None = None):
        if len(items) < 4:
            raise InputError(f"{dataset_spec} has {len(items)} gold answers: a hunt needs at "
                             "least 4 (half to search, half to confirm on)")
        self.items, self.config = items, config
        self.by_id = {item.id: item for item in items}
        self.output_dir = Path(output_dir)
        self.dataset_spec = dataset_spec
        self.settings = config.model
        self.folder = StageFolder(self.output_dir / "run.json", force=force,
                                  writes=HUNT_FILES)
        self.observer = observer or (lambda status: None)
        self.evaluation = EvaluationConfig(model=config.model, strategies=config.strategies,
                                           prompts_dir=config.prompts_dir,
                                           label=config.label)
        self.registry = StrategyRegistry(config.prompts_dir)
        resolved = self.registry.resolve(list(config.strategies),
                                         reward=is_reward_model(config.model.model))
        check_reward_strategies(config.model.model, resolved)
        self.strategies = {s.name: s for s in resolved}
        self.sway_strategies = [s.name for s in resolved if s.paradigm != "reference"]
        operators = [Operator.parse(n) for n in config.operators if not n.startswith(LLM)]
        self.space = EditSpace(operators if config.operators else None,
                               sway=bool(self.sway_strategies))
        ordered = sorted(items, key=lambda i: hashlib.sha256(
            f"{config.seed}:{i.id}".encode()).hexdigest())
        half = len(ordered) // 2
        self.search_items, self.held_out = ordered[:half], ordered[half:]
        self.result: HuntResult | None = None
        """The findings, once the hunt has run to its end."""
        self.queued = 0
        """Edits written to queue.jsonl."""

    # ---------------------------------------------------------------- the stage protocol

    @property
    def log_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    @property
    def edits_path(self) -> Path:
        return self.output_dir / "edits.jsonl"

    @property
    def perturbations_path(self) -> Path:
        return self.output_dir / "perturbations.jsonl"

    def spec(self, totals: RunTotals | None = None) -> RunSpec:
        from fbi import __version__

        stamp, model, strategies = now(), self.config.model, list(self.strategies.values())
        config = self.config
        return RunSpec(
            kind="hunt", label=config.label, fbi_version=__version__,
            litellm_version=litellm_version(), model=model.model, api_base=model.api_base,
            prompts=prompt_records(strategies, None, "fbi"),
            dataset=DatasetRecord(spec=self.dataset_spec, fingerprint=hashlib.sha256(
                "\n".join(f"{i.id}\x1f{i.question}\x1f{i.gold_answer}"
                          for i in self.items).encode()).hexdigest(),
                                  items=len(self.items)),
            selection=Selection(categories=list(config.operators) or None,
                                sample_seed=config.seed),
            parameters=Parameters(
                temperature=self.evaluation.temperature,
                max_tokens=self.evaluation.reply_tokens, seed=model.seed,
                model_args=model.recorded_model_args() or None, budget=config.budget,
                search_version=SEARCH_VERSION + ("-grid" if config.search == "grid"
                                                 else "") + f"-margin{config.margin:g}",
                perturber=f"{config.perturber.model} × {config.perturber_edits}"
                if config.perturber else None,
                describer=f"{config.describer.model} × {config.describer_edits}"
                if config.describer else None),
            settings=RunSettings(timeout_s=model.timeout_s, retries=model.retries,
                                 concurrency=model.concurrency, max_cost=model.max_cost,
                                 api_pool=[public_url(b) for b in model.api_pool] or None),
            command=list(sys.argv), record_versions={"judgment": 1, "edit": 1},
            parser_version=PARSER_VERSION, created_at=stamp, updated_at=stamp,
            totals=TotalsRecord() if totals is None else totals.record())

    def phases(self) -> Iterator[LogPhase]:
        self._start()
        budget = self.config.budget - 1 - self.config.describer_calls  # (and the probe's)
        perturbing = self._perturber_calls()
        if perturbing:  # the perturber's pool first; its calls count against the budget
            phase = LogPhase(self.perturbations_path, PerturbationCall, perturbing)
            yield phase
            self._adopt_pool(phase.records)
            budget -= len(perturbing)
        search = Search(self.table, self.populations, self.config.seed,
                        adaptive=self.config.search == "adaptive")
        self.search = search
        search_budget = int(budget * SEARCH_SHARE)
        size = round_probes(self.config.budget)
        described = self.config.describer is None
        while True:
            targets = search.plan(size)
            probes = self._plan_round(targets, search, search_budget)
            if not probes:
                break
            self._status("search", targets, search)
            yield from self._judge(probes)
            search.update()
            if not described and len(self.planned) >= search_budget // 2:
                described = True  # midway: the describer proposes, the search tests
                yield from self._describe(search)
        self.search_calls = len(self.planned)
        candidates = search.candidates()
        self._status("confirmation", [], search)
        probes = self._plan_confirmation(candidates, budget - len(self.planned))
        if probes:
            yield from self._judge(probes)
        self.result = self._result(candidates, len(perturbing))

    def finish(self, totals: RunTotals) -> None:
        if self.result is None:  # stopped early: it resumes, nothing concluded yet
            return
        from fbi.report import hunt_markdown

        write_atomically(self.output_dir / "hunt.json",
                         self.result.model_dump_json(indent=2) + "\n")
        write_atomically(self.output_dir / "hunt.md", hunt_markdown(self.result))
        queue = queue_instances(self.summary, self._instance_at)
        write_dataset(queue, self.output_dir / "queue.jsonl")
        self.queued = len(queue)

    def dry_run(self, client: ModelClient) -> DryRun:
        """The hunt's cost estimated from its first round's calls, scaled to the budget
        (the later rounds depend on the judge's replies)."""
        from fbi.runs import finished_ids

        check_folder(self)
        finished = set(finished_ids(self.log_path, Judgment))
        self._start(read=False)
        search = Search(self.table, self.populations, self.config.seed)
        calls = [c for p in self._plan_round(search.plan(round_probes(self.config.budget)),
                                             search, self.config.budget, write=False)
                 for c in self._calls_of(p)]
        first = dry_run(calls, client, finished)
        judge_calls = self.config.budget - 1 - self.config.perturber_calls
        scale = judge_calls / max(1, first.calls)
        estimate = DryRun(calls=judge_calls, done=len(finished),
                          to_call=max(0, judge_calls - len(finished)),
                          prompt_tokens=round(first.prompt_tokens * scale),
                          completion_tokens=round(first.completion_tokens * scale),
                          cost_usd=None if first.cost_usd is None
                          else first.cost_usd * scale,
                          sampled=first.calls, missing=first.missing)
        perturbing = self._perturber_calls()
        if perturbing:  # the perturber's calls are known: priced one by one
            priced = dry_run(perturbing, client, finished_ids(self.perturbations_path,
                                                              PerturbationCall))
            estimate.add(priced)
            estimate.cost_usd = None if None in (estimate.cost_usd, priced.cost_usd) \
                else estimate.cost_usd + priced.cost_usd
            estimate.missing = estimate.missing or priced.missing
        return estimate

    # ---------------------------------------------------------------- state

    def _start(self, read: bool = True) -> None:
        """Fresh state for a run: the predicates, the table, the outcomes read once from
        the log and the edits already written."""
        pairwise = any(s.paradigm == "pairwise" for s in self.strategies.values())
        self.predicates = predicates_for(self.space, list(self.strategies), pairwise)
        self.by_name = {p.name: p for p in self.predicates}
        self.table = ProbeTable(self.predicates)
        self.operator_names = self.space.operator_names()
        self.operator_index = {name: i for i, name in enumerate(self.operator_names)}
        self.roots = self.space.roots()
        self.populations = sorted({r.population for r in self.roots})
        self.rng = random.Random(f"hunt-draw:{self.config.seed}")
        self.used: set[str] = set()
        self.planned: set[str] = set()
        # per strategy, the search's and the held-out items whose gold answer is judged
        self.gold_judged: dict[str, tuple[list[GoldItem], list[GoldItem]]] = {
            s: ([], []) for s in self.strategies}
        self.strategy_index = {name: i for i, name in enumerate(self.strategies)}
        self.outcomes: dict[str, tuple] = {}
        self.failed: set[str] = set()
        self.log_state: LogState | None = None
        self.edit_offsets: dict[str, int] = {}
        self.search_calls = 0
        self.describer_calls = 0
        if read:
            self.log_state = None  # the first round reads the log whole (visit)
            for record in read_log(self.edits_path, EditRecord, keep=False,
                                   visit_at=self._index_edit).bad_lines[:1]:
                raise InputError(f"{self.edits_path}, line {record.number}: not an edit "
                                 f"({record.error}). Fix: delete the hunt's folder and "
                                 "hunt again")

    def _index_edit(self, record: EditRecord, offset: int) -> None:
        self.edit_offsets[record.id] = offset

    def _collect(self, judgment: Judgment) -> None:
        """Keep what a probe's outcome needs of a judgment, nothing more."""
        if judgment.status == "error":
            self.failed.add(judgment.call_id)
            self.outcomes.pop(judgment.call_id, None)
            return
        self.failed.discard(judgment.call_id)
        score = judgment.expected_score if judgment.expected_score is not None \
            else judgment.score
        top = judgment.score_range[1] if judgment.score_range else None
        self.outcomes[judgment.call_id] = (judgment.status, score, judgment.verdict, top)

    def _read_edit(self, offset: int) -> EditRecord:
        with open(self.edits_path, "rb") as file:
            file.seek(offset)
            return EditRecord.model_validate_json(file.readline())

    # ---------------------------------------------------------------- planning probes

    def _status(self, stage: str, targets: list[Target], search: Search) -> None:
        best = [(describe([self.by_name[n] for n in f.description]), f.scored.rate,
                 f.scored.n) for f in search.suspects[:3]]
        trying = "; ".join(dict.fromkeys(
            describe([self.by_name[n] for n in t.description])
            for t in targets if t.description))
        self.observer(HuntStatus(stage, len(self.planned), self.config.budget, trying,
                                 best))

    def _choose(self, description: tuple[str, ...] | None, population: Population
                ) -> tuple[str, str | None]:
        """The strategy and pairwise order of a probe: as the description fixes them,
        else at random."""
        fixed = dict(n.split(":", 1) for n in description or () if n.startswith(
            ("strategy:", "order:")))
        names = self.sway_strategies if population == Population.SWAY else \
            list(self.strategies)
        strategy = fixed.get("strategy") or self.rng.choice(names)
        order = None
        if self.strategies[strategy].paradigm == "pairwise":
            order = fixed.get("order") or self.rng.choice(EDIT_ORDERS)
        return strategy, order

    def _items(self, held_out: bool, strategy: str) -> list[GoldItem]:
        """The items to draw an edit from: mostly those whose gold answer is already
        judged under ``strategy`` (single-answer), so an edit costs one call."""
        judged = self.gold_judged[strategy][held_out]
        if judged and self.strategies[strategy].paradigm == "single" and \
                self.rng.random() < REUSE_SHARE:
            return judged
        return self.held_out if held_out else self.search_items

    def _draw(self, target: Target, search: Search | None, phase: Phase,
              candidate: int = -1) -> Planned | None:
        held_out = phase >= Phase.BASELINE
        if target.description is None:  # a random edit, not inside what is established
            for _ in range(8):
                strategy = self.rng.choice(list(self.strategies))
                drawn = self.space.random_edit(self._items(held_out, strategy), self.rng,
                                               self.used, self.place_counts)
                if drawn is None:
                    continue
                root, edit = drawn
                if root.population == Population.SWAY and \
                        strategy not in self.sway_strategies:
                    continue
                strategy, order = self._choose((f"strategy:{strategy}",), root.population)
                values = self.table.values(edit.view(strategy, order))
                if search is None or not search.explained(values, root.population):
                    return Planned(edit, strategy, order, (), root.population, phase,
                                   candidate, values)
            return None
        strategy, order = self._choose(target.description, target.population)
        seen = search.seen_operators(target.description, target.population,
                                     self.operator_names) if search is not None \
            else self._seen(target.description, target.population)
        edit = self.space.draw_fitting(target.description, self.by_name,
                                       self._items(held_out, strategy), self.rng, self.used,
                                       seen, strategy, order,
                                       target.population == Population.SWAY)
        if edit is None:
            return None
        return Planned(edit, strategy, order, (), target.population, phase, candidate,
                       self.table.values(edit.view(strategy, order)))

    def _seen(self, description: tuple[str, ...], population: Population) -> list[str]:
        mask = self.table.covered(description) & (self.table.population == population)
        return [self.operator_names[i] for i in self.table.operator[mask]]

    def _count_places(self) -> None:
        """How many probes each place has had so far (random edits go where fewest
        have)."""
        X, column = self.table.X, self.table.column
        self.place_counts = {name: int(X[:, column[name]].sum()) for name in PLACES
                             if name in column}

    def _plan_round(self, targets: list[Target], search: Search, limit: int,
                    write: bool = True) -> list[Planned]:
        self._count_places()
        probes: list[Planned] = []
        pending: set[str] = set()
        for target in targets:
            planned = self._draw(target, search,
                                 Phase.TARGET if target.description else Phase.EXPLORE)
            if planned is None:
                if target.description is not None:
                    search.exhausted.add(target.description)
                continue
            if not self._admit(planned, limit, pending):
                break
            probes.append(planned)
        if write:
            self._write_edits(probes)
        return probes

    def _plan_confirmation(self, candidates: list[Found], left: int) -> list[Planned]:
        """The held-out baseline's probes and each candidate's, each within its share of
        the ``left`` calls; a candidate's unused share goes to the baseline."""
        if not candidates:
            return []
        self._count_places()
        probes: list[Planned] = []
        pending: set[str] = set()
        end = len(self.planned) + left
        share = int(left * (1 - BASELINE_SHARE)) // len(candidates)
        for index, found in enumerate(candidates):
            limit, count, failures = len(self.planned) + len(pending) + share, 0, 0
            while count < CANDIDATE_CAP and failures < 20:
                planned = self._draw(Target(found.population, found.description), None,
                                     Phase.CANDIDATE, index)
                if planned is None:
                    failures += 1
                    continue
                if not self._admit(planned, limit, pending):
                    break
                probes.append(planned)
                count += 1
        populations = {c.population for c in candidates}
        failures = 0
        while failures < 50:  # the baseline takes what is left
            planned = self._draw(Target(None), None, Phase.BASELINE)
            if planned is None or planned.population not in populations:
                failures += 1
                continue
            if not self._admit(planned, end, pending):
                break
            probes.append(planned)
        self._write_edits(probes)
        return probes

    def _calls_of(self, planned: Planned) -> list[Call]:
        """The calls of a probe: the edit's (pairwise: in its order), then a
        single-answer strategy's shared gold call."""
        strategy = self.strategies[planned.strategy]
        wanted = {"edit-first": "perturbed-first", "edit-second": "gold-first"}.get(
            planned.order or "")
        calls = []
        for call in plan_calls([planned.edit.instance], [strategy], self.registry,
                               self.evaluation):
            role = call.fields["role"]
            if strategy.paradigm == "pairwise" and role != wanted:
                continue
            if role == "gold":  # one gold call per item and strategy
                call = shared_gold_call(call, planned.edit.item.id)
            calls.append(call)
        calls.sort(key=lambda c: c.fields["role"] == "gold")  # the edit's first
        return calls

    def _admit(self, planned: Planned, limit: int, pending: set[str]) -> bool:
        """Add ``planned`` if the hunt's calls, its new ones included, stay within
        ``limit``."""
        calls = self._calls_of(planned)
        new = [c for c in calls if c.call_id not in self.planned and c.call_id not in
               pending]
        if len(self.planned) + len(pending) + len(new) > limit:
            return False
        planned.calls = tuple(c.call_id for c in calls)
        planned.call_objects = calls
        pending.update(c.call_id for c in new)
        self.used.add(planned.edit.id)
        if any(c.fields["role"] == "gold" for c in new):
            self.gold_judged[planned.strategy][planned.phase >= Phase.BASELINE].append(
                planned.edit.item)
        return True

    def _write_edits(self, probes: list[Planned]) -> None:
        """Each probe's edit into ``edits.jsonl`` (once: a resumed hunt finds it there)."""
        new = [p for p in probes if p.edit.id not in self.edit_offsets]
        if new:
            self.edits_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.edits_path, "ab") as out:
                for planned in new:
                    if planned.edit.id in self.edit_offsets:
                        continue
                    edit = planned.edit
                    self.edit_offsets[edit.id] = out.tell()
                    record = EditRecord(id=edit.id, item_id=edit.item.id,
                                        operator=edit.operator.name,
                                        placement=edit.placement, seed=edit.seed,
                                        shown=edit.shown, edited=edit.edited
                                        if edit.edited != edit.shown else None,
                                        rationale=edit.rationale, generator=edit.generator)
                    out.write(record.model_dump_json().encode() + b"\n")
        for planned in probes:
            planned.offset = self.edit_offsets[planned.edit.id]

    def _judge(self, probes: list[Planned]) -> Iterator[LogPhase]:
        """The probes' calls as one phase of the log, then their rows in the table."""
        calls: dict[str, Call] = {}
        for planned in probes:  # (a gold call an earlier round made is not asked again)
            for call in planned.call_objects:
                if call.call_id not in self.planned:
                    calls.setdefault(call.call_id, call)
        for planned in probes:
            self.planned.update(planned.calls)
        phase = LogPhase(self.log_path, Judgment, list(calls.values()), keep_records=False,
                         visit=self._collect, collect=self._collect, known=self.log_state)
        yield phase
        self.log_state = phase.state
        for planned in probes:
            missed = self._missed(planned)
            if missed is None:
                continue
            edit = planned.edit
            view = edit.view(planned.strategy, planned.order)
            self.table.add(Row(
                planned.values, missed[0], planned.population, planned.phase,
                planned.candidate, self._operator_number(edit.operator.name), planned.offset,
                planned.calls, missed[1], view.change.end - view.change.start +
                max(0, len(edit.edited) - len(edit.item.gold_answer)),
                self.strategy_index[planned.strategy],
                EDIT_ORDERS.index(planned.order) + 1 if planned.order else 0))

    def _operator_number(self, name: str) -> int:
        """A row's operator index (compositions are numbered as they first come)."""
        if name not in self.operator_index:
            self.operator_index[name] = len(self.operator_names)
            self.operator_names.append(name)
        return self.operator_index[name]

    def _missed(self, planned: Planned) -> tuple[bool, bool] | None:
        """(missed, unreadable) for a judged probe; None when it counts nowhere (a failed
        call, an unreadable gold score, a call not made)."""
        if any(c in self.failed or c not in self.outcomes for c in planned.calls):
            return None
        status, score, verdict, top = self.outcomes[planned.calls[0]]
        paradigm = self.strategies[planned.strategy].paradigm
        sway = planned.population == Population.SWAY
        if status != "ok" or (score is None and verdict is None):
            return True, True  # an unreadable reply about the edit: missed
        if paradigm == "pairwise":
            return (verdict == "perturbed" if sway else verdict != "gold"), False
        if paradigm == "reference":
            return (top is None or not penalised("reference", score, top=top)), False
        gold_status, gold_score, _, _ = self.outcomes[planned.calls[1]]
        if gold_status != "ok" or gold_score is None:
            return None
        if sway:
            return score > gold_score, False
        return not penalised("single", score, gold_score), False

    # ---------------------------------------------------------------- the perturber

    def _perturber_calls(self) -> list[Call]:
        config = self.config
        if config.perturber is None:
            return []
        calls = []
        for category in config.llm_operators:
            ability = get_category(category).ability
            chosen: list[GoldItem] = []
            for split in (self.search_items, self.held_out):
                fitting = [i for i in split if ability is None or i.ability == ability.value]
                chosen += random.Random(f"hunt-perturb:{config.seed}:{category}").sample(
                    fitting, min(config.perturber_edits // 2, len(fitting)))
            if chosen:
                calls += Perturber(chosen, PerturbConfig(
                    categories=(category,), engine="llm", model=config.perturber,
                    seed=config.seed), self.perturbations_path).calls()
        return calls

    def _adopt_pool(self, records: dict) -> None:
        """The perturber's edits become the ``llm/CATEGORY`` operators' pools."""
        pool: dict[str, list[Edit]] = {}
        for record in records.values():
            if record.status != "ok" or not record.perturbed_answer or \
                    record.item_id not in self.by_id:
                continue
            edit = pool_edit(self.by_id[record.item_id], LLM + record.category,
                             record.perturbed_answer, record.rationale or "", record.model)
            if edit is not None:
                pool.setdefault(edit.operator.name, []).append(edit)
        self.space = EditSpace(self.space.operators, pool, sway=self.space.sway)
        self._start_keeping_state()

    def _start_keeping_state(self) -> None:
        """After the pool: the predicates and roots again (the pool adds operators), the
        outcomes and edits read so far kept."""
        outcomes, failed, offsets = self.outcomes, self.failed, self.edit_offsets
        self._start(read=False)
        self.outcomes, self.failed, self.edit_offsets = outcomes, failed, offsets

    # ---------------------------------------------------------------- the describer

    @property
    def describer_path(self) -> Path:
        return self.output_dir / "describer.jsonl"

    def _describe(self, search: Search) -> Iterator[LogPhase]:
        """Show the describer missed and caught edits no established suspicion explains;
        test what it proposes (see `fbi.hunt._describer`)."""
        settings = self.config.describer
        assert settings is not None
        table = self.table
        rows = np.flatnonzero(table.rows(Population.ERROR, (Phase.EXPLORE, Phase.TARGET)))
        rows = [r for r in rows if not search.explained(table.X[r], Population.ERROR)]
        rng = random.Random(f"hunt-describe:{self.config.seed}")
        shown = {}
        for missed in (True, False):
            chosen = [r for r in rows if bool(table.missed[r]) == missed]
            shown[missed] = [edit_line(self._view_at(r)) for r in
                             rng.sample(chosen, min(len(chosen), SHOWN))]
        if not shown[True]:
            return
        phase = LogPhase(self.describer_path, DescriberCall, [describe_call(
            settings, shown[True], shown[False], [p.name for p in self.predicates], 1)])
        yield phase
        self.describer_calls += 1
        calls, phrases = [], {}
        for k, hypothesis in enumerate(hypotheses_of(phase.records), 1):
            if hypothesis.predicates:
                search.propose(tuple(sorted(hypothesis.predicates)), Population.ERROR)
            else:
                name = f"{PROPOSAL}{k}"
                phrases[name] = hypothesis.description
                calls += hypothesis_calls(settings, hypothesis, name,
                                          (self.search_items, self.held_out),
                                          self.config.describer_edits // 2,
                                          self.config.seed)
        if not calls:
            return
        phase = LogPhase(self.output_dir / "describer_edits.jsonl", PerturbationCall, calls)
        yield phase
        self.describer_calls += len(calls)
        for record in phase.records.values():
            name = record.category.removeprefix("hunt/")
            if record.status == "ok" and record.perturbed_answer and \
                    record.item_id in self.by_id:
                edit = pool_edit(self.by_id[record.item_id], name, record.perturbed_answer,
                                 record.rationale or "", record.model)
                if edit is not None:
                    self.space.pools.setdefault(name, []).append(edit)
        self.space.phrases.update(phrases)
        pairwise = any(s.paradigm == "pairwise" for s in self.strategies.values())
        for predicate in predicates_for(self.space, list(self.strategies), pairwise):
            if predicate.name not in table.column:
                table.add_predicate(predicate)
                self.by_name[predicate.name] = predicate
        self.predicates = table.predicates
        self.roots = self.space.roots()
        for name in phrases:
            if name in self.space.pools:
                search.propose((f"op:{name}",), Population.ERROR)

    def _view_at(self, row: int):
        """A table row's edit as predicates see it (read back from ``edits.jsonl``)."""
        from fbi.hunt._predicates import EditView

        record = self._read_edit(int(self.table.edit_offset[row]))
        item = self.by_id[record.item_id]
        operator = Operator.parse(record.operator)
        return EditView(item.question, item.gold_answer, record.edited or record.shown,
                        record.shown, item.ability, operator.name, operator.errors,
                        operator.manipulation)

    # ---------------------------------------------------------------- the findings

    def _result(self, candidates: list[Found], perturber_calls: int) -> HuntResult:
        self.summary = Summary(self.table, candidates, self.by_name, self.config.alpha,
                               self.config.margin)
        findings, overall = assemble(self.summary, self._example_of, self._replies)
        return HuntResult(
            judge=self.evaluation.judge if self.config.label is None
            else f"{self.config.label} ({self.evaluation.judge})",
            model=self.evaluation.judge, strategies=list(self.strategies),
            dataset=self.dataset_spec, seed=self.config.seed, budget=self.config.budget,
            calls=len(self.planned) + 1 + perturber_calls + self.describer_calls,
            search_calls=self.search_calls, perturber_calls=perturber_calls,
            describer_calls=self.describer_calls,
            confirmation_calls=len(self.planned) - self.search_calls,
            failed_calls=len(self.failed),
            unreadable_calls=int(self.table.unreadable.sum()), probes=self.table.size,
            search_items=len(self.search_items), held_out_items=len(self.held_out),
            operators=[r.name for r in self.roots], predicates=len(self.predicates),
            candidates=len(candidates), alpha=self.config.alpha, margin=self.config.margin,
            baseline="random edits of the held-out items (any operator, placed at random "
                     "half of the time) judged by the same judge, leaving out the finding "
                     "and the findings confirmed before it",
            overall=overall, findings=findings)

    def _instance_at(self, offset: int):
        """The edit at ``offset`` of ``edits.jsonl`` as the instance the judge saw."""
        from fbi.records import Instance, Provenance
        from fbi.taxonomy import Ability

        record = self._read_edit(offset)
        item = self.by_id[record.item_id]
        return Instance(id=record.id, ability=Ability(item.ability),
                        category=f"hunt/{record.operator.replace('/', '-')}",
                        instruction=item.instruction, context=item.context,
                        gold_answer=item.gold_answer, perturbed_answer=record.shown,
                        rationale=record.rationale or None,
                        provenance=Provenance(source=item.source, original_id=item.id,
                                              generator=record.generator or
                                              f"hunt:{record.operator}", seed=record.seed))

    def _example_of(self, row: int) -> tuple[str, HuntExample]:
        """A table row as an example (its reply filled in later), and its edit's call."""
        table = self.table
        record = self._read_edit(int(table.edit_offset[row]))
        item = self.by_id[record.item_id]
        order = int(table.order[row])
        return table.calls[row][0], HuntExample(
            instance_id=record.id, strategy=list(self.strategies)[int(table.strategy[row])],
            order=EDIT_ORDERS[order - 1] if order else None,
            held_out=int(table.phase[row]) >= Phase.BASELINE, question=item.question,
            gold_answer=item.gold_answer, edited_answer=record.shown)

    def _replies(self, call_ids: set[str]) -> dict[str, str]:
        """The raw replies of ``call_ids``, read from the log in one pass."""
        found: dict[str, str] = {}

        def keep(judgment: Judgment) -> None:
            if judgment.call_id in call_ids and judgment.raw_output is not None:
                found[judgment.call_id] = judgment.raw_output

        if call_ids:
            read_log(self.log_path, Judgment, keep=False, visit=keep)
        return found


def shared_gold_call(call: Call, item_id: str) -> Call:
    """The gold answer's call of a single-answer strategy, one per gold item: every edit
    of the item is compared with the same score."""
    strategy = call.fields["strategy"]
    return Call(f"{item_id}|{strategy}|gold", call.planned, call.record_type,
                {**call.fields, "instance_id": item_id}, call.parse, call.repair,
                call.repairs, call.expected_reply_tokens)


__all__ = ["DEFAULT_BUDGET", "Hunt", "HuntConfig", "HuntStatus", "Root",
           "shared_gold_call"]
