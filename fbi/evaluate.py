"""The FBI judging protocol: which calls to make for each instance, and running them.

* single-answer strategies score the gold and the perturbed answer in separate calls;
* pairwise strategies compare the pair twice, gold first and perturbed first, and map
  the slot verdict (A / B) back to gold / perturbed;
* the reference-guided strategy scores the perturbed answer with the gold as reference.

Each call becomes one :class:`~fbi.records.Judgment` in ``judgments.jsonl``; ``run.json``
records what was asked. Running the same evaluation again resumes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fbi.cache import ResponseCache
from fbi.errors import BudgetExceeded, InputError, ModelError
from fbi.llm import LOCAL_JUDGE, ModelClient, ModelRequest, count_tokens, estimate_cost
from fbi.parsing import PARSER_VERSION, parse_reply
from fbi.records import (
    INSTANCE_SCHEMA_VERSION,
    JUDGMENT_SCHEMA_VERSION,
    RUN_SCHEMA_VERSION,
    Instance,
    Judgment,
    RunSpec,
)
from fbi.runner import Progress, RecordLog, RunTotals, Task, run_tasks
from fbi.sources import Dataset, write_dataset
from fbi.strategies import Strategy, StrategyRegistry

DEFAULT_STRATEGIES = ("vanilla",)
# What a reply usually costs in tokens, for --dry-run and --max-cost estimates.
EXPECTED_REPLY_TOKENS = {True: 250, False: 12}


@dataclass(frozen=True)
class EvaluationConfig:
    judge: str = LOCAL_JUDGE
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    score_range: tuple[int, int] | None = None  # overrides every scored strategy's range
    temperature: float = 0.0
    max_tokens: int | None = None  # None: 400 for the embedded judge, 1024 otherwise
    api_base: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    repair: int = 0
    max_cost: float | None = None
    prompts_dir: Path | None = None

    @property
    def reply_tokens(self) -> int:
        if self.max_tokens:
            return self.max_tokens
        return 400 if self.judge.startswith("local/") else 1024


@dataclass(frozen=True)
class JudgeCall:
    """One planned call: an instance, a strategy and a role, rendered into a request."""

    call_id: str
    instance: Instance
    strategy: Strategy
    role: str
    request: ModelRequest
    score_range: tuple[int, int] | None
    echoes: tuple[str, ...]  # the texts under evaluation, never to be read as a verdict
    slot_roles: tuple[str, str] | None = None  # pairwise: who is in slot A, slot B

    @property
    def prompt_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.request.messages).encode()).hexdigest()


def plan_calls(
    instances: Iterable[Instance],
    strategies: list[Strategy],
    registry: StrategyRegistry,
    config: EvaluationConfig,
) -> list[JudgeCall]:
    """Every call the protocol asks for, in a stable order."""
    calls = []
    for strategy in strategies:
        score_range = None
        if strategy.paradigm != "pairwise":
            score_range = config.score_range or strategy.meta.score_range
        for instance in instances:
            for role, variables, slots in _roles(strategy, instance):
                if score_range is not None:
                    variables.update(score_min=score_range[0], score_max=score_range[1])
                text = registry.render(strategy, instruction=instance.instruction,
                                       axis=instance.ability.axis,
                                       ability=instance.ability.value, **variables)
                request = ModelRequest(
                    model=config.judge, messages=(("user", text),),
                    temperature=config.temperature, max_tokens=config.reply_tokens,
                    response_schema=strategy.response_schema(score_range),
                    api_base=config.api_base,
                )
                echoes = (instance.gold_answer, instance.perturbed_answer, instance.instruction)
                calls.append(JudgeCall(f"{instance.id}|{strategy.name}|{role}", instance,
                                       strategy, role, request, score_range, echoes, slots))
    return calls


def _roles(strategy: Strategy, instance: Instance):
    gold, perturbed = instance.gold_answer, instance.perturbed_answer
    if strategy.paradigm == "single":
        yield "gold", {"answer": gold}, None
        yield "perturbed", {"answer": perturbed}, None
    elif strategy.paradigm == "pairwise":
        yield "gold-first", {"answer_a": gold, "answer_b": perturbed}, ("gold", "perturbed")
        yield "perturbed-first", {"answer_a": perturbed, "answer_b": gold}, \
            ("perturbed", "gold")
    else:
        yield "perturbed", {"answer": perturbed, "reference": gold}, None


async def judge_call(
    call: JudgeCall, client: ModelClient, registry: StrategyRegistry, repair: int = 0
) -> Judgment:
    """Make one call (and up to ``repair`` follow-ups) and turn it into a Judgment."""
    record = {
        "call_id": call.call_id, "instance_id": call.instance.id,
        "ability": call.instance.ability, "category": call.instance.category,
        "strategy": call.strategy.name, "strategy_version": call.strategy.version,
        "paradigm": call.strategy.paradigm, "role": call.role, "judge": call.request.model,
        "score_range": call.score_range, "prompt_hash": call.prompt_hash,
        "parser_version": PARSER_VERSION,
    }
    field_name = call.strategy.verdict_field
    try:
        response = await client.complete(call.request)
    except ModelError as error:
        return Judgment(**record, status="error", reason=str(error))
    usage = [response]
    parsed = parse_reply(response.text, field_name, call.score_range, call.echoes,
                         response.finish_reason)
    repairs: list[str] = []
    for _ in range(repair if parsed.status == "unparseable" else 0):
        follow_up = _repair_request(call, registry, response.text, field_name)
        try:
            repaired = await client.complete(follow_up)
        except ModelError:
            break
        usage.append(repaired)
        repairs.append(repaired.text)
        again = parse_reply(repaired.text, field_name, call.score_range, call.echoes,
                            repaired.finish_reason)
        if again.status == "ok":
            parsed = dataclasses.replace(
                again, explanation=parsed.explanation or _explanation_of(response.text))
            break
    verdict = None
    if parsed.verdict is not None and call.slot_roles is not None:
        verdict = {"A": call.slot_roles[0], "B": call.slot_roles[1]}.get(
            parsed.verdict, parsed.verdict)
    costs = [r.cost for r in usage]
    return Judgment(
        **record, raw_output=response.text, repair_outputs=repairs, score=parsed.score,
        slot_verdict=parsed.verdict, verdict=verdict, explanation=parsed.explanation,
        status=parsed.status, reason=parsed.reason,
        prompt_tokens=sum(r.prompt_tokens for r in usage),
        completion_tokens=sum(r.completion_tokens for r in usage),
        cost=None if all(c is None for c in costs) else sum(c or 0.0 for c in costs),
        latency_s=sum(r.latency_s for r in usage), cached=all(r.cached for r in usage),
    )


def reparse(judgment: Judgment, call: JudgeCall | None) -> Judgment:
    """The judgment with its stored reply read by the current parser (no model call)."""
    if judgment.raw_output is None or judgment.status == "error":
        return judgment
    field_name = "verdict" if judgment.paradigm == "pairwise" else "score"
    echoes = call.echoes if call is not None else ()
    parsed = parse_reply(judgment.raw_output, field_name, judgment.score_range, echoes)
    for repaired in judgment.repair_outputs if parsed.status != "ok" else []:
        again = parse_reply(repaired, field_name, judgment.score_range, echoes)
        if again.status == "ok":
            parsed = dataclasses.replace(again, explanation=parsed.explanation or
                                         _explanation_of(judgment.raw_output))
            break
    verdict = None
    if parsed.verdict is not None and call is not None and call.slot_roles is not None:
        verdict = {"A": call.slot_roles[0], "B": call.slot_roles[1]}.get(parsed.verdict,
                                                                          parsed.verdict)
    return judgment.model_copy(update={
        "score": parsed.score, "slot_verdict": parsed.verdict, "verdict": verdict,
        "explanation": parsed.explanation, "status": parsed.status, "reason": parsed.reason,
        "parser_version": PARSER_VERSION})


def _explanation_of(text: str) -> str | None:
    return text.strip() or None


def _repair_request(call: JudgeCall, registry: StrategyRegistry, reply: str,
                    field_name: str) -> ModelRequest:
    low, high = call.score_range or (0, 0)
    ask = registry.render_template("_repair.jinja", field=field_name, score_min=low,
                                   score_max=high)
    schema = dict(call.strategy.response_schema(call.score_range))
    schema["properties"] = {field_name: schema["properties"][field_name]}
    schema["required"] = [field_name]
    return ModelRequest(
        model=call.request.model,
        messages=(*call.request.messages, ("assistant", reply), ("user", ask)),
        temperature=call.request.temperature, max_tokens=64, response_schema=schema,
        api_base=call.request.api_base,
    )


# ------------------------------------------------------------------ a whole run


@dataclass
class Evaluation:
    """A planned evaluation: the calls, where they go, and how to run or price them."""

    dataset: Dataset
    config: EvaluationConfig
    output_dir: Path
    registry: StrategyRegistry = field(init=False)
    strategies: list[Strategy] = field(init=False)
    calls: list[JudgeCall] = field(init=False)

    def __post_init__(self) -> None:
        self.output_dir = Path(self.output_dir)
        self.registry = StrategyRegistry(self.config.prompts_dir)
        self.strategies = self.registry.resolve(self.config.strategies)
        if self.config.score_range is not None:
            low, high = self.config.score_range
            if low >= high:
                raise InputError(f"score range {low}-{high} is empty. Fix: give A-B with A < B")
        self.calls = plan_calls(self.dataset.instances, self.strategies, self.registry,
                                self.config)
        self.calls_by_id = {call.call_id: call for call in self.calls}

    @property
    def judgments_path(self) -> Path:
        return self.output_dir / "judgments.jsonl"

    def run_spec(self, totals: RunTotals | None, created_at: str | None = None) -> RunSpec:
        from fbi import __version__

        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        return RunSpec(
            fbi_version=__version__, litellm_version=_litellm_version(),
            judge=self.config.judge, api_base=self.config.api_base,
            strategies={s.name: {
                "version": s.version, "display_name": s.meta.display_name,
                "paradigm": s.paradigm, "origin": s.origin, "template_sha": s.source_sha,
                "score_range": None if s.paradigm == "pairwise"
                else list(self.config.score_range or s.meta.score_range)}
                for s in self.strategies},
            dataset={"spec": self.dataset.spec, "fingerprint": self.dataset.fingerprint,
                     "instances": len(self.dataset), "rows_read": self.dataset.rows_read},
            parameters={"temperature": self.config.temperature,
                        "max_tokens": self.config.reply_tokens,
                        "timeout_s": self.config.timeout_s,
                        "concurrency": self.config.concurrency,
                        "repair": self.config.repair, "max_cost": self.config.max_cost},
            record_versions={"instance": INSTANCE_SCHEMA_VERSION,
                             "judgment": JUDGMENT_SCHEMA_VERSION, "run": RUN_SCHEMA_VERSION},
            parser_version=PARSER_VERSION, created_at=created_at or now, updated_at=now,
            totals={} if totals is None else {
                "calls": totals.total, "done_before": totals.already_done,
                "completed": totals.completed, "cached": totals.cached,
                "unparseable": totals.unparseable, "failed": totals.failed,
                "prompt_tokens": totals.prompt_tokens,
                "completion_tokens": totals.completion_tokens,
                "cost_usd": round(totals.cost, 6),
                "stopped_by_budget": totals.stopped_by_budget},
        )

    def _check_same_run(self) -> str | None:
        """Refuse to mix a different judge, dataset or sampling into an existing run."""
        path = self.output_dir / "run.json"
        if not path.exists():
            return None
        previous = RunSpec.model_validate_json(path.read_text(encoding="utf-8"))
        current = self.run_spec(None)
        differences = [
            name for name, old, new in [
                ("judge", previous.judge, current.judge),
                ("api_base", previous.api_base, current.api_base),
                ("dataset", previous.dataset["fingerprint"], current.dataset["fingerprint"]),
                ("temperature", previous.parameters.get("temperature"),
                 current.parameters["temperature"]),
                ("max_tokens", previous.parameters.get("max_tokens"),
                 current.parameters["max_tokens"]),
            ] if old != new
        ]
        for name, spec in current.strategies.items():
            old = previous.strategies.get(name)
            if old and (old["version"], old["score_range"], old.get("template_sha")) != (
                    spec["version"], spec["score_range"], spec["template_sha"]):
                differences.append(f"strategy {name}")
        if differences:
            raise InputError(
                f"{self.output_dir} holds a run with a different {', '.join(differences)}. "
                "Fix: pass another --output folder, or the same options as before to resume")
        return previous.created_at

    def dry_run(self, cache: ResponseCache | None) -> dict:
        """Calls still to make, and their estimated tokens and cost; calls nothing."""
        log_done: set[str] = set()
        if self.judgments_path.exists():
            log = RecordLog(self.judgments_path, Judgment)
            log_done = set(log.finished)
            log.close()
        client = ModelClient(cache=cache)
        to_call = [c for c in self.calls if c.call_id not in log_done
                   and client.cached(c.request) is None]
        prompt_tokens = sum(count_tokens(self.config.judge, c.request.message_dicts())
                            for c in to_call)
        reply_tokens = sum(min(self.config.reply_tokens,
                               EXPECTED_REPLY_TOKENS[c.strategy.meta.explanation])
                           for c in to_call)
        return {"calls": len(self.calls), "done": len(log_done),
                "cached": len(self.calls) - len(log_done) - len(to_call),
                "to_call": len(to_call), "prompt_tokens": prompt_tokens,
                "completion_tokens": reply_tokens,
                "cost_usd": estimate_cost(self.config.judge, prompt_tokens, reply_tokens)}

    def run(self, client: ModelClient, progress: Progress | None = None) -> RunTotals:
        """Run (or resume) the evaluation; returns the totals of this invocation."""
        from fbi.local_judge import check_available

        check_available(self.config.judge)
        created_at = self._check_same_run()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._write_run_json(self.run_spec(None, created_at))
        # The instances judged, beside the judgments, so reports need nothing else.
        write_dataset(self.dataset.instances, self.output_dir / "instances.jsonl")
        log = RecordLog(self.judgments_path, Judgment)
        stale = [j for j in log.finished.values() if j.parser_version != PARSER_VERSION]
        if stale:  # a newer parser reads the stored replies again, at no cost
            log.rewrite([reparse(j, self.calls_by_id.get(j.call_id))
                         if j.parser_version != PARSER_VERSION else j
                         for j in log.finished.values()])
        spent_before = sum(j.cost or 0.0 for j in log.finished.values())
        tasks = [Task(call.call_id, _bind(judge_call, call, client, self.registry,
                                          self.config.repair),
                      self._estimated_cost(call)) for call in self.calls]
        try:
            totals = asyncio.run(run_tasks(tasks, log, self.config.concurrency, progress,
                                           self.config.max_cost, spent_before))
        finally:
            log.close()
        self._write_run_json(self.run_spec(totals, created_at))
        if totals.stopped_by_budget:
            raise BudgetExceeded(
                f"stopped before passing --max-cost ${self.config.max_cost:g}: "
                f"{totals.already_done + totals.completed} of {totals.total} calls are done "
                f"(${spent_before + totals.cost:.4f} spent). Rerun with a higher --max-cost "
                "to continue")
        return totals

    def _estimated_cost(self, call: JudgeCall) -> float | None:
        if self.config.max_cost is None:
            return None
        prompt_tokens = count_tokens(self.config.judge, call.request.message_dicts())
        # Budget for the longest reply allowed, so a run never passes its limit.
        return estimate_cost(self.config.judge, prompt_tokens, self.config.reply_tokens)

    def _write_run_json(self, spec: RunSpec) -> None:
        path = self.output_dir / "run.json"
        tmp = path.with_name("run.json.tmp")
        tmp.write_text(spec.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)


def _bind(function, *args):
    async def run():
        return await function(*args)
    return run


def _litellm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return ""


def read_judgments(run_dir: str | Path) -> list[Judgment]:
    from fbi.runner import read_records

    path = Path(run_dir) / "judgments.jsonl"
    if not path.exists():
        raise InputError(f"{path}: no judgments here. Fix: pass a folder written by "
                         "`fbi evaluate --output`")
    return read_records(path, Judgment)
