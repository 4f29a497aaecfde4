"""One stored judge call, made visible: the messages re-rendered from the run folder's
instances and the strategy template, checked against the ``prompt_hash`` the call
recorded, beside the raw reply and what the parser read from it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import InputError
from fbi.judge._evaluate import EvaluationConfig, plan_calls, recorded_explanation_chars
from fbi.judge._strategies import StrategyRegistry
from fbi.records import Judgment
from fbi.redaction import SECRET_PLACEHOLDER
from fbi.run_spec import PromptRecord
from fbi.runs import load_run
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
    recorded = run.spec.prompts.get(judgment.strategy) or PromptRecord()
    origin = recorded.origin or "built-in"
    if prompts_dir is None and origin != "built-in":
        prompts_dir = Path(origin)
        if not prompts_dir.is_dir():
            raise InputError(f"the strategy {judgment.strategy!r} came from {origin}, which "
                             "is gone. Fix: pass its template folder with --prompts")
    registry = StrategyRegistry(prompts_dir)
    strategy = registry.get(judgment.strategy)
    parameters = run.spec.parameters
    protocol = parameters.protocol or "fbi"
    default_range = None if strategy.paradigm == "pairwise" else \
        strategy.meta.range_for(instance.ability.axis, protocol)
    stored_range = tuple(judgment.score_range) if judgment.score_range else None
    settings = ModelSettings(
        model=run.spec.model, api_base=run.spec.api_base,
        temperature=parameters.temperature or 0.0, max_tokens=parameters.max_tokens,
        seed=parameters.seed, model_args=parameters.model_args or {})
    config = EvaluationConfig(
        model=settings, strategies=(judgment.strategy,),
        score_range=stored_range if stored_range != default_range else None,
        explanation_chars=recorded_explanation_chars(parameters),
        system_prompt=system_prompt, prompts_dir=prompts_dir,
        protocol=protocol,  # type: ignore[arg-type]
        samples=judgment.sample + 1)
    (call,) = [c for c in plan_calls([instance], [strategy], registry, config)
               if c.call_id == call_id]
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
