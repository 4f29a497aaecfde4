"""The FBI judging protocol: which calls to make for each instance, and running them.

* single-answer strategies score the gold and the perturbed answer in separate calls;
* pairwise strategies compare the pair twice, gold first and perturbed first, and map
  the slot verdict (A / B) back to gold / perturbed;
* the reference-guided strategy scores the perturbed answer with the gold as reference.

Each call becomes one [`Judgment`][fbi.records.Judgment] in ``judgments.jsonl``; ``run.json``
records what was asked. Running the same evaluation again resumes it.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from fbi.datasets import Dataset, write_dataset
from fbi.judge._config import PROTOCOL_VERSIONS, EvaluationConfig
from fbi.judge._kinds import Parser, default_strategies, judge_kind
from fbi.judge._parsing import PARSER_VERSION
from fbi.judge._strategies import EXPLANATION_MAX_CHARS, Strategy, StrategyRegistry
from fbi.logs import AppendLog, read_log
from fbi.providers import (
    ModelClient,
    ModelRequest,
    ModelResponse,
)
from fbi.records import INSTANCE_SCHEMA_VERSION, JUDGMENT_SCHEMA_VERSION, Instance, Judgment
from fbi.redaction import public_url
from fbi.run_spec import (
    RUN_SCHEMA_VERSION,
    DatasetRecord,
    Parameters,
    PromptRecord,
    RunIdentity,
    RunSettings,
    Selection,
)
from fbi.runs import (
    BatchOptions,
    Call,
    DryRun,
    Parsed,
    Phase,
    Progress,
    RunTotals,
    Stage,
    StageFolder,
    check_folder,
    dry_run,
    finished_ids,
    run_stage,
    sampled_dry_run,
    stopped,
)
from fbi.trajectories import rendered_steps

#: Planned calls the preflight looks at: when the first this many calls still to make are
#: all in the response cache, the run is taken as a cached re-run and the probe call is
#: skipped (looking at every call would render every prompt twice).
PREFLIGHT_CALLS = 256


def prompt_records(strategies: Iterable[Strategy], config: EvaluationConfig
                   ) -> dict[str, PromptRecord]:
    """What a run spec records of each strategy's template: its identity, and the ranges
    the judge's kind asks for (none for a pairwise or reward strategy)."""
    kind = judge_kind(config.judge)

    def asked(strategy: Strategy, axis: str) -> list[int] | None:
        asked = kind.score_range(strategy, axis, config)
        return None if asked is None else list(asked)

    return {s.name: PromptRecord(
        version=s.version, display_name=s.meta.display_name, paradigm=s.paradigm,
        origin=s.origin, template_sha=s.source_sha, score_range=asked(s, ""),
        axis_score_ranges={} if config.score_range else
        {axis: ranged for axis in s.meta.axis_score_ranges
         if (ranged := asked(s, axis)) is not None})
        for s in strategies}


def recorded_explanation_chars(parameters: Parameters) -> int:
    """The explanation cap a run used, from its run.json ``parameters``; runs written
    before the cap was an option all used 600 characters."""
    return int(parameters.explanation_chars or EXPLANATION_MAX_CHARS)


def echoes_of(instance: Instance | None) -> tuple[str, ...]:
    """The texts under evaluation: never to be read as the judge's verdict."""
    if instance is None:
        return ()
    return (instance.gold_answer, instance.perturbed_answer, instance.instruction,
            *(content for _, content in instance.context))


def call_parser(kind, paradigm: str, role: str, score_range: tuple[int, int] | None,
                instance: Instance | None) -> Parser:
    """How one call's replies are read: the judge kind's parser, never reading a verdict
    from the texts under evaluation; a step-level verdict (the first wrong step) must
    name a step of the trajectory the judge was shown, or the reply is unreadable."""
    parse = kind.parser(paradigm, role, score_range, echoes_of(instance))
    steps = len(rendered_steps(instance.perturbed_answer)) \
        if paradigm == "step" and instance is not None else 0
    if not steps:
        return parse

    def within_the_trajectory(responses: list[ModelResponse]) -> Parsed:
        parsed = parse(responses)
        named = parsed.fields.get("score")
        if parsed.status == "ok" and isinstance(named, int | float) and named > steps:
            return Parsed("unparseable", {**parsed.fields, "score": None},
                          f"names step {named:g} of a trajectory of {steps} steps")
        return parsed

    return within_the_trajectory


