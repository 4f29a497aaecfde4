"""`fbi hunt` as a stage of the run harness: rounds of probes chosen by the search, then
one phase of held-out confirmation; ``hunt.json`` and ``queue.jsonl`` at the end.

Every probe is an edit judged under one strategy by the judge protocol's own calls
([`fbi.judge.plan_calls`][fbi.judge.plan_calls]): single-answer strategies score the
edited answer, and the gold answer once per item and strategy (a shared call); pairwise
strategies compare both orders; the reference-guided one scores the edit against the
gold. A probe's outcome is the FBI paper's (§4, [`fbi.metrics.outcome_of`][fbi.metrics.outcome_of]):
missed when the judge does not penalise the edit; an unreadable reply about the edit
counts as missed (no hostile edit lowers a miss rate by making the reply unreadable),
and an unreadable reply about the gold, or a failed call, leaves the probe out.

Every call goes into one log, ``judgments.jsonl``, and counts against ``--budget`` whether
the response cache answers it or not, so the search is the same whatever the cache
holds. The search is a deterministic function of the seed and the log: a hunt stopped by
Ctrl-C replays its rounds from the log (no call made twice) and goes on where it
stopped.
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fbi.errors import InputError
from fbi.findings import HuntExample, HuntFinding, HuntResult
from fbi.hunt._confirm import holm
from fbi.hunt._edits import (
    AXES,
    LLM,
    Description,
    Edit,
    EditSpace,
    Operator,
    describe,
    llm_categories,
    llm_pool,
    matches,
    name_of,
    operator_of,
    perturber_calls,
)
from fbi.hunt._search import (
    Candidate,
    Observation,
    Search,
    Tally,
    baseline,
    candidates,
    fisher_greater,
    seen_operators,
)
from fbi.judge import (
    PARSER_VERSION,
    EvaluationConfig,
    StrategyRegistry,
    check_reward_strategies,
    plan_calls,
    prompt_records,
)
from fbi.llm import ModelClient, litellm_version
from fbi.metrics import outcome_of, wilson_interval
from fbi.outputs import write_atomically
from fbi.perturb import PerturbationCall
from fbi.records import GoldItem, Instance, Judgment, VettingLabel
from fbi.redaction import public_url
from fbi.reward import is_reward_model
from fbi.run_spec import DatasetRecord, Parameters, RunSettings, RunSpec, Selection, TotalsRecord
from fbi.runs import (
    Call,
    DryRun,
    Phase,
    RunTotals,
    Stage,
    StageFolder,
    check_folder,
    dry_run,
    finished_ids,
    now,
)
from fbi.settings import ModelSettings
from fbi.sources import write_dataset
from fbi.taxonomy import unknown_name_message

#: The search's version: a folder hunted by another version is refused on resume.
SEARCH_VERSION = "1"
#: The fewest calls a hunt can do anything with: a round of warm-up probes and a
#: confirmation.
MIN_BUDGET = 20
#: The share of the budget the search spends; the rest confirms.
SEARCH_SHARE = 0.6
#: Of the confirmation's calls, the share spent on the baseline's held-out edits.
BASELINE_SHARE = 0.25
#: Probes per search round: fixed, not from --concurrency (a setting that may change
#: between invocations), so a resumed hunt replays the same rounds.
ROUND_PROBES = 32
#: What a hunt writes in its folder (hunt.md: the CLI, from hunt.json).
HUNT_FILES = ("judgments.jsonl", "perturbations.jsonl", "hunt.json", "hunt.md",
              "queue.jsonl")
EXAMPLES = 5


@dataclass(frozen=True)
class HuntConfig:
    """What `fbi hunt` is asked: the judge, its strategies, the budget and the seed."""

    model: ModelSettings
    """The judge: its model, server or pool, sampling, concurrency and USD budget."""
    budget: int
    """Model calls the hunt may make: the judge's (the preflight probe's included) and
    the perturber's."""
    strategies: tuple[str, ...] = ("vanilla",)
    """The strategies each edit is judged by."""
    seed: int = 0
    """Seeds the split, the draws and the search."""
    operators: tuple[str, ...] = ()
    """Restrict the search to these operators (``number-errors``,
    ``grammar+spelling``, ``chronology+manipulation/padding``); empty: all."""
    label: str | None = None
    """The judge's name in the output."""
    prompts_dir: Path | None = None
    """A folder of the user's own strategy templates."""
    alpha: float = 0.05
    """The family-wise error level of the confirmed findings."""
    search: Literal["adaptive", "grid"] = "adaptive"
    """``grid``: the same number of probes for every root, no refinement (the baseline
    the adaptive search is measured against)."""
    perturber: ModelSettings | None = None
    """An LLM perturber: its edits in the categories no rule makes (``llm/CATEGORY``)
    join the search."""
    perturber_edits: int = 24
    """The perturber's edits asked per category, half of the items from each split;
    its calls count against ``budget``."""

    def __post_init__(self) -> None:
        if self.budget < MIN_BUDGET:
            raise InputError(f"--budget {self.budget} is too small: a hunt needs at least "
                             f"{MIN_BUDGET} calls (a few probes per operator, then "
                             "confirmation); give --budget 1000 or more to find narrow "
                             "blind spots")
        if not 0 < self.alpha < 1:
            raise InputError(f"--alpha {self.alpha} must lie between 0 and 1")
        for name in self.operators:
            if name.startswith(LLM):
                if name.removeprefix(LLM) not in llm_categories():
                    raise InputError(unknown_name_message(
                        "LLM operator", name, [LLM + c for c in llm_categories()]))
                if self.perturber is None:
                    raise InputError(f"--operator {name} needs --perturber MODEL")
            else:  # an unknown one is an InputError with the valid names
                Operator.parse(name)
        if self.perturber is not None and not 2 <= self.perturber_edits <= 10_000:
            raise InputError("--perturber-edits: give 2 to 10000 edits per category")
        if self.budget < MIN_BUDGET + self.perturber_calls:
            raise InputError(
                f"--budget {self.budget} is too small: the perturber's "
                f"{self.perturber_calls} calls and {MIN_BUDGET} for the judge; give a "
                "larger --budget or fewer --perturber-edits")

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
        """Calls asked of the perturber, at most (fewer where a category's ability has
        fewer items)."""
        return len(self.llm_operators) * self.perturber_edits


