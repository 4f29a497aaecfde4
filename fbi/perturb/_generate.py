"""Making perturbation candidates: the rule engine, the LLM engine, and the pre-screen.

For every gold item and every category of its ability (plus score-invariant), ``--n``
candidates are made: by a rule where one exists (``rules`` or ``auto``), otherwise by an
LLM through the same cached, resumable runner as judging (``llm`` or ``auto``). Every
candidate is pre-screened and written to a vetting queue of ``unvetted`` Instance
records; flagged ones stay in, with their flags, for people to judge.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fbi.datasets import write_dataset
from fbi.errors import InputError
from fbi.estimates import count_tokens
from fbi.logs import read_log
from fbi.perturb._manipulate import is_manipulation
from fbi.perturb._prescreen import DEFAULT_LENGTH_THRESHOLD, prescreen
from fbi.perturb.rules import RULES_VERSION, Declined, apply_rule
from fbi.providers import (
    LOCAL_JUDGE,
    ModelRequest,
    ModelResponse,
    json_object_in,
)
from fbi.records import CallRecord, GoldItem, Instance, Provenance
from fbi.run_spec import (
    DatasetRecord,
    Parameters,
    PromptRecord,
    RunIdentity,
    RunSettings,
    Selection,
)
from fbi.runs import (
    Call,
    Parsed,
    Phase,
    RunTotals,
    Stage,
    StageFolder,
)
from fbi.settings import ModelSettings
from fbi.taxonomy import SCORE_INVARIANT, get_category
from fbi.templates import TemplateFolder

Engine = Literal["llm", "rules", "auto"]
RESPONSE_SCHEMA = {"type": "object", "properties": {
    "rationale": {"type": "string", "maxLength": 600},
    "perturbed_answer": {"type": "string"}},
    "required": ["rationale", "perturbed_answer"], "additionalProperties": False}


class PerturbationCall(CallRecord):
    """One LLM perturbation call: a line of the queue's ``.calls.jsonl`` log.
    ``call_id`` is ``item_id|category|variant``."""

    item_id: str
    """The gold item perturbed."""
    category: str
    """The category asked for."""
    variant: int
    """Which of --n-per-item it is."""
    model: str
    """The model that perturbed it."""
    template_version: str
    """The perturbation template's version."""
    rationale: str | None = None
    """What the model said it changed."""
    perturbed_answer: str | None = None
    """The perturbed answer read from the reply."""


@dataclass(frozen=True)
class PerturbConfig:
    """What `fbi perturb` makes: categories, engine, the LLM engine's model settings,
    candidates per item, seed and limits."""
    categories: tuple[str, ...] = ()
    """Empty: every category of each item's ability, and SI."""
    engine: Engine = "auto"
    """``llm`` (a model rewrites the answer), ``rules`` (fbi's deterministic rules), or
    ``auto`` (the rules where a category has them, the model for the rest)."""
    model: ModelSettings = field(default_factory=lambda: ModelSettings(model=LOCAL_JUDGE))
    """The LLM engine's model settings."""
    n_per_item: int = 1
    """Candidates per item and category (--n-per-item)."""
    seed: int = 0
    """The rules' (and recorded as the LLM engine's variant seed)."""
    length_threshold: float = DEFAULT_LENGTH_THRESHOLD
    """The pre-screen flags a candidate whose length differs from the gold answer's by more
    than this share."""
    limit: int | None = None
    """Only the first N gold answers."""

    def __post_init__(self) -> None:
        if self.engine not in ("llm", "rules", "auto"):
            raise InputError(f"engine {self.engine!r}: give llm, rules or auto")
        if self.n_per_item < 1 or (self.limit is not None and self.limit < 1):
            raise InputError("n_per_item and limit are at least 1")
        if not math.isfinite(self.length_threshold) or self.length_threshold < 0:
            raise InputError(f"length_threshold {self.length_threshold}: give a finite "
                             "number of at least 0")
        manipulations = [is_manipulation(name) for name in self.categories]
        if any(manipulations) and not all(manipulations):
            raise InputError("manipulations are added to answers that already hold a "
                             "planted error; make them in a queue of their own")
        if any(manipulations) and self.engine == "llm":
            raise InputError("manipulations are made by rules (their texts are in "
                             "perturbations/manipulations.yaml); use --engine rules")

    @property
    def manipulations(self) -> bool:
        """Whether it asks for manipulations (`fbi.perturb.write_manipulations`'s, not the
        Perturber's)."""
        return any(is_manipulation(name) for name in self.categories)

    @property
    def temperature(self) -> float:
        """The LLM engine's temperature: the settings', else 0.7 (varied candidates)."""
        return self.model.temperature if self.model.temperature is not None else 0.7


