"""fbi's suite as an Inspect task: `inspect eval fbi/fbi_judge --model M`.

Each sample is one judge call of fbi's protocol — planned and rendered by the judge
stage (`fbi.judge.plan_calls`: the same templates, the same messages, the same JSON
schema sent as the response schema), for a dataset fbi reads (the built-in sets, the
original release, vetted sets, preference sets, …). Any Inspect model answers it, with
Inspect's own batching, caching and limits. The scorer reads each reply with fbi's
parser into the record `fbi evaluate` would have written (`fbi.runs.record_of`), and the
metric turns the records into `fbi report`'s rates (`fbi.metrics.instance_outcomes`,
`aggregate`): per strategy, the undetected rate overall and per ability. The same
replies give the same rates as `fbi evaluate`.

Task arguments (``-T name=value``): ``dataset`` (default ``quick``), ``strategies``
(comma-separated, default ``vanilla``; ``all`` for the 11), ``categories`` and
``abilities`` (comma-separated), ``limit`` (per category), ``score_range``
(``LOW,HIGH``), ``protocol`` (``fbi`` or ``paper``), ``prompts`` (a template folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ResponseSchema,
)
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import JSONSchema

from fbi.datasets import load_dataset
from fbi.errors import InputError
from fbi.judge import EvaluationConfig, StrategyRegistry, judge_kind, plan_calls
from fbi.metrics import aggregate, instance_outcomes
from fbi.providers import ModelResponse
from fbi.records import Judgment
from fbi.runs import Call, record_of
from fbi.settings import ModelSettings

#: The judge name the records carry (the model is Inspect's to choose).
INSPECT_JUDGE = "inspect"


def _names(value: str | list[str]) -> list[str]:
    """A comma-separated argument; `inspect eval -T a=x,y` passes it as a list."""
    parts = value if isinstance(value, list) else str(value).split(",")
    return [str(part).strip() for part in parts if str(part).strip()]


def plan_suite(dataset: str = "quick", strategies: str | list[str] = "vanilla",
               categories: str | list[str] = "", abilities: str | list[str] = "",
               limit: int | None = None, score_range: str | list[str] = "",
               protocol: str = "fbi", prompts: str = "") -> dict[str, Call]:
    """Every call of fbi's protocol for the selection, by call id (rendered lazily)."""
    registry = StrategyRegistry(Path(prompts) if prompts else None)
    names = _names(strategies)
    if names == ["all"]:
        names = [s.name for s in registry.resolve(["all"], judge_kind(INSPECT_JUDGE))]
    chosen = load_dataset(dataset).select(_names(abilities), _names(categories),
                                          limit=limit)
    if not chosen.instances:
        raise InputError(f"{dataset}: no instance is selected")
    low_high = tuple(int(x) for x in _names(score_range)) or None
    config = EvaluationConfig(
        model=ModelSettings(model=INSPECT_JUDGE), strategies=tuple(names),
        score_range=low_high, prompts_dir=Path(prompts) if prompts else None,  # type: ignore[arg-type]
        protocol=protocol)  # type: ignore[arg-type]
    return {call.call_id: call for call in plan_calls(
        list(chosen.instances), [registry.get(n) for n in names], registry, config)}


def _sample(call: Call) -> Sample:
    kinds = {"system": ChatMessageSystem, "assistant": ChatMessageAssistant}
    request = call.request
    return Sample(
        id=call.call_id,
        input=[kinds.get(role, ChatMessageUser)(content=content)
               for role, content in request.messages],
        metadata={"instance_id": call.fields["instance_id"],
                  "category": call.fields["category"],
                  "ability": call.fields["ability"].short,
                  "strategy": call.fields["strategy"], "role": call.fields["role"],
                  "response_schema": request.response_schema})


@solver
def fbi_call():
    """Generate one judge reply, asking for the call's JSON schema (as fbi does)."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        schema = state.metadata.get("response_schema")
        if schema:
            body = schema.get("schema", schema)
            return await generate(state, response_schema=ResponseSchema(
                name=schema.get("name", "verdict"), json_schema=JSONSchema.model_validate(
                    body), strict=False))
        return await generate(state)
    return solve


@metric
def undetected():
    """Per strategy, `fbi report`'s undetected rate over readable verdicts, overall
    (``STRATEGY``) and per ability (``STRATEGY/LF`` …), from the scored records."""
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        records = [Judgment.model_validate(s.score.metadata["judgment"]) for s in scores
                   if s.score.metadata and "judgment" in s.score.metadata]
        values = {}
        for rate in aggregate(instance_outcomes(records)):
            if rate.level in ("overall", "ability") and rate.rate is not None:
                name = rate.strategy + ("" if rate.level == "overall" else f"/{rate.group}")
                values[name] = rate.rate
        return values
    return compute


@scorer(metrics=[undetected()])
def fbi_verdict(calls: dict[str, Call]):
    """Read the reply with fbi's parser into the record `fbi evaluate` writes; the value
    is 1 when a verdict was read, 0 when the reply was unreadable."""
    async def score(state: TaskState, target: Target) -> Score:
        call = calls[str(state.sample_id)]
        usage = state.output.usage
        record = record_of(call, [ModelResponse(
            text=state.output.completion,
            prompt_tokens=usage.input_tokens if usage else 0,
            completion_tokens=usage.output_tokens if usage else 0)])
        return Score(value=1 if record.status == "ok" else 0,
                     answer=str(record.score if record.score is not None
                                else record.verdict),
                     explanation=record.explanation or record.reason,
                     metadata={"judgment": record.model_dump(mode="json")})
    return score


@task
def fbi_judge(dataset: str = "quick", strategies: str | list[str] = "vanilla",
              categories: str | list[str] = "", abilities: str | list[str] = "",
              limit: int | None = None, score_range: str | list[str] = "",
              protocol: str = "fbi", prompts: str = "") -> Task:
    """fbi's judge protocol over a dataset (see the module docstring)."""
    arguments: dict[str, Any] = dict(dataset=dataset, strategies=strategies,
                                     categories=categories, abilities=abilities,
                                     limit=limit, score_range=score_range,
                                     protocol=protocol, prompts=prompts)
    calls = plan_suite(**arguments)
    return Task(dataset=MemoryDataset([_sample(c) for c in calls.values()],
                                      name=f"fbi/{dataset}"),
                solver=fbi_call(), scorer=fbi_verdict(calls),
                config=GenerateConfig(temperature=0.0), metadata={"fbi": arguments})