@dataclass
class Probe:
    """One edit under one strategy, with the calls that judge it."""

    edit: Edit
    """The edit judged."""
    strategy: str
    """The strategy it is judged by."""
    calls: tuple[str, ...]
    """Its call ids: the edit's, then (single-answer) the gold's shared one."""
    phase: str
    """``search``, ``baseline`` or the candidate's name."""

    @property
    def facts(self) -> dict[str, str]:
        return {**self.edit.facts, "strategy": self.strategy}


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
    """The descriptions being probed this round."""
    best: list[tuple[str, float, int]] = field(default_factory=list)
    """The search's highest miss rates so far: (description, rate, n)."""


class Hunt(Stage):
    """A blind-spot hunt over ``items`` (gold answers) for one judge."""

    def __init__(self, items: list[GoldItem], config: HuntConfig, output_dir: str | Path,
                 dataset_spec: str, force: bool = False,
                 observer: Callable[[HuntStatus], None] | None = None):
        if len(items) < 4:
            raise InputError(f"{dataset_spec} has {len(items)} gold answers: a hunt needs at "
                             "least 4 (half to search, half to confirm on)")
        self.items, self.config = items, config
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
        rule_operators = [Operator.parse(n) for n in config.operators
                          if not n.startswith(LLM)]
        self.space = EditSpace(rule_operators if config.operators else None)
        ordered = sorted(items, key=lambda i: hashlib.sha256(
            f"{config.seed}:{i.id}".encode()).hexdigest())
        half = len(ordered) // 2
        self.search_items, self.held_out = ordered[:half], ordered[half:]
        self.result: HuntResult | None = None
        """The findings, once the hunt has run to its end."""
        self.probes: list[Probe] = []
        """Every probe planned, in order."""
        self.records: dict[str, Judgment] = {}
        """The log's judgments by call id."""
        self.queued = 0
        """Edits written to queue.jsonl."""

    # ---------------------------------------------------------------- the stage protocol

    @property
    def log_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    def spec(self, totals: RunTotals | None = None) -> RunSpec:
        from fbi import __version__

        stamp, model, strategies = now(), self.config.model, list(self.strategies.values())
        return RunSpec(
            kind="hunt", label=self.config.label, fbi_version=__version__,
            litellm_version=litellm_version(), model=model.model, api_base=model.api_base,
            prompts=prompt_records(strategies, None, "fbi"),
            dataset=DatasetRecord(spec=self.dataset_spec, fingerprint=hashlib.sha256(
                "\n".join(f"{i.id}\x1f{i.question}\x1f{i.gold_answer}"
                          for i in self.items).encode()).hexdigest(),
                                  items=len(self.items)),
            selection=Selection(categories=list(self.config.operators) or None,
                                sample_seed=self.config.seed),
            parameters=Parameters(
                temperature=self.evaluation.temperature,
                max_tokens=self.evaluation.reply_tokens, seed=model.seed,
                model_args=model.recorded_model_args() or None,
                budget=self.config.budget,
                search_version=SEARCH_VERSION + ("-grid" if self.config.search == "grid"
                                                 else ""),
                perturber=f"{self.config.perturber.model} × {self.config.perturber_edits}"
                if self.config.perturber else None),
            settings=RunSettings(timeout_s=model.timeout_s, retries=model.retries,
                                 concurrency=model.concurrency, max_cost=model.max_cost,
                                 api_pool=[public_url(b) for b in model.api_pool] or None),
            command=list(sys.argv), record_versions={"judgment": 1},
            parser_version=PARSER_VERSION, created_at=stamp, updated_at=stamp,
            totals=TotalsRecord() if totals is None else totals.record())

    @property
    def perturbations_path(self) -> Path:
        return self.output_dir / "perturbations.jsonl"

    def _perturber_calls(self) -> list[Call]:
        config = self.config
        if config.perturber is None:
            return []
        return perturber_calls(config.perturber, config.llm_operators,
                               config.perturber_edits, config.seed,
                               (self.search_items, self.held_out), self.perturbations_path)

    def phases(self) -> Iterator[Phase]:
        budget = self.config.budget - 1  # (the preflight probe's call)
        perturbing = self._perturber_calls()
        if perturbing:  # the perturber's pool first; its calls count against the budget
            phase = Phase(self.perturbations_path, PerturbationCall, perturbing)
            yield phase
            self.space = EditSpace(self.space.operators, llm_pool(self.items, phase.records))
            budget -= len(perturbing)
        search_budget = int(budget * SEARCH_SHARE)
        search = Search(self.space.roots(), self.config.seed, axes=self._axes(),
                        adaptive=self.config.search == "adaptive")
        rng = random.Random(f"hunt-draw:{self.config.seed}")
        self.probes, self.records = [], {}
        planned: set[str] = set()
        used: set[str] = set()
        while True:  # the search, round by round
            arms = search.choose(ROUND_PROBES)
            calls, probes = self._plan(arms, self.search_items, rng, used, planned,
                                       search_budget, "search", search.exhausted,
                                       search.observations)
            if not calls:
                break
            self.probes += probes
            self._status("search", len(planned), arms, search)
            phase = Phase(self.log_path, Judgment, calls)
            yield phase
            self.records.update(phase.records)  # type: ignore[arg-type]
            for probe in probes:
                missed = self._missed(probe)
                if missed is not None:
                    search.record(Observation(probe.facts, missed))
            search.refine()
        search_calls = len(planned)
        found, tested = candidates(search.observations, search.axes)
        self._status("confirmation", len(planned), [], search)
        if found:
            left = budget - len(planned)
            allowance = {"baseline": int(left * BASELINE_SHARE)}
            share = (left - allowance["baseline"]) // len(found)
            calls, probes = self._plan_confirmation(found, rng, used, planned, allowance,
                                                    share, search.observations)
            self.probes += probes
            if calls:
                phase = Phase(self.log_path, Judgment, calls)
                yield phase
                self.records.update(phase.records)  # type: ignore[arg-type]
        self.result = self._result(search, found, tested, search_calls, len(planned),
                                   len(perturbing))

    def finish(self, totals: RunTotals) -> None:
        if self.result is None:  # stopped early: it resumes, nothing concluded yet
            return
        write_atomically(self.output_dir / "hunt.json",
                         self.result.model_dump_json(indent=2) + "\n")
        queue = [self._queued(probe.edit, finding) for finding in self.result.findings
                 if finding.confirmed for probe in self._unique_edits(finding)]
        write_dataset(queue, self.output_dir / "queue.jsonl")
        self.queued = len(queue)

    def dry_run(self, client: ModelClient) -> DryRun:
        """The hunt's cost estimated from its first round's calls, scaled to the budget
        (the later rounds depend on the judge's replies)."""
        check_folder(self)
        finished = set(finished_ids(self.log_path, Judgment))
        search = Search(self.space.roots(), self.config.seed, axes=self._axes())
        calls, _ = self._plan(search.choose(ROUND_PROBES),
                              self.search_items, random.Random(f"hunt-draw:{self.config.seed}"),
                              set(), set(), self.config.budget, "search", set(), [])
        first = dry_run(calls, client, finished)
        scale = (self.config.budget - 1 - self.config.perturber_calls) / max(1, first.calls)
        to_call = max(0, self.config.budget - 1 - self.config.perturber_calls -
                      len(finished))
        estimate = DryRun(calls=self.config.budget - 1 - self.config.perturber_calls,
                          done=len(finished), to_call=to_call,
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

    # ---------------------------------------------------------------- planning probes

    def _axes(self) -> tuple[str, ...]:
        return tuple(a for a in AXES if a != "strategy" or len(self.strategies) > 1)

    def _strategies_for(self, description: Description) -> list[str]:
        fixed = dict(description).get("strategy")
        return [fixed] if fixed else list(self.strategies)

    def _plan(self, arms: list[Description], items: list[GoldItem], rng: random.Random,
              used: set[str], planned: set[str], limit: int, phase: str,
              exhausted: set[Description], observed: list[Observation]
              ) -> tuple[list[Call], list[Probe]]:
        """Probes for ``arms`` (one edit each), while the calls stay within ``limit``."""
        calls: list[Call] = []
        probes: list[Probe] = []
        for arm in arms:
            edit = self.space.draw(arm, items, rng, used, seen_operators(observed, arm))
            if edit is None:
                exhausted.add(arm)
                continue
            if not self._admit(edit, arm, phase, used, planned, limit - len(planned),
                               calls, probes):
                break
        return calls, probes

    def _plan_confirmation(self, found: list[Candidate], rng: random.Random,
                           used: set[str], planned: set[str], allowance: dict[str, int],
                           share: int, observed: list[Observation]
                           ) -> tuple[list[Call], list[Probe]]:
        """The baseline's held-out probes, then each candidate's, each within its
        share of the calls."""
        calls: list[Call] = []
        probes: list[Probe] = []
        targets = [("baseline", (), allowance["baseline"])] + [
            (name_of(c.description), c.description, share) for c in found]
        for phase, description, allowed in targets:
            start, seen = len(planned), seen_operators(observed, description)
            while (edit := self.space.draw(description, self.held_out, rng, used, seen)) \
                    and self._admit(edit, description, phase, used, planned,
                                    allowed - (len(planned) - start), calls, probes):
                pass
        return calls, probes

    def _admit(self, edit: Edit, description: Description, phase: str, used: set[str],
               planned: set[str], room: int, calls: list[Call],
               probes: list[Probe]) -> bool:
        """Add ``edit``'s probes and new calls if they fit in ``room`` calls."""
        new_calls, new_probes = self._probes_of(edit, self._strategies_for(description),
                                                phase, planned)
        if len(new_calls) > room:
            return False
        used.add(edit.id)
        planned.update(c.call_id for c in new_calls)
        calls += new_calls
        probes += new_probes
        return True

    def _probes_of(self, edit: Edit, strategies: list[str], phase: str,
                   planned: set[str]) -> tuple[list[Call], list[Probe]]:
        """The calls (not yet planned) and probes of ``edit`` under ``strategies``."""
        calls, probes = [], []
        for name in strategies:
            strategy = self.strategies[name]
            ids = []
            for call in plan_calls([edit.instance], [strategy], self.registry,
                                   self.evaluation):
                if call.fields["role"] == "gold":  # one gold call per item and strategy
                    call = shared_gold_call(call, edit.item.id)
                ids.append(call.call_id)
                if call.call_id not in planned and call.call_id not in {c.call_id
                                                                         for c in calls}:
                    calls.append(call)
            probes.append(Probe(edit, name, tuple(ids), phase))
        return calls, probes

    def _missed(self, probe: Probe) -> bool | None:
        """Whether the judge missed the probe's edit; None when it counts nowhere (a
        failed call, an unreadable gold score)."""
        judgments = [self.records.get(i) for i in probe.calls]
        if any(j is None or j.status == "error" for j in judgments):
            return None
        roles = {j.role: j for j in judgments}  # type: ignore[union-attr]
        if "gold" in roles and roles["gold"].status != "ok":
            return None
        outcome = outcome_of(roles).outcome
        return outcome in ("undetected", "unparseable")

    def _status(self, stage: str, calls: int, arms: list[Description],
                search: Search) -> None:
        best = sorted(((describe(d), t.rate, t.n) for d in set(search.arms)
                       if (t := search.tally(d)).n >= 5), key=lambda b: -b[1])[:3]
        trying = "; ".join(dict.fromkeys(describe(a) for a in arms))
        self.observer(HuntStatus(stage, calls, self.config.budget, trying, best))

    # ---------------------------------------------------------------- the findings

    def _observations(self, phases: set[str]) -> list[tuple[Probe, bool]]:
        seen = []
        for probe in self.probes:
            if probe.phase in phases:
                missed = self._missed(probe)
                if missed is not None:
                    seen.append((probe, missed))
        return seen

    def _result(self, search: Search, found: list[Candidate], tested: int,
                search_calls: int, planned: int, perturber_calls: int) -> HuntResult:
        held_base = [Observation(p.facts, m) for p, m in self._observations({"baseline"})]
        rows = []
        for candidate in found:
            name = name_of(candidate.description)
            held = self._observations({name})
            own = Tally(sum(m for _, m in held), len(held))
            base = baseline(held_base, candidate.description)
            rows.append((candidate, name, held, own, base, fisher_greater(own, base)))
        adjusted = holm([row[5] for row in rows], tested)
        findings = []
        for (candidate, name, held, own, base, p), p_adj in zip(rows, adjusted,
                                                                strict=True):
            interval = wilson_interval(own.misses, own.n)
            findings.append(HuntFinding(
                name=name, description=describe(candidate.description),
                operator=operator_of(candidate.description),
                axes=dict(candidate.description),
                confirmed=bool(p_adj < self.config.alpha and own.n and base.n
                               and own.rate > base.rate),
                miss_rate=own.rate if own.n else None,
                interval=list(interval) if interval else None, n=own.n, misses=own.misses,
                unreadable=sum(self._unreadable(pr) for pr, m in held if m),
                baseline_rate=base.rate if base.n else None, baseline_n=base.n,
                p_value=p, p_adjusted=p_adj, search_miss_rate=candidate.tally.rate,
                search_n=candidate.tally.n,
                examples=self._examples(candidate.description, name)))
        findings.sort(key=lambda f: (not f.confirmed, f.p_adjusted, -(f.miss_rate or 0)))
        failed = sum(j.status == "error" for j in self.records.values())
        return HuntResult(
            judge=self.evaluation.judge if self.config.label is None
            else f"{self.config.label} ({self.evaluation.judge})",
            model=self.evaluation.judge, strategies=list(self.strategies),
            dataset=self.dataset_spec, seed=self.config.seed, budget=self.config.budget,
            calls=planned + 1 + perturber_calls, search_calls=search_calls,
            perturber_calls=perturber_calls,
            confirmation_calls=planned - search_calls, failed_calls=failed,
            search_items=len(self.search_items), held_out_items=len(self.held_out),
            operators=[describe(r) for r in search.roots], hypotheses_tested=tested,
            alpha=self.config.alpha,
            baseline="the same judge's misses of plain error edits (one error rule, "
                     "nothing added) outside the finding, on the held-out items, under "
                     "the finding's strategy when it names one",
            findings=findings)

    def _unreadable(self, probe: Probe) -> bool:
        return any(self.records[i].status == "unparseable" for i in probe.calls
                   if i in self.records)

    def _examples(self, description: Description, name: str) -> list[HuntExample]:
        order = self._observations({name}) + self._observations({"search"})
        examples = []
        for probe, missed in order:
            if not missed or not matches(description, probe.facts):
                continue
            reply = self.records[probe.calls[0]].raw_output
            instance = probe.edit.instance
            examples.append(HuntExample(
                instance_id=instance.id, strategy=probe.strategy,
                question=instance.question, gold_answer=instance.gold_answer,
                edited_answer=instance.perturbed_answer, judge_reply=reply))
            if len(examples) == EXAMPLES:
                break
        return examples

    def _unique_edits(self, finding: HuntFinding) -> list[Probe]:
        seen, kept = set(), []
        for probe in self.probes:
            if matches(tuple(finding.axes.items()), probe.facts) and \
                    probe.edit.id not in seen:
                seen.add(probe.edit.id)
                kept.append(probe)
        return kept

    @staticmethod
    def _queued(edit: Edit, finding: HuntFinding) -> Instance:
        return edit.instance.model_copy(update={
            "category": f"hunt/{finding.name}", "label": VettingLabel.UNVETTED,
            "rationale": f"{finding.description}: {edit.instance.rationale}"})


def shared_gold_call(call: Call, item_id: str) -> Call:
    """The gold answer's call of a single-answer strategy, one per gold item: every edit
    of the item is compared with the same score."""
    strategy = call.fields["strategy"]
    return Call(f"{item_id}|{strategy}|gold", call.planned, call.record_type,
                {**call.fields, "instance_id": item_id}, call.parse, call.repair,
                call.repairs, call.expected_reply_tokens)