def plan_calls(
    instances: Iterable[Instance],
    strategies: list[Strategy],
    registry: StrategyRegistry,
    config: EvaluationConfig,
) -> Iterator[Call]:
    """Every call the protocol asks for, in a stable order, each rendered as it is taken
    (a run of 50,000 calls never holds 50,000 prompts). How a call is asked and read is
    the judge's kind's ([`judge_kind`][fbi.judge.judge_kind])."""
    kind = judge_kind(config.judge)
    for strategy in strategies:
        schemas: dict[tuple[int, int] | None, dict | None] = {}
        for instance in instances:
            score_range = kind.score_range(strategy, instance.ability.axis, config)
            if score_range not in schemas:
                schemas[score_range] = kind.schema(strategy, score_range, config)
            for role, variables, sample in _sampled(kind.roles(strategy, instance),
                                                    config.samples):
                render = functools.partial(kind.request, registry, strategy, instance,
                                           variables, sample, score_range,
                                           schemas[score_range], config)
                fields = {
                    "instance_id": instance.id, "ability": instance.ability,
                    "category": instance.category, "strategy": strategy.name,
                    "strategy_version": strategy.version, "paradigm": strategy.paradigm,
                    "role": role, "judge": config.judge, "score_range": score_range,
                    "parser_version": PARSER_VERSION, "sample": sample}
                yield Call(
                    f"{instance.id}|{strategy.name}|{role}" + (f"|s{sample}" if sample else ""),
                    render, Judgment, fields,
                    call_parser(kind, strategy.paradigm, role, score_range, instance),
                    repair=kind.repair(registry, strategy, score_range),
                    repairs=config.repair,
                    expected_reply_tokens=kind.expected_reply_tokens(strategy))


def _sampled(roles, samples: int):
    """(role, variables, sample) for every sample of every role; the first sample keeps
    the call ids and cache keys of a run without --samples."""
    for role, variables in roles:
        for sample in range(samples):
            yield role, dict(variables), sample


def reparse(judgment: Judgment, instance: Instance | None) -> Judgment:
    """The judgment with its stored replies read by the current parser (no model call).

    Everything needed comes from the record itself (paradigm, role, score range) and the
    instance (the texts a verdict must not be taken from), so it works for strategies
    the current run did not plan.
    """
    if judgment.raw_output is None or judgment.status == "error":
        return judgment
    # (the judge's kind reads it, told by the model string the judgment records)
    parse = call_parser(judge_kind(judgment.judge), judgment.paradigm, judgment.role,
                        judgment.score_range, instance)
    texts = [judgment.raw_output, *judgment.repair_outputs]
    parsed = parse([ModelResponse(text=t) for t in texts])
    update = {**parsed.fields, "status": parsed.status, "reason": parsed.reason,
              "parser_version": PARSER_VERSION}
    if parsed.fields.get("score") != judgment.score:
        # the token log-probabilities are not stored: the weighting belonged to the old
        # reading of the score, so it goes with it
        update.update(expected_score=None, score_probabilities=None, score_mass=None)
    return judgment.model_copy(update=update)


# ------------------------------------------------------------------ a whole run

#: A dry run renders every prompt up to this many planned calls, a sample beyond.
DRY_RUN_EXACT_CALLS = 20_000
#: Instances a larger dry run renders under each strategy, and the seed that picks them.
DRY_RUN_SAMPLE = 400
DRY_RUN_SEED = 0

#: What a run writes in its folder besides run.json (``fbi report`` adds its own).
RUN_FILES = ("instances.jsonl", "judgments.jsonl", "judgments.batches.jsonl")