@dataclass
class CategoryTally:
    """Per category, how many candidates were made, flagged by the pre-screen, declined by the
    rules, or failed."""
    generated: int = 0
    """Candidates made."""
    flagged: int = 0
    """Of those, flagged by the pre-screen (kept, for the annotators to look at)."""
    declined: int = 0
    """Items a rule could not apply to (no number to change, no entity to swap, ...)."""
    failed: int = 0
    """LLM calls that gave no usable candidate."""
    reasons: Counter = field(default_factory=Counter)
    """Why items were declined or calls failed, with their counts."""


@dataclass
class PerturbResult:
    """The candidates made, the tally per category, and the LLM engine's calls, tokens and
    cost."""
    candidates: list[Instance]
    """The candidates made, unvetted."""
    tally: dict[str, CategoryTally]
    """Per category, what was made, flagged, declined or failed."""
    skipped_pairs: int
    """Item × category pairs of another ability, not attempted."""
    llm: RunTotals | None = None
    """Calls, tokens and cost of the LLM engine this time."""


@dataclass(frozen=True)
class Job:
    """One candidate to make: a gold item, a category and which of `--n-per-item` it is."""
    item: GoldItem
    """The gold item to perturb."""
    category: str
    """The category to perturb it in."""
    variant: int
    """1..n."""

    @property
    def call_id(self) -> str:
        return f"{self.item.id}|{self.category}|{self.variant}"


def plan_jobs(items: list[GoldItem], config: PerturbConfig) -> tuple[list[Job], int]:
    """Every (item, category, variant) to make; categories follow the item's ability."""
    wanted = [get_category(c).name for c in config.categories]
    jobs, skipped = [], 0
    for item in items:
        for category in wanted or _categories_for(item.ability):
            owner = get_category(category).ability
            if owner is not None and owner.value != item.ability:
                skipped += 1  # a reasoning error makes no sense in a poem
                continue
            jobs += [Job(item, category, k) for k in range(1, config.n_per_item + 1)]
    return jobs, skipped


def _categories_for(ability: str) -> list[str]:
    from fbi.taxonomy import PERTURBATION_CATEGORIES

    return [c.name for c in PERTURBATION_CATEGORIES if c.ability.value == ability] + \
        [SCORE_INVARIANT]


def uses_rules(job: Job, engine: Engine) -> bool:
    """Whether the rule engine makes this job: always with `--engine rules`, under `auto` where
    a rule exists."""
    from fbi.perturb.rules import NEEDS_LLM, RULES

    if engine == "rules":
        return True
    return engine == "auto" and job.category in RULES and job.category not in NEEDS_LLM


