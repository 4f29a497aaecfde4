"""The FBI judging protocol: which calls to make for each instance, and running them.

* single-answer strategies score the gold and the perturbed answer in separate calls;
* pairwise strategies compare the pair twice, gold first and perturbed first, and map
  the slot verdict (A / B) back to gold / perturbed;
* the reference-guided strategy scores the perturbed answer with the gold as reference.

Each call becomes one [`Judgment`][fbi.records.Judgment] in ``judgments.jsonl``; ``run.json``
records what was asked. Running the same evaluation again resumes it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from fbi.errors import InputError
from fbi.judge._parsing import PARSER_VERSION, ParsedReply, parse_reply
from fbi.judge._reward import (
    DEFAULT_STRATEGIES,
    check_reward_strategies,
    reward_parser,
)
from fbi.judge._strategies import EXPLANATION_MAX_CHARS, Strategy, StrategyRegistry
from fbi.judge._weighting import weighted_score
from fbi.llm import (
    LOCAL_JUDGE,
    ModelClient,
    ModelRequest,
    ModelResponse,
    litellm_version,
    supports_logprobs,
)
from fbi.logs import AppendLog, read_log
from fbi.records import INSTANCE_SCHEMA_VERSION, JUDGMENT_SCHEMA_VERSION, Instance, Judgment
from fbi.redaction import public_url
from fbi.reward import is_reward_model
from fbi.run_spec import (
    RUN_SCHEMA_VERSION,
    DatasetRecord,
    Parameters,
    PromptRecord,
    RunSettings,
    RunSpec,
    Selection,
    TotalsRecord,
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
    now,
    run_stage,
    sampled_dry_run,
)
from fbi.settings import ModelSettings
from fbi.sources import Dataset, write_dataset
from fbi.thinking import copied_from, split_thinking

#: The request protocols (--protocol) and the system message each sends: fbi's sends
#: none; the FBI authors sent "You are a helpful assistant." (llm_evaluators/prompts).
PROTOCOLS: dict[str, str | None] = {"fbi": None, "paper": "You are a helpful assistant."}
#: What each protocol's requests are, by version: a folder resumed under a later version
#: of its protocol is refused, since its prompts would differ call by call. Paper 2
#: (issue 38): the authors' max_tokens (1000), rubric levels 0–2, output-format preamble
#: and schema titles and descriptions, and "[Reference Answer]".
PROTOCOL_VERSIONS = {"fbi": 1, "paper": 2}
#: The reply limit the FBI authors' requests set.
PAPER_MAX_TOKENS = 1000
# What a reply usually costs in tokens, for --dry-run estimates.
EXPECTED_REPLY_TOKENS = {True: 250, False: 12}
#: The embedded judge's explanation cap. SmolLM2-135M fills whatever room it is given
#: with repeated sentences (139 reply tokens on average at 600 characters, 3 of 144 replies
#: cut before the score); one sentence keeps "explanation, then score" and halves the
#: main job's time, with the same detection on the built-in sample (benchmarks/RESULTS.md).
EMBEDDED_EXPLANATION_CHARS = 120
#: Planned calls the preflight looks at: when the first this many calls still to make are
#: all in the response cache, the run is taken as a cached re-run and the probe call is
#: skipped (looking at every call would render every prompt twice).
PREFLIGHT_CALLS = 256
#: The widest score range: 0-100 (the judge's JSON schema enumerates every score).
MAX_SCORE_RANGE_WIDTH = 100
#: The most times one call may be asked (--samples).
MAX_SAMPLES = 100
# Who sits in slot A and slot B, by the role of a pairwise call.
SLOTS = {"gold-first": ("gold", "perturbed"), "perturbed-first": ("perturbed", "gold")}


@dataclass(frozen=True)
class EvaluationConfig:
    """What `fbi evaluate` asks of a judge: its model settings, the strategies, and how
    their prompts are asked. Checked when made: an InputError names what cannot be
    asked (an empty or too wide score range, --logprobs of a provider without them, an
    unknown protocol)."""

    model: ModelSettings = field(default_factory=lambda: ModelSettings(model=LOCAL_JUDGE))
    """The judge: its model, server or pool, sampling, concurrency and budget."""
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    """The strategies to run, by name (built-in or in ``prompts_dir``)."""
    score_range: tuple[int, int] | None = None
    """Overrides every scored strategy's range."""
    repair: int = 0
    """Follow-ups asking for just the verdict when a reply is unreadable."""
    prompts_dir: Path | None = None
    """A folder of the user's own strategy templates (--prompts)."""
    label: str | None = None
    """The judge's name in reports (--label); the model string when None."""
    system_prompt: str | None = None
    """Sent as the system message of every call."""
    samples: int = 1
    """Ask every call this many times (repeatability; see --samples)."""
    logprobs: int = 0
    """--logprobs: ask scored calls for this many top token log-probabilities per token, for
    the probability-weighted (G-Eval) score; 0: none."""
    explanation_chars: int | None = None
    """The explanation's length cap in the reply's JSON schema; None: 120 characters for the
    embedded judge, 600 otherwise."""
    protocol: Literal["fbi", "paper"] = "fbi"
    """What is sent: ``fbi`` (fbi's prompts' reply format, asked also as a JSON schema in
    ``response_format``) or ``paper`` (what the FBI authors sent: their system message,
    their reply schema described in the prompt, their field names and section markers, no
    ``response_format``). See docs/concepts/strategies.md."""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise InputError(f"protocol {self.protocol!r}: give one of {', '.join(PROTOCOLS)}")
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise InputError(f"samples {self.samples}: give 1 to {MAX_SAMPLES}")
        if not 0 <= self.repair <= 10:
            raise InputError(f"repair {self.repair}: give 0 to 10")
        if self.explanation_chars is not None and not 1 <= self.explanation_chars <= 100_000:
            raise InputError(f"explanation_chars {self.explanation_chars}: give 1 to 100000")
        if self.score_range is not None:
            low, high = self.score_range
            if low >= high:
                raise InputError(f"score range {low}-{high} is empty. Fix: give A-B with A < B")
            if high - low > MAX_SCORE_RANGE_WIDTH or max(abs(low), abs(high)) > 10 ** 6:
                raise InputError(
                    f"score range {low}-{high} is too wide: a scale has at most "
                    f"{MAX_SCORE_RANGE_WIDTH + 1} points (the schema lists each one). Fix: "
                    "give a range such as 1-10 or 0-100")
        if self.logprobs and supports_logprobs(self.judge, self.model.api_base) is False:
            raise InputError(
                f"--logprobs: litellm passes no token log-probabilities to {self.judge}'s "
                "provider. Fix: drop --logprobs, or judge with a provider that returns "
                "them (openai, azure, hosted_vllm, together_ai, the embedded local judge)")

    @property
    def judge(self) -> str:
        """The judge model."""
        return self.model.model

    @property
    def temperature(self) -> float:
        return self.model.temperature if self.model.temperature is not None else 0.0

    @property
    def system_message(self) -> str | None:
        """The system message of every call: the user's, else the protocol's."""
        return self.system_prompt or PROTOCOLS[self.protocol]

    @property
    def reply_tokens(self) -> int:
        """--max-tokens, else 400 for the embedded judge, else what the protocol sends:
        fbi's 1024, or the 1000 the FBI authors' requests set (``llm_evaluators``)."""
        if self.model.max_tokens:
            return self.model.max_tokens
        if self.judge.startswith("local/"):
            return 400
        return PAPER_MAX_TOKENS if self.protocol == "paper" else 1024

    @property
    def explanation_limit(self) -> int:
        if self.explanation_chars:
            return self.explanation_chars
        return EMBEDDED_EXPLANATION_CHARS if self.judge.startswith("local/") \
            else EXPLANATION_MAX_CHARS


