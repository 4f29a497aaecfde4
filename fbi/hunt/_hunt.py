"""`fbi hunt` as a stage of the run harness: rounds of probes chosen by the search, one
phase of held-out confirmation, then ``hunt.json``, ``hunt.md`` and ``queue.jsonl``
(issues 40 and 49).

**A probe** is an edit judged once, with the FBI protocol's own calls (`fbi.hunt._planner`);
whether it was missed is the paper's rule (`fbi.hunt._verdicts`). Every call goes into one
log, ``judgments.jsonl``, and counts against ``--budget`` whether the response cache
answers it or not, so the search is the same whatever the cache holds. The search is a
deterministic function of the seed and the log: a hunt stopped by Ctrl-C replays its
rounds from the log (no call made twice) and goes on. The log is read once; each round
reads only the lines it adds, and keeps of each probe its row of predicates
(`fbi.hunt._table`), not its texts: the edits are in ``edits.jsonl``
(`fbi.hunt._edit_log`).

Before the search, a perturber's pool (``--perturber``); midway, the describer's
proposals (``--describer``, `fbi.hunt._describer`); both count against the budget.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fbi.datasets import write_dataset
from fbi.errors import InputError
from fbi.findings import HuntExample, HuntResult
from fbi.hunt._config import HuntConfig
from fbi.hunt._confirm import planned_rates, probes_needed
from fbi.hunt._describer import (
    SHOWN,
    DescriberCall,
    describe_call,
    edit_line,
    hypotheses_of,
    hypothesis_calls,
)
from fbi.hunt._edit_log import EditLog
from fbi.hunt._findings import Summary, assemble, queue_instances
from fbi.hunt._neighbours import family_size
from fbi.hunt._operators import (
    LLM,
    PROPOSAL,
    STRING,
    Edit,
    Operator,
    error_operators,
    invariant_rules,
    is_pool,
    pool_edit,
)
from fbi.hunt._planner import Planned, Planner
from fbi.hunt._predicates import Predicate, describe
from fbi.hunt._search import Found, Search, Target
from fbi.hunt._space import EDIT_ORDERS, EditSpace, predicates_for
from fbi.hunt._strings import StringSearch
from fbi.hunt._table import Phase, Population, ProbeTable, Row
from fbi.hunt._trajectory_edits import Toolbox
from fbi.hunt._verdicts import Verdicts
from fbi.judge import (
    PARSER_VERSION,
    EvaluationConfig,
    StrategyRegistry,
    judge_kind,
    prompt_records,
)
from fbi.logs import read_log
from fbi.outputs import write_atomically
from fbi.perturb import PerturbationCall, PerturbConfig, Perturber, manipulations
from fbi.providers import ModelClient
from fbi.records import GoldItem, Judgment
from fbi.redaction import public_url
from fbi.run_spec import (
    DatasetRecord,
    Parameters,
    RunIdentity,
    RunSettings,
    Selection,
)
from fbi.runs import Call, DryRun, RunTotals, Stage, StageFolder, check_folder, dry_run
from fbi.runs import Phase as LogPhase
from fbi.taxonomy import get_category

#: The search's version: a folder hunted by another version is refused on resume.
SEARCH_VERSION = "2"
#: The share of the judge's budget the search spends; the rest confirms.
SEARCH_SHARE = 0.55
#: A search round that finds fewer new edits than this share of the probes it asked for
#: is thin; after `THIN_ROUNDS` thin rounds in a row the items' edits have run out, and
#: the search ends under its budget (each round costs a pass over the table: a huge
#: budget on a handful of items would otherwise go on for hours, a few edits at a time).
THIN_ROUND = 0.25
THIN_ROUNDS = 2
#: What a hunt writes in its folder.
HUNT_FILES = ("judgments.jsonl", "perturbations.jsonl", "edits.jsonl", "describer.jsonl",
              "describer_edits.jsonl", "hunt.json", "hunt.md", "queue.jsonl")


def _check_subject(strategies: list, config: HuntConfig, trajectories: bool) -> None:
    """A hunt over trajectories judges with the agent strategies and edits with the
    trajectory rules; a hunt over answers with neither."""
    subject = "trajectory" if trajectories else "answer"
    plural = {"answer": "answers", "trajectory": "trajectories"}
    for strategy in strategies:
        if strategy.paradigm == "step":  # (a step named is not a verdict on one answer)
            raise InputError(f"--strategy {strategy.name}: a step-level strategy's verdict "
                             "is a step, which the hunt's tests do not read. Fix: hunt with "
                             "agent, agent_pairwise or agent_reference")
        if strategy.meta.subject != subject and not strategy.meta.reward:  # (a reward
            # model reads the task and the rendered trajectory as any conversation)
            raise InputError(f"--strategy {strategy.name} judges "
                             f"{plural[strategy.meta.subject]}, and this hunt edits "
                             f"{plural[subject]}. Fix: " + (
                                 "--strategy agent, agent_pairwise or agent_reference"
                                 if trajectories else "a strategy of answers (vanilla, "
                                 "pairwise, reference, ...) or hunt with --trajectories"))
    own = set(error_operators(trajectories)) | (set() if trajectories else
                                                  set(invariant_rules()))
    for name in config.operators:
        kind = Operator.parse(name).manipulation
        if kind and (manipulations()[1][kind].where == "tool-result") != trajectories:
            raise InputError(
                f"--operator {name}: {kind} goes into an agent's tool result. Fix: hunt "
                "with --trajectories" if not trajectories else
                f"--operator {name}: {kind} is put before or after an answer, not into an "
                "agent's trajectory. Fix: manipulation/tool-result-instruction after a "
                "trajectory rule, or a hunt of answers")
        if not {e for e in Operator.parse(name).errors if not is_pool(e)} <= own:
            raise InputError(f"--operator {name}: not an operator of {plural[subject]}. Fix: "
                             f"one of {', '.join(sorted(own))}")
    if config.search == "strings" and (trajectories or config.operators or
                                       config.perturber or config.describer):
        raise InputError("--search strings searches strings put before or after wrong "
                         "answers, or standing alone; it takes no --operator, --perturber, "
                         "--describer or --trajectories. Fix: leave them out")
    if trajectories and (config.perturber or config.describer):
        raise InputError("--perturber and --describer edit answers' text; a hunt over "
                         "trajectories edits steps with the trajectory rules. Fix: leave "
                         "them out")


def round_probes(budget: int) -> int:
    """Probes per search round: from the budget (fixed for a hunt, so a resumed hunt
    replays the same rounds), not from --concurrency."""
    return min(256, max(32, budget // 80))


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
    title = "a search for the edits a judge misses, confirmed on held-out answers (fbi hunt)"
    outputs = HUNT_FILES
    reported = True

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
        self.folder = StageFolder(self.output_dir / "run.json", force=force)
        self.observer = observer or (lambda status: None)
        self.evaluation = EvaluationConfig(model=config.model, strategies=config.strategies,
                                           prompts_dir=config.prompts_dir,
                                           label=config.label)
        self.registry = StrategyRegistry(config.prompts_dir)
        kind = judge_kind(config.model.model)
        resolved = self.registry.resolve(list(config.strategies), kind)
        kind.check(config.model.model, resolved)
        self.trajectories = all(item.trajectory is not None for item in items)
        _check_subject(resolved, config, self.trajectories)
        self.strategies = {s.name: s for s in resolved}
        ordered = sorted(items, key=lambda i: hashlib.sha256(
            f"{config.seed}:{i.id}".encode()).hexdigest())
        half = len(ordered) // 2
        self.search_items, self.held_out = ordered[:half], ordered[half:]
        self.edit_log = EditLog(self.output_dir / "edits.jsonl", self.by_id)
        self.result: HuntResult | None = None
        """The findings, once the hunt has run to its end."""
        self.queued = 0
        """Edits written to queue.jsonl."""
        self.rows_read = len(items)
        """How many rows the source held (`plan_hunt` says)."""

    # ---------------------------------------------------------------- the stage protocol

    @property
    def log_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    @property
    def perturbations_path(self) -> Path:
        return self.output_dir / "perturbations.jsonl"

    def identity(self) -> RunIdentity:
        model, strategies = self.config.model, list(self.strategies.values())
        config = self.config
        return RunIdentity(
            label=config.label, model=model.model, api_base=model.endpoint,
            prompts=prompt_records(strategies, self.evaluation),
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
                search_version=SEARCH_VERSION + ("" if config.search == "adaptive"
                                                 else f"-{config.search}") +
                f"-margin{config.margin:g}",
                perturber=f"{config.perturber.model} × {config.perturber_edits}"
                if config.perturber else None,
                describer=f"{config.describer.model} × {config.describer_edits}"
                if config.describer else None),
            settings=RunSettings(timeout_s=model.timeout_s, retries=model.retries,
                                 concurrency=model.concurrency, max_cost=model.max_cost,
                                 api_pool=[public_url(b) for b in model.api_pool] or None),
            record_versions={"judgment": 1, "edit": 1}, parser_version=PARSER_VERSION)

    def phases(self) -> Iterator[LogPhase]:
        self.verdicts, self.log_state = Verdicts(), None  # the first round reads the log
        self.edit_log.read_index()
        self.describer_calls = 0
        budget = self.config.budget - 1 - self.config.describer_calls  # (and the probe's)
        perturbing = self._perturber_calls()
        pool: dict[str, list[Edit]] = {}
        if perturbing:  # the perturber's pool first; its calls count against the budget
            phase = LogPhase(self.perturbations_path, PerturbationCall, perturbing)
            yield phase
            pool = self._pool(phase.records)
            budget -= len(perturbing)
        self._prepare(pool)
        search = Search(self.table, self.populations, self.config.seed,
                        adaptive=self.config.search != "grid")
        search_budget = int(budget * SEARCH_SHARE)
        size = round_probes(self.config.budget)
        described = self.config.describer is None
        thin = 0  # rounds in a row that found few edits not judged yet
        self.edits_ran_out = False
        while True:
            targets = search.plan(size)
            probes = self.planner.search_round(targets, search, search_budget)
            if not probes:
                # (at the budget's edge a probe's few calls may not fit: that is no end)
                self.edits_ran_out = search_budget - len(self.planner.planned) > 3
                break
            thin = thin + 1 if len(probes) < size * THIN_ROUND else 0
            if thin >= THIN_ROUNDS:  # the items' edits ran out: go on to confirm
                self.edits_ran_out = True
                break
            self._status("search", targets, search)
            yield from self._judge(probes)
            search.update()
            if self.strings is not None:
                self._grow(search)
            if not described and len(self.planner.planned) >= search_budget // 2:
                described = True  # midway: the describer proposes, the search tests
                yield from self._describe(search)
        self.search_calls = len(self.planner.planned)
        candidates = search.candidates()
        self._status("confirmation", [], search)
        probes = self.planner.confirmation(candidates, budget - len(self.planner.planned),
                                           self._needs(candidates))
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
        queue = queue_instances(self.summary, self.edit_log.instance)
        write_dataset(queue, self.output_dir / "queue.jsonl")
        self.queued = len(queue)

    def dry_run(self, client: ModelClient) -> DryRun:
        """The hunt's cost estimated from its first round's calls, scaled to the budget
        (the later rounds depend on the judge's replies)."""
        from fbi.runs import finished_ids

        check_folder(self)
        finished = set(finished_ids(self.log_path, Judgment))
        self._prepare({})
        search = Search(self.table, self.populations, self.config.seed)
        calls = [c for p in self.planner.search_round(
            search.plan(round_probes(self.config.budget)), search, self.config.budget)
                 for c in p.calls]
        first = dry_run(calls, client, finished)
        judge_calls = self.config.budget - 1 - self.config.perturber_calls - \
            self.config.describer_calls
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

    # ---------------------------------------------------------------- a round

    def _prepare(self, pool: dict[str, list[Edit]]) -> None:
        """The search's state: its edit space (with a perturber's pool), its predicates,
        the probe table and the planner."""
        operators = [Operator.parse(n) for n in self.config.operators
                     if not n.startswith(LLM)]
        self.strings = None
        if self.config.search == "strings":  # the strings are the only operators
            self.strings = StringSearch(self.items, self.config.seed)
            pool = {**pool, **self.strings.pools()}
        self.space = EditSpace(operators if self.config.operators or self.strings
                               else None, pool,
                               sway=self.strings is None and any(
                                   s.paradigm != "reference"
                                   for s in self.strategies.values()),
                               trajectories=self.trajectories,
                               toolbox=Toolbox.of(self.items) if self.trajectories
                               else None)
        if self.strings is not None:
            self.space.phrases.update(self.strings.phrases())
        self.pairwise = any(s.paradigm == "pairwise" for s in self.strategies.values())
        predicates = self._searched(predicates_for(self.space, list(self.strategies),
                                                   self.pairwise))
        self.by_name = {p.name: p for p in predicates}
        self.table = ProbeTable(predicates)
        self.populations = sorted({r.population for r in self.space.roots()})
        self.planner = Planner(self.space, self.table, self.by_name, self.strategies,
                               self.registry, self.evaluation,
                               (self.search_items, self.held_out), self.config.seed)

    def _string_texts(self) -> dict[str, tuple[str, str]]:
        """The string search's strings and their places by predicate name (none in
        another hunt)."""
        if self.strings is None:
            return {}
        return {f"op:{self.strings.name(k)}": (flip.text, flip.position)
                for k, flip in enumerate(self.strings.flips)}

    def _needs(self, candidates: list[Found]) -> list[int | None]:
        """Held-out edits each candidate needs, sized from its search evidence at its
        Bonferroni level (`fbi.hunt._confirm.probes_needed`)."""
        level = self.config.alpha / max(1, family_size(candidates, self._string_texts(),
                                                        self.table))
        return [probes_needed(*planned_rates(f.scored.misses, f.scored.n,
                                             f.scored.outside_misses, f.scored.outside_n),
                              self.config.margin, level) for f in candidates]

    def _status(self, stage: str, targets: list[Target], search: Search) -> None:
        best = [(describe([self.by_name[n] for n in f.description]), f.scored.rate,
                 f.scored.n) for f in search.suspects[:3]]
        trying = "; ".join(dict.fromkeys(
            describe([self.by_name[n] for n in t.description])
            for t in targets if t.description))
        self.observer(HuntStatus(stage, len(self.planner.planned), self.config.budget,
                                 trying, best))

    def _judge(self, probes: list[Planned]) -> Iterator[LogPhase]:
        """The probes' edits into ``edits.jsonl``, their calls as one phase of the log,
        then their rows in the table."""
        for planned, offset in zip(probes, self.edit_log.write([p.edit for p in probes]),
                                   strict=True):
            planned.offset = offset
        planned_before = self.planner.planned
        calls: dict[str, Call] = {}
        for planned in probes:  # (a gold call an earlier round made is not asked again)
            calls.update((c.call_id, c) for c in planned.calls
                         if c.call_id not in planned_before)
        planned_before.update(calls)
        collect = self.verdicts.collect
        phase = LogPhase(self.log_path, Judgment, list(calls.values()), keep_records=False,
                         visit=collect, collect=collect, known=self.log_state)
        yield phase
        self.log_state = phase.state
        strategies = list(self.strategies)
        for planned in probes:
            missed = self.verdicts.missed(planned.call_ids,
                                          self.strategies[planned.strategy].paradigm,
                                          planned.population == Population.SWAY)
            if missed is None:
                continue
            edit = planned.edit
            change = edit.view().change
            self.table.add(Row(
                planned.values, missed[0], planned.population, planned.phase,
                planned.candidate, edit.operator.name, planned.offset, planned.call_ids,
                missed[1], change.end - change.start +
                max(0, len(edit.edited) - len(edit.item.gold_answer)),
                strategies.index(planned.strategy),
                EDIT_ORDERS.index(planned.order) + 1 if planned.order else 0))

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

    def _pool(self, records: dict, name_of: Callable[[str], str] = lambda c: LLM + c
              ) -> dict[str, list[Edit]]:
        """A model's edits (its `PerturbationCall` records) by pool operator, in call-id
        order: the log's is the order replies arrived in, which concurrency varies, and
        the search draws from these lists by position (the same seed, the same hunt)."""
        pool: dict[str, list[Edit]] = {}
        for _, record in sorted(records.items()):
            if record.status != "ok" or not record.perturbed_answer or \
                    record.item_id not in self.by_id:
                continue
            edit = pool_edit(self.by_id[record.item_id], name_of(record.category),
                             record.perturbed_answer, record.rationale or "", record.model)
            if edit is not None:
                pool.setdefault(edit.operator.name, []).append(edit)
        return pool

    # ---------------------------------------------------------------- the strings

    def _grow(self, search: Search) -> None:
        """The string search's evolutionary step after a round: the new strings join the
        space as operators, each proposed to the search (`fbi.hunt._strings`)."""
        assert self.strings is not None
        parents, offspring = self.strings.grow(self.table)
        pools = self.strings.pools()
        self.space.pools.update((name, pools[name]) for name in offspring)
        self.space.phrases.update(self.strings.phrases())
        self._add_predicates()
        for name in parents + offspring:
            search.propose((f"op:{name}",), Population.ERROR)

    def _searched(self, predicates: list[Predicate]) -> list[Predicate]:
        """The predicates a description may use: all; for the string search, the strings
        and how they were judged (a string's edits replace or surround a whole answer:
        what they "touch" is every word of it, a description that says nothing)."""
        if self.strings is None:
            return predicates
        return [p for p in predicates if p.name.startswith(f"op:{STRING}") or p.judged]

    def _add_predicates(self) -> None:
        """The predicates of operators that joined the space since the table began."""
        for predicate in self._searched(predicates_for(self.space, list(self.strategies),
                                                       self.pairwise)):
            if predicate.name not in self.table.column:
                self.table.add_predicate(predicate)
                self.by_name[predicate.name] = predicate

    # ---------------------------------------------------------------- the describer

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
            shown[missed] = [edit_line(self.edit_log.view(int(table.edit_offset[r])))
                             for r in rng.sample(chosen, min(len(chosen), SHOWN))]
        if not shown[True]:
            return
        phase = LogPhase(self.output_dir / "describer.jsonl", DescriberCall, [describe_call(
            settings, shown[True], shown[False], table.names, 1)])
        yield phase
        self.describer_calls += 1
        calls, phrases = [], {}
        for k, hypothesis in enumerate(hypotheses_of(phase.records), 1):
            if hypothesis.predicates:
                search.propose(tuple(sorted(hypothesis.predicates)), Population.ERROR)
                continue
            name = f"{PROPOSAL}{k}"
            phrases[name] = hypothesis.description
            calls += hypothesis_calls(settings, hypothesis, name,
                                      (self.search_items, self.held_out),
                                      self.config.describer_edits // 2, self.config.seed)
        if not calls:
            return
        phase = LogPhase(self.output_dir / "describer_edits.jsonl", PerturbationCall, calls)
        yield phase
        self.describer_calls += len(calls)
        for name, edits in self._pool(phase.records,
                                      lambda c: c.removeprefix("hunt/")).items():
            self.space.pools[name] = edits
        self.space.phrases.update(phrases)
        self._add_predicates()
        for name in phrases:
            if name in self.space.pools:
                search.propose((f"op:{name}",), Population.ERROR)

    # ---------------------------------------------------------------- the findings

    def _result(self, candidates: list[Found], perturber_calls: int) -> HuntResult:
        self.summary = Summary(self.table, candidates, self.by_name, self.config.alpha,
                               self.config.margin, self._string_texts())
        findings, overall = assemble(self.summary, self._example_of, self._replies)
        planned = len(self.planner.planned)
        return HuntResult(
            judge=self.evaluation.judge if self.config.label is None
            else f"{self.config.label} ({self.evaluation.judge})",
            model=self.evaluation.judge, strategies=list(self.strategies),
            dataset=self.dataset_spec, seed=self.config.seed, budget=self.config.budget,
            calls=planned + 1 + perturber_calls + self.describer_calls,
            search_calls=self.search_calls, perturber_calls=perturber_calls,
            describer_calls=self.describer_calls,
            confirmation_calls=planned - self.search_calls,
            failed_calls=len(self.verdicts.failed),
            unreadable_calls=int(self.table.unreadable.sum()), probes=self.table.size,
            search_items=len(self.search_items), held_out_items=len(self.held_out),
            edits_ran_out=self.edits_ran_out,
            operators=[r.name for r in self.space.roots()],
            predicates=len(self.table.names), candidates=len(candidates),
            alpha=self.config.alpha, margin=self.config.margin,
            baseline="random edits of the held-out items (any operator, placed at random "
                     "half of the time) judged by the same judge, leaving out the finding "
                     "and the findings confirmed before it",
            overall=overall, findings=findings)


    def _example_of(self, row: int) -> tuple[str, HuntExample]:
        """A table row as an example (its reply filled in later), and its edit's call."""
        table = self.table
        record = self.edit_log.read(int(table.edit_offset[row]))
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