class Perturber(Stage):
    """Runs a perturbation plan into a vetting queue file: the rules in process, the LLM
    engine's calls as a stage of the run harness (its spec and log beside the queue)."""

    kind = "perturb"
    title = "candidate edits of gold answers, one planted error each (fbi perturb)"
    spec_file = "QUEUE.run.json"
    rules_version = RULES_VERSION
    outputs = ("QUEUE.jsonl", "QUEUE.calls.jsonl", "QUEUE.calls.batches.jsonl")

    def __init__(self, items: list[GoldItem], config: PerturbConfig, output: str | Path,
                 source: str = ""):
        self.all_items = items  # what the input holds: its fingerprint is the dataset's
        items = items[:config.limit] if config.limit else items
        self.items, self.config, self.output, self.source = items, config, Path(output), source
        if self.output.suffix.lower() != ".jsonl":
            raise InputError(f"{self.output}: the vetting queue is a .jsonl file. "
                             "Fix: name the output QUEUE.jsonl")
        self.settings = config.model
        self.folder = StageFolder(self.spec_path, own_folder=False,
                                  lock_path=self.output.with_name(self.output.stem + ".lock"))
        self.templates = TemplateFolder("perturbations")
        self.jobs, self.skipped = self.plan(items)
        self.rule_jobs = [j for j in self.jobs if self.by_rule(j)]
        self.llm_jobs = [j for j in self.jobs if not self.by_rule(j)]
        self.result: PerturbResult | None = None
        """What the last run made (set when it finishes, interrupted or not)."""

    @property
    def calls_path(self) -> Path:
        return self.output.with_name(self.output.stem + ".calls.jsonl")

    @property
    def spec_path(self) -> Path:
        return self.output.with_name(self.output.stem + ".run.json")

    # -- what a kind of gold item changes (`fbi.perturb._trajectory_llm` for agents) ----

    def plan(self, items: list[GoldItem]) -> tuple[list[Job], int]:
        """Every job, and the item × category pairs left out."""
        return plan_jobs(items, self.config)

    def by_rule(self, job: Job) -> bool:
        """Whether the rule engine makes ``job`` (else the LLM engine)."""
        return uses_rules(job, self.config.engine)

    def template_of(self, category: str) -> str:
        """The LLM engine's template for ``category``."""
        return f"{category}.jinja"

    def template_variables(self, job: Job) -> dict:
        return {"category_name": get_category(job.category).display_name,
                "instruction": job.item.question, "answer": job.item.gold_answer,
                "variant": job.variant, "score_invariant": job.category == SCORE_INVARIANT}

    def parser(self, job: Job):
        """How a reply of ``job``'s call is read."""
        return read_perturbation

    def rule_edit(self, job: Job) -> tuple[str, str]:
        """The rule engine's (perturbed answer, rationale) for ``job``; raises Declined."""
        result = apply_rule(job.category, job.item, self.config.seed + job.variant - 1)
        return result.perturbed, result.rationale

    def candidate(self, job: Job, perturbed: str, rationale: str, generator: str,
                  version: str) -> Instance:
        """The candidate instance, pre-screened."""
        flags = prescreen(job.category, job.item.gold_answer, perturbed, rationale,
                          self.config.length_threshold)
        return Instance(
            id=f"{job.item.id}:{job.category}:{job.variant}", ability=job.item.ability,
            category=job.category, instruction=job.item.instruction,
            context=job.item.context, gold_answer=job.item.gold_answer,
            perturbed_answer=perturbed, rationale=rationale,
            provenance=Provenance(source=self.source or job.item.source,
                                  original_id=job.item.id, generator=generator,
                                  template_version=version, seed=self.config.seed),
            flags=tuple(flags))

    # -- the stage -------------------------------------------------------------------

    def request(self, job: Job) -> tuple[ModelRequest, str]:
        file_name = self.template_of(job.category)
        text = self.templates.render(file_name, **self.template_variables(job))
        version = str(self.templates.front_matter(file_name).get("version", ""))
        settings = self.settings
        tokens = settings.max_tokens or max(512, 2 * count_tokens(
            settings.model, [{"role": "user", "content": job.item.gold_answer}]) + 200)
        return ModelRequest(settings.model, (("user", text),), self.config.temperature,
                            tokens, RESPONSE_SCHEMA, settings.api_base, seed=settings.seed,
                            model_args=settings.model_args), version

    def calls(self) -> list[Call]:
        calls = []
        for job in self.llm_jobs:
            request, version = self.request(job)
            fields = {"item_id": job.item.id, "category": job.category,
                      "variant": job.variant, "model": request.model,
                      "template_version": version}
            calls.append(Call(job.call_id, request, PerturbationCall, fields, self.parser(job),
                              expected_reply_tokens=request.max_tokens // 2))
        return calls

    def identity(self) -> RunIdentity:
        categories = sorted({job.category for job in self.llm_jobs})
        settings = self.settings
        return RunIdentity(
            model=settings.model if self.llm_jobs else "",
            api_base=settings.endpoint if self.llm_jobs else None,
            prompts={c: PromptRecord(
                version=str(self.templates.front_matter(self.template_of(c)).get(
                    "version", "")),
                template_sha=self.templates.sha(self.template_of(c))) for c in categories},
            dataset=DatasetRecord(spec=self.source,
                                  fingerprint=_items_fingerprint(self.all_items),
                                  items=len(self.items)),
            selection=Selection(categories=list(self.config.categories),
                                engine=self.config.engine,
                                n_per_item=self.config.n_per_item, limit=self.config.limit),
            parameters=Parameters(temperature=self.config.temperature,
                                  max_tokens=settings.max_tokens, seed=self.config.seed,
                                  rules_version=self.rules_version,
                                  model_args=settings.recorded_model_args() or None),
            settings=RunSettings(concurrency=settings.concurrency,
                                 max_cost=settings.max_cost,
                                 length_threshold=self.config.length_threshold))

    def calls_model(self) -> bool:
        return bool(self.llm_jobs)  # a rules-only run is a run too: its spec, no client

    def phases(self) -> Iterator[Phase]:
        if self.llm_jobs:
            yield Phase(self.calls_path, PerturbationCall, self.calls())

    def probe_requests(self) -> list[ModelRequest]:
        return [call.request for call in self.calls()]

    def finish(self, totals: RunTotals) -> None:
        """Inside the lock: the rules' candidates and the LLM's replies (those the log
        holds, after an interruption too), pre-screened, tallied and written to the
        queue ([`result`][fbi.perturb.Perturber.result])."""
        tally: dict[str, CategoryTally] = {}
        candidates: list[Instance] = []
        seen: set[tuple[str, str, str]] = set()

        def keep(job: Job, perturbed: str, rationale: str, generator: str, version: str):
            key = (job.item.id, job.category, perturbed)
            counts = tally.setdefault(job.category, CategoryTally())
            if key in seen:  # two variants that came out the same
                counts.declined += 1
                counts.reasons["duplicate of another candidate"] += 1
                return
            seen.add(key)
            candidate = self.candidate(job, perturbed, rationale, generator, version)
            counts.generated += 1
            counts.flagged += bool(candidate.flags)
            candidates.append(candidate)

        for job in self.rule_jobs:
            try:
                perturbed, rationale = self.rule_edit(job)
            except Declined as declined:
                counts = tally.setdefault(job.category, CategoryTally())
                counts.declined += 1
                counts.reasons[str(declined)] += 1
                continue
            keep(job, perturbed, rationale, f"rules:{job.category}", self.rules_version)
        records = read_log(self.calls_path, PerturbationCall).latest() if self.llm_jobs \
            else {}
        for job in self.llm_jobs:
            call = records.get(job.call_id)
            if call is None:  # not made (interrupted, stopped, in a batch)
                continue
            if call.status != "ok" or not call.perturbed_answer:
                counts = tally.setdefault(job.category, CategoryTally())
                counts.failed += 1
                counts.reasons[call.reason or "no answer"] += 1
                continue
            keep(job, call.perturbed_answer, call.rationale or "", f"llm:{call.model}",
                 call.template_version)
        order = {(i.id): n for n, i in enumerate(self.items)}
        candidates.sort(key=lambda c: (order.get(c.provenance.original_id, 0), c.id))
        write_dataset(candidates, self.output)
        self.result = PerturbResult(candidates, tally, self.skipped,
                                    totals if self.llm_jobs else None)


def _items_fingerprint(items: list[GoldItem]) -> str:
    import hashlib
    import json

    digest = hashlib.sha256()
    for item in sorted(items, key=lambda i: i.id):
        digest.update(json.dumps([item.id, item.ability, item.question, item.gold_answer],
                                 ensure_ascii=False).encode())
    return digest.hexdigest()


def parse_perturbation(text: str) -> tuple[str, str] | None:
    """(rationale, perturbed answer) from a reply, or None when it has neither."""
    data = json_object_in(text) or {}
    answer, rationale = data.get("perturbed_answer"), data.get("rationale", "")
    if not isinstance(answer, str) or not answer.strip() or not isinstance(rationale, str):
        return None
    return rationale, answer


def read_perturbation(responses: list[ModelResponse]) -> Parsed:
    """A perturbation call's record fields from its replies (the ``parse`` of its
    `Call`)."""
    parsed = parse_perturbation(responses[0].text)
    if parsed is None:
        return Parsed("unparseable", reason="no JSON with rationale and perturbed_answer")
    return Parsed("ok", {"rationale": parsed[0], "perturbed_answer": parsed[1]})