def prompt_records(strategies: Iterable[Strategy], score_range: tuple[int, int] | None,
                   protocol: str) -> dict[str, PromptRecord]:
    """What a run spec records of each strategy's template: its identity and ranges."""
    return {s.name: PromptRecord(
        version=s.version, display_name=s.meta.display_name, paradigm=s.paradigm,
        origin=s.origin, template_sha=s.source_sha,
        score_range=None if s.paradigm == "pairwise" or s.meta.reward
        else list(score_range or s.meta.base_range(protocol)),
        axis_score_ranges={} if score_range else
        {axis: list(r) for axis, r in s.meta.axis_score_ranges.items()})
        for s in strategies}


def recorded_explanation_chars(parameters: Parameters) -> int:
    """The explanation cap a run used, from its run.json ``parameters``; runs written
    before the cap was an option all used 600 characters."""
    return int(parameters.explanation_chars or EXPLANATION_MAX_CHARS)


def judge_parser(paradigm: str, role: str, score_range: tuple[int, int] | None,
                 echoes: tuple[str, ...], structured: bool = True):
    """How the replies of one judge call become its verdict fields (``structured``: the
    judge was asked for JSON, so its reply is its first object; see
    [`parse_reply`][fbi.judge.parse_reply]).

    The first reply is read; if it is unreadable, each ``--repair`` reply in turn, with
    the explanation kept from the first. A pairwise slot verdict (A / B) is mapped to
    gold / perturbed by the call's ``role``, so stored replies can be read again without
    the plan that made them.
    """
    field_name = "verdict" if paradigm == "pairwise" else "score"
    if paradigm == "single" and score_range is None:
        return reward_parser()

    def read(texts: list[str], finish_reason: str | None = None) -> ParsedReply:
        parsed = parse_reply(texts[0], field_name, score_range, echoes, finish_reason,
                             structured)
        for repaired in texts[1:] if parsed.status != "ok" else []:
            again = parse_reply(repaired, field_name, score_range, echoes,
                                structured=structured)
            if again.status == "ok":  # (``at`` is dropped: it points into a follow-up)
                return dataclasses.replace(
                    again, explanation=parsed.explanation or texts[0].strip() or None,
                    at=None)
        return parsed

    quoted = copied_from(echoes)

    def own_text(response: ModelResponse) -> tuple[str, str | None]:
        """The reply outside the judge's thinking, however it is marked: a closing
        marker copied from an answer closes nothing (`fbi.thinking`)."""
        raw = response.content if response.content is not None else response.text
        reply, thinking = split_thinking(raw, quoted, response.finish_reason != "length")
        return (response.text, response.reasoning) if thinking is None else \
            (reply, thinking)

    def parse(responses: list[ModelResponse]) -> Parsed:
        if responses[0].logprobs_problem is not None:  # (asked for, and a server lied)
            return Parsed("unparseable", reason="log-probabilities unreadable: "
                          f"{responses[0].logprobs_problem}")
        own = [own_text(r) for r in responses]
        texts = [text for text, _ in own]
        parsed = read(texts, responses[0].finish_reason)
        verdict = None
        if parsed.verdict is not None and role in SLOTS:
            a, b = SLOTS[role]
            verdict = {"A": a, "B": b}.get(parsed.verdict, parsed.verdict)
        fields = {"score": parsed.score, "slot_verdict": parsed.verdict, "verdict": verdict,
                  "explanation": parsed.explanation}
        tokens = responses[0].token_logprobs
        if tokens and parsed.score is not None and parsed.at is not None and score_range:
            weighted = weighted_score(texts[0], parsed.score, parsed.at, score_range, tokens)
            if weighted is not None:
                fields.update(expected_score=round(weighted.expected, 6),
                              score_probabilities={v: round(p, 6) for v, p in
                                                   weighted.probabilities.items()},
                              score_mass=round(weighted.mass, 6))
        resplit = texts[0] != responses[0].text
        return Parsed(parsed.status, fields, parsed.reason,
                      reply=texts[0] if resplit else None,
                      reasoning=own[0][1] if resplit else None)

    return parse