class Evaluation(Stage):
    """A planned evaluation, as a stage of the run harness: the calls, where they go,
    and how to run or price them."""

    kind = "evaluate"
    title = "a judge's verdicts on a dataset's instances, per strategy (fbi evaluate)"
    outputs = RUN_FILES
    judge_run = True
    reported = True

    def __init__(self, dataset: Dataset, config: EvaluationConfig, output_dir: str | Path,
                 force: bool = False):
        self.dataset, self.config = dataset, config
        self.output_dir = Path(output_dir)
        #: Write into an ``output_dir`` that holds files fbi did not write (never over them).
        self.force = force
        self.settings = config.model
        self.folder = StageFolder(self.output_dir / "run.json", force=force)
        self.registry = StrategyRegistry(config.prompts_dir)
        self.judge_kind = judge_kind(config.judge)
        self.strategies: list[Strategy] = self.registry.resolve(config.strategies,
                                                                self.judge_kind)
        self.judge_kind.check(config.judge, self.strategies, config.repair)

    def calls(self) -> Iterator[Call]:
        """The planned calls, rendered one at a time as they are taken."""
        return plan_calls(self.dataset.instances, self.strategies, self.registry,
                          self.config)

    @property
    def call_count(self) -> int:
        """How many calls [`calls`][fbi.judge.Evaluation.calls] yields, without rendering them."""
        return len(self.dataset) * sum(
            self.judge_kind.calls_per_instance(s, self.config.samples)
            for s in self.strategies)

    @property
    def judgments_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    def identity(self) -> RunIdentity:
        config, model = self.config, self.config.model
        return RunIdentity(
            label=config.label, model=config.judge, api_base=model.endpoint,
            prompts=prompt_records(self.strategies, config),
            dataset=DatasetRecord(
                spec=self.dataset.spec,
                fingerprint=self.dataset.source_fingerprint or self.dataset.fingerprint,
                instances=len(self.dataset), rows_read=self.dataset.rows_read),
            selection=Selection(**self.dataset.selection),
            # (the optional ones only when set, so folders written before still match)
            parameters=Parameters(
                temperature=config.temperature, max_tokens=config.reply_tokens,
                explanation_chars=config.explanation_limit
                if config.explanation_limit != EXPLANATION_MAX_CHARS else None,
                seed=model.seed, samples=config.samples if config.samples > 1 else None,
                logprobs=config.logprobs or None,
                model_args=model.recorded_model_args() or None,
                system_prompt_sha256=hashlib.sha256(config.system_prompt.encode()).hexdigest()
                if config.system_prompt else None,
                protocol=config.protocol if config.protocol != "fbi" else None,
                protocol_version=PROTOCOL_VERSIONS[config.protocol]
                if config.protocol != "fbi" else None),
            settings=RunSettings(
                timeout_s=model.timeout_s, retries=model.retries,
                concurrency=model.concurrency, repair=config.repair, max_cost=model.max_cost,
                # the servers calls were spread over; a setting, not identity: a resumed
                # run may use another pool of the same model
                api_pool=[public_url(b) for b in model.api_pool] or None,
                # the --score-range asked for (its effect is in `prompts`), for --resume
                score_range=list(config.score_range) if config.score_range else None),
            record_versions={"instance": INSTANCE_SCHEMA_VERSION,
                             "judgment": JUDGMENT_SCHEMA_VERSION, "run": RUN_SCHEMA_VERSION},
            parser_version=PARSER_VERSION)

    def phases(self) -> Iterator[Phase]:
        # The instances judged, beside the judgments, so reports need nothing else.
        write_dataset(self.dataset.instances, self.output_dir / "instances.jsonl")
        stale: list[str] = []  # calls read by an older parser

        def note_stale(judgment: Judgment) -> None:
            if judgment.parser_version != PARSER_VERSION:
                stale.append(judgment.call_id)

        yield Phase(self.judgments_path, Judgment, self.calls(), total=self.call_count,
                    keep_records=False, visit=note_stale,
                    prepare=lambda log: self._reparse(log) if stale else None)

    def probe_requests(self) -> Iterable[ModelRequest]:
        return (c.request for c in islice(self._pending_calls(), PREFLIGHT_CALLS))

    def examples(self) -> dict[str, Call]:
        """The first planned call of each strategy: what --dry-run shows rendered."""
        if not self.dataset.instances:
            return {}
        first_instance = self.dataset.instances[:1]
        return {strategy.name: next(plan_calls(first_instance, [strategy], self.registry,
                                               self.config))
                for strategy in self.strategies}

    def dry_run(self, client: ModelClient, exact_up_to: int | None = None,
                sample_size: int | None = None) -> DryRun:
        """Calls still to make, and their estimated tokens and cost; writes nothing. A folder
        holding another run is refused here too.

        Up to ``exact_up_to`` (`DRY_RUN_EXACT_CALLS`) planned calls every prompt is
        rendered and counted. Past it, the same seeded sample of ``sample_size``
        (`DRY_RUN_SAMPLE`) instances is rendered under every strategy and the totals
        are estimated from it (``DryRun.sampled`` and ``prompt_tokens_margin`` say so): a
        dry run of 200,000 instances × 11 strategies would otherwise render 4.2 million
        prompts."""
        check_folder(self)
        finished = finished_ids(self.judgments_path, Judgment)
        exact_up_to = DRY_RUN_EXACT_CALLS if exact_up_to is None else exact_up_to
        sample_size = DRY_RUN_SAMPLE if sample_size is None else sample_size
        instances = self.dataset.instances
        if self.call_count <= exact_up_to or sample_size >= len(instances):
            return dry_run(self.calls(), client, finished)
        chosen = sorted(random.Random(DRY_RUN_SEED).sample(range(len(instances)),
                                                           sample_size))
        return sampled_dry_run(
            ((len(instances), (list(plan_calls([instances[i]], [strategy], self.registry,
                                                self.config)) for i in chosen))
             for strategy in self.strategies), client, finished)

    def run(self, client: ModelClient, progress: Progress | None = None,
            batch: BatchOptions | None = None) -> RunTotals:
        """Run (or resume) the evaluation; returns the totals of this invocation.

        A budget stop (``stopped_by_budget``) and an interruption (``interrupted``) are
        reported in the totals, with everything finished saved. With ``batch``, the calls go
        through the provider's batch API ([`fbi.runs.BatchRunner`][fbi.runs.BatchRunner]);
        calls still at the provider are counted in ``in_batches``.
        """
        return run_stage(self, client, progress, batch)

    def _pending_calls(self) -> Iterator[Call]:
        """The planned calls this folder has not finished (read only)."""
        finished = set(finished_ids(self.judgments_path, Judgment))
        return (c for c in self.calls() if c.call_id not in finished)

    def _reparse(self, log: AppendLog) -> None:
        """A newer parser reads the stored replies again, at no cost."""
        instances = {i.id: i for i in self.dataset.instances}
        log.rewrite(reparse(j, instances.get(j.instance_id))
                    if j.parser_version != PARSER_VERSION else j
                    for j in read_log(self.judgments_path, Judgment).records)


