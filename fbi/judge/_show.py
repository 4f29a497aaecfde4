"""One stored judge call, made visible: the messages re-rendered from the run folder's
instances and the strategy template, checked against the ``prompt_hash`` the call
recorded, beside the raw reply and what the parser read from it."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import InputError
from fbi.judge._config import EvaluationConfig
from fbi.judge._evaluate import plan_calls, recorded_explanation_chars
from fbi.judge._strategies import StrategyRegistry
from fbi.records import Instance, Judgment
from fbi.redaction import SECRET_PLACEHOLDER
from fbi.run_spec import PromptRecord
from fbi.runs import Call, Run, load_run
from fbi.settings import ModelSettings


@dataclass(frozen=True)
class ShownCall:
    """One stored judge call as `fbi show` prints it: its messages re-rendered, the stored
    judgment, and whether the re-rendered prompt matches the recorded hash."""
    call_id: str
    """The call's id in the run's log."""
    judge: str
    """The run's label and model, as fbi names a judge everywhere."""
    strategy: str
    """The strategy's display name."""
    messages: tuple[tuple[str, str], ...]
    """(role, content), as re-rendered now."""
    judgment: Judgment
    """The stored judgment."""
    hash_matches: bool
    """The re-rendered messages are the ones the call sent."""
    note: str | None = None
    """Why they may differ, when they do."""


def show_call(run_dir: str | Path, call_id: str, prompts_dir: Path | None = None,
              system_prompt: str | None = None) -> ShownCall:
    """The call ``call_id`` of a judge run folder (see the module docstring)."""
    run = load_run(run_dir)
    judgments = {j.call_id: j for j in [*run.judgments, *run.repeats]}
    if call_id not in judgments:
        close = difflib.get_close_matches(call_id, judgments, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else \
            " Call ids are INSTANCE|STRATEGY|ROLE, as in judgments.jsonl."
        raise InputError(f"{run.folder}: no call {call_id!r}.{hint}")
    judgment = judgments[call_id]
    instance = run.instances.get(judgment.instance_id)
    if instance is None:
        raise InputError(f"{run.folder}/instances.jsonl: no instance {judgment.instance_id!r}"
                         ", so the prompt cannot be re-rendered")
    (call,) = [c for c in replayed_calls(run, judgment.strategy, [instance],
                                         prompts_dir, system_prompt, judgment.sample + 1,
                                         judgment.score_range)
               if c.call_id == call_id]
    recorded = run.spec.prompts.get(judgment.strategy) or PromptRecord()
    strategy = _registry(run, judgment.strategy, prompts_dir).get(judgment.strategy)
    parameters = run.spec.parameters
    matches = call.request.prompt_hash() == judgment.prompt_hash
    note = None
    if not matches:
        reasons = []
        if parameters.system_prompt_sha256 and system_prompt is None:
            reasons.append("the run had a system prompt: pass it with --system-prompt FILE")
        if str(recorded.version) != str(strategy.version) or \
                recorded.template_sha != strategy.source_sha:
            reasons.append(f"the template of {judgment.strategy!r} changed since the run "
                           f"(version {recorded.version} → {strategy.version})")
        if any(value == SECRET_PLACEHOLDER for value in (parameters.model_args or {})
               .values()):
            reasons.append("the run had secret model arguments, which run.json never keeps")
        note = "; ".join(reasons) or "the instance or template differs from the run's"
    return ShownCall(call_id, run.spec.judge_name, strategy.meta.display_name,
                     call.request.messages, judgment, matches, note)


def _registry(run: Run, strategy_name: str, prompts_dir: Path | None) -> StrategyRegistry:
    """The registry holding the run's strategy: its recorded template folder unless
    ``prompts_dir`` says where it moved."""
    origin = (run.spec.prompts.get(strategy_name) or PromptRecord()).origin or "built-in"
    if prompts_dir is None and origin != "built-in":
        prompts_dir = Path(origin)
        if not prompts_dir.is_dir():
            raise InputError(f"the strategy {strategy_name!r} came from {origin}, which "
                             "is gone. Fix: pass its template folder with --prompts")
    return StrategyRegistry(prompts_dir)


def replayed_calls(run: Run, strategy_name: str, instances: list[Instance],
                   prompts_dir: Path | None = None, system_prompt: str | None = None,
                   samples: int = 1, score_range: list[int] | tuple[int, int] | None = None
                   ) -> Iterator[Call]:
    """The calls a run made under one strategy, planned again as the run planned them
    (its parameters, protocol and score range), each rendered as it is taken: what
    `fbi show` and `fbi export inspect` show as a call's messages. A run with a system
    prompt needs it passed (run.json keeps only its hash). ``score_range``: one call's
    recorded range (a custom one when it is not the strategy's default for the first
    instance); else the run's ``--score-range``, if it had one."""
    registry = _registry(run, strategy_name, prompts_dir)
    strategy = registry.get(strategy_name)
    parameters = run.spec.parameters
    protocol = parameters.protocol or "fbi"
    if score_range:
        stored = tuple(score_range)
        default_range = None if strategy.paradigm == "pairwise" or not instances else \
            strategy.meta.range_for(instances[0].ability.axis, protocol)
    else:
        custom = run.spec.settings.score_range
        stored, default_range = (tuple(custom) if custom else None), None
    settings = ModelSettings(
        model=run.spec.model, api_base=run.spec.api_base,
        temperature=parameters.temperature or 0.0, max_tokens=parameters.max_tokens,
        seed=parameters.seed, model_args=parameters.model_args or {})
    config = EvaluationConfig(
        model=settings, strategies=(strategy_name,),
        score_range=stored if stored != default_range else None,
        explanation_chars=recorded_explanation_chars(parameters),
        system_prompt=system_prompt, prompts_dir=prompts_dir,
        protocol=protocol,  # type: ignore[arg-type]
        samples=samples)
    return plan_calls(instances, [strategy], registry, config)