def echoes_of(instance: Instance | None) -> tuple[str, ...]:
    """The texts under evaluation: never to be read as the judge's verdict."""
    if instance is None:
        return ()
    return (instance.gold_answer, instance.perturbed_answer, instance.instruction,
            *(content for _, content in instance.context))


def plan_calls(
    instances: Iterable[Instance],
    strategies: list[Strategy],
    registry: StrategyRegistry,
    config: EvaluationConfig,
) -> Iterator[Call]:
    """Every call the protocol asks for, in a stable order, each rendered as it is taken
    (a run of 50,000 calls never holds 50,000 prompts)."""
    for strategy in strategies:
        schemas: dict[tuple[int, int] | None, dict] = {}
        for instance in instances:
            score_range = None
            if strategy.paradigm != "pairwise" and not strategy.meta.reward:
                score_range = config.score_range or \
                    strategy.meta.range_for(instance.ability.axis, config.protocol)
            if score_range not in schemas:  # (the paper's protocol sends none; a reward
                # model takes no schema)
                schemas[score_range] = None if config.protocol == "paper" or \
                    strategy.meta.reward else \
                    strategy.response_schema(score_range, config.explanation_limit)
            for role, variables, sample in _sampled(_roles(strategy, instance),
                                                    config.samples):
                render = functools.partial(_judge_request, registry, strategy, instance,
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
                    # (every judge prompt, under either protocol, asks for a JSON object)
                    judge_parser(strategy.paradigm, role, score_range, echoes_of(instance)),
                    repair=_repair(registry, strategy, score_range),
                    repairs=config.repair,
                    expected_reply_tokens=0 if strategy.meta.reward else
                    EXPECTED_REPLY_TOKENS[strategy.meta.explanation])