@dataclass(frozen=True)
class EvaluationResult:
    """What [`fbi.evaluate`][fbi.judge.evaluate] did: the evaluation (its plan, folder
    and configuration) and the totals of this invocation."""

    evaluation: Evaluation
    """The evaluation run: its dataset, configuration and strategies."""
    totals: RunTotals
    """Calls made, answered from the cache, failed, in batches; stopped or not."""

    @property
    def output(self) -> Path:
        """The run folder (``run.json``, ``instances.jsonl``, ``judgments.jsonl``)."""
        return self.evaluation.output_dir

    @property
    def finished(self) -> bool:
        """Every call answered: nothing failed, stopped or still in a batch."""
        return not (stopped(self.totals) or self.totals.failed or self.totals.in_batches)

    def judgments(self) -> list[Judgment]:
        """The run's judgments as stored (every invocation's, the latest of each call)."""
        from fbi.judge._read import read_verdicts

        return read_verdicts(self.output)


def default_output(judge: str, dataset: str) -> Path:
    """Where a run goes when no folder is named: ``fbi-runs/JUDGE__DATASET``."""
    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(text).name or text).strip("-") or "run"
    return Path("fbi-runs") / f"{slug(judge)}__{slug(dataset)}"


def evaluate(judge: str | None = None, dataset: str | Dataset = "quick", *,
             strategies: Iterable[str] = (), config: EvaluationConfig | None = None,
             output: str | Path | None = None, client: ModelClient | None = None,
             progress: Progress | None = None, batch: BatchOptions | None = None,
             force: bool = False) -> EvaluationResult:
    """Run a judge over a dataset with the FBI strategies and record every judgment
    (what ``fbi evaluate`` does; the command is this call under its options).

    ``judge`` and ``strategies`` make the configuration when ``config`` is not given
    (the embedded judge and its kind's default strategies when neither is); give one or
    the other. ``dataset``: a name or path as ``--dataset`` takes it (``quick``,
    ``sample``, a file, ``hf:ORG/NAME``), or a [`Dataset`][fbi.Dataset] already chosen.
    ``output`` defaults to ``fbi-runs/JUDGE__DATASET``; a folder holding this run
    resumes it. ``client`` defaults to the configuration's, with the response cache
    (``$FBI_CACHE``). The same guarantees as the command: a folder holding files fbi
    did not write is refused unless ``force``; a stop leaves a resumable folder."""
    from fbi.cache import ResponseCache
    from fbi.datasets import load_dataset

    if config is None:
        from fbi.providers import LOCAL_JUDGE
        from fbi.settings import ModelSettings

        judge = judge or LOCAL_JUDGE
        config = EvaluationConfig(model=ModelSettings(model=judge), strategies=tuple(
            strategies) or default_strategies(judge))
    elif (judge is not None and judge != config.judge) or tuple(strategies):
        raise ValueError("give judge and strategies, or a config: not both")
    chosen = load_dataset(dataset) if isinstance(dataset, str) else dataset
    evaluation = Evaluation(chosen, config, output or default_output(config.judge,
                                                                     chosen.spec), force)
    client = client or config.model.client(ResponseCache())
    return EvaluationResult(evaluation, evaluation.run(client, progress, batch))
