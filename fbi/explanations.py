"""The explanation check (paper §5.3): did the judge name the error it failed to score?

For every undetected instance whose judge wrote an explanation, a checker model reads
the instruction, the perturbed answer, the planted error and the explanation, and says
whether the explanation points the error out. It goes through the same cached,
resumable runner as judging; results land in ``explanation_checks.jsonl``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

from fbi.errors import InputError, ModelError
from fbi.llm import ModelClient, ModelRequest
from fbi.outcomes import instance_outcomes
from fbi.parsing import json_object_in
from fbi.records import ExplanationCheck, Judgment
from fbi.runner import Progress, RecordLog, RunTotals, Task, run_tasks
from fbi.strategies import StrategyRegistry
from fbi.taxonomy import get_category

SCHEMA = {"type": "object", "properties": {"points_out_error": {"type": "boolean"}},
          "required": ["points_out_error"], "additionalProperties": False}


def explanations_to_check(judgments: list[Judgment]) -> dict[tuple[str, str], str]:
    """(strategy, instance id) → the explanation(s) of each undetected instance."""
    by_key: dict[tuple[str, str], list[Judgment]] = {}
    for judgment in judgments:
        by_key.setdefault((judgment.strategy, judgment.instance_id), []).append(judgment)
    found = {}
    for outcome in instance_outcomes(judgments):
        if outcome.outcome != "undetected":
            continue
        calls = by_key[(outcome.strategy, outcome.instance_id)]
        if outcome.paradigm == "pairwise":
            texts = [f"({'gold' if j.role == 'gold-first' else 'perturbed'} answer shown "
                     f"first) {j.explanation}" for j in sorted(calls, key=lambda j: j.role)
                     if j.explanation]
        else:  # the call that judged the perturbed answer
            texts = [j.explanation for j in calls if j.role == "perturbed" and j.explanation]
        if texts:
            found[(outcome.strategy, outcome.instance_id)] = "\n\n".join(texts)
    return found


def parse_check(text: str) -> bool | None:
    value = json_object_in(text) or {}
    if isinstance(value.get("points_out_error"), bool):
        return value["points_out_error"]
    words = re.findall(r"\b(true|false|yes|no)\b", text.lower())
    return words[-1] in ("true", "yes") if words else None


def run_explanation_checks(run_dir: str | Path, checker: str, client: ModelClient,
                           api_base: str | None = None, concurrency: int = 8,
                           progress: Progress | None = None) -> RunTotals:
    from fbi.report import load_run

    run = load_run(run_dir)
    if not run.instances:
        raise InputError(f"{run_dir}: no instances.jsonl, so the answers cannot be shown to "
                         "the checker. Fix: re-run `fbi evaluate` into this folder")
    registry = StrategyRegistry()
    tasks = []
    for (strategy, instance_id), explanation in explanations_to_check(run.judgments).items():
        instance = run.instances[instance_id]
        error = instance.rationale or get_category(instance.category).description
        text = registry.render_template(
            "_explanation_check.jinja", instruction=instance.instruction,
            answer=instance.perturbed_answer, error=error, explanation=explanation)
        request = ModelRequest(model=checker, messages=(("user", text),), temperature=0.0,
                               max_tokens=64, response_schema=SCHEMA, api_base=api_base)
        record = {"call_id": f"{instance_id}|{strategy}|explain-check",
                  "instance_id": instance_id, "judge": run.spec.judge, "strategy": strategy,
                  "checker": checker,
                  "prompt_hash": hashlib.sha256(text.encode()).hexdigest()}
        tasks.append(Task(record["call_id"], _checker(client, request, record)))
    log = RecordLog(Path(run_dir) / "explanation_checks.jsonl", ExplanationCheck)
    try:
        return asyncio.run(run_tasks(tasks, log, concurrency, progress))
    finally:
        log.close()


def _checker(client: ModelClient, request: ModelRequest, record: dict):
    async def run() -> ExplanationCheck:
        try:
            response = await client.complete(request)
        except ModelError as error:
            return ExplanationCheck(**record, status="error", reason=str(error))
        verdict = parse_check(response.text)
        return ExplanationCheck(
            **record, raw_output=response.text, points_out_error=verdict,
            status="ok" if verdict is not None else "unparseable",
            reason=None if verdict is not None else "no true/false found", **response.usage())
    return run