def _judge_request(registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                   variables: dict[str, Any], sample: int,
                   score_range: tuple[int, int] | None, schema: dict | None,
                   config: EvaluationConfig) -> ModelRequest:
    """The request of one planned call, its prompt rendered (when the call is made)."""
    if strategy.meta.reward:  # the conversation itself, the answer its last turn
        return ModelRequest(
            model=config.judge, api_base=config.model.api_base, sample=sample,
            messages=(*instance.context, ("user", instance.instruction),
                      ("assistant", variables["answer"])),
            model_args=config.model.model_args)
    if score_range is not None:
        variables = {**variables, "score_min": score_range[0], "score_max": score_range[1]}
    text = registry.render(strategy, instruction=instance.question,
                           axis=instance.ability.axis, ability=instance.ability.value,
                           protocol=config.protocol, **variables)
    system = (("system", config.system_message),) if config.system_message else ()
    return ModelRequest(
        model=config.judge, messages=(*system, ("user", text)),
        temperature=config.temperature, max_tokens=config.reply_tokens,
        response_schema=schema, api_base=config.model.api_base, seed=config.model.seed,
        model_args=config.model.model_args, sample=sample,
        top_logprobs=config.logprobs if score_range is not None else 0)


def calls_per_instance(strategy: Strategy, samples: int = 1) -> int:
    """How many calls [`plan_calls`][fbi.judge.plan_calls] makes of one instance for
    ``strategy``: both answers or both slot orders, one reference-guided call; each
    ``samples`` times."""
    return (1 if strategy.paradigm == "reference" else 2) * samples


def _sampled(roles, samples: int):
    """(role, variables, sample) for every sample of every role; the first sample keeps
    the call ids and cache keys of a run without --samples."""
    for role, variables in roles:
        for sample in range(samples):
            yield role, dict(variables), sample


def _roles(strategy: Strategy, instance: Instance):
    gold, perturbed = instance.gold_answer, instance.perturbed_answer
    if strategy.paradigm == "single":
        yield "gold", {"answer": gold}
        yield "perturbed", {"answer": perturbed}
    elif strategy.paradigm == "pairwise":
        yield "gold-first", {"answer_a": gold, "answer_b": perturbed}
        yield "perturbed-first", {"answer_a": perturbed, "answer_b": gold}
    else:
        yield "perturbed", {"answer": perturbed, "reference": gold}


def _repair(registry: StrategyRegistry, strategy: Strategy,
            score_range: tuple[int, int] | None):
    """A follow-up that asks for just the verdict, given the request and its unreadable
    reply."""
    field_name = strategy.verdict_field

    def follow_up(request: ModelRequest, reply: str) -> ModelRequest:
        low, high = score_range or (0, 0)
        ask = registry.render_template("_repair.jinja", field=field_name, score_min=low,
                                       score_max=high)
        schema = None
        if request.response_schema is not None:  # the same protocol as the first call
            schema = dict(strategy.response_schema(score_range))
            schema["properties"] = {field_name: schema["properties"][field_name]}
            schema["required"] = [field_name]
        return ModelRequest(
            model=request.model, messages=(*request.messages, ("assistant", reply),
                                           ("user", ask)),
            temperature=request.temperature, max_tokens=64, response_schema=schema,
            api_base=request.api_base, seed=request.seed, model_args=request.model_args,
            sample=request.sample)

    return follow_up


def reparse(judgment: Judgment, instance: Instance | None) -> Judgment:
    """The judgment with its stored replies read by the current parser (no model call).

    Everything needed comes from the record itself (paradigm, role, score range) and the
    instance (the texts a verdict must not be taken from), so it works for strategies
    the current run did not plan.
    """
    if judgment.raw_output is None or judgment.status == "error":
        return judgment
    # (every judge request fbi makes carries a JSON schema: its replies are structured)
    parse = judge_parser(judgment.paradigm, judgment.role, judgment.score_range,
                         echoes_of(instance), structured=True)
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

    def __init__(self, dataset: Dataset, config: EvaluationConfig, output_dir: str | Path,
                 force: bool = False):
        self.dataset, self.config = dataset, config
        self.output_dir = Path(output_dir)
        #: Write into an ``output_dir`` that holds files fbi did not write (never over them).
        self.force = force
        self.settings = config.model
        self.folder = StageFolder(self.output_dir / "run.json", force=force, writes=RUN_FILES)
        self.registry = StrategyRegistry(config.prompts_dir)
        self.strategies: list[Strategy] = self.registry.resolve(
            config.strategies, reward=is_reward_model(config.judge))
        check_reward_strategies(config.judge, self.strategies, config.repair)

    def calls(self) -> Iterator[Call]:
        """The planned calls, rendered one at a time as they are taken."""
        return plan_calls(self.dataset.instances, self.strategies, self.registry,
                          self.config)

    @property
    def call_count(self) -> int:
        """How many calls [`calls`][fbi.judge.Evaluation.calls] yields, without rendering them."""
        return len(self.dataset) * sum(calls_per_instance(s, self.config.samples)
                                       for s in self.strategies)

    @property
    def judgments_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    def spec(self, totals: RunTotals | None = None) -> RunSpec:
        from fbi import __version__

        stamp, config, model = now(), self.config, self.config.model
        return RunSpec(
            kind="evaluate", label=config.label, fbi_version=__version__,
            litellm_version=litellm_version(), model=config.judge, api_base=model.endpoint,
            prompts=prompt_records(self.strategies, config.score_range, config.protocol),
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
            command=list(sys.argv),
            record_versions={"instance": INSTANCE_SCHEMA_VERSION,
                             "judgment": JUDGMENT_SCHEMA_VERSION, "run": RUN_SCHEMA_VERSION},
            parser_version=PARSER_VERSION, created_at=stamp, updated_at=stamp,
            totals=TotalsRecord() if totals is None else totals.record())

    def run_spec(self, totals: RunTotals | None = None) -> RunSpec:
        """The same as `spec` (its older name)."""
        return self.spec(totals)

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
