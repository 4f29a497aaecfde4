"""The explanation check (paper §5.3): did the judge name the error it failed to score?

For every undetected instance whose judge wrote an explanation, a checker model reads
the instruction, the perturbed answer, the planted error and the explanation, and says
whether the explanation points the error out. It goes through the same cached,
resumable runner as judging; results land in ``explanation_checks.jsonl``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from fbi.errors import InputError
from fbi.judge._strategies import StrategyRegistry
from fbi.providers import ModelRequest, ModelResponse, json_object_in
from fbi.records import ExplanationCheck, Judgment
from fbi.run_spec import (
    DatasetRecord,
    Parameters,
    PromptRecord,
    RunIdentity,
    RunSettings,
)
from fbi.runs import (
    Call,
    Parsed,
    Phase,
    Stage,
    StageFolder,
    load_run,
)
from fbi.settings import ModelSettings
from fbi.taxonomy import get_category

SCHEMA = {"type": "object", "properties": {"points_out_error": {"type": "boolean"}},
          "required": ["points_out_error"], "additionalProperties": False}
LOG_NAME = "explanation_checks.jsonl"
CHECK_TOKENS = 64  # a true or false and little else
SPEC_NAME = "explanation_checks.run.json"


def explanations_to_check(judgments: list[Judgment]) -> dict[tuple[str, str], str]:
    """(strategy, instance id) → the explanation(s) of each undetected instance."""
    by_key: dict[tuple[str, str], list[Judgment]] = {}
    for judgment in judgments:
        by_key.setdefault((judgment.strategy, judgment.instance_id), []).append(judgment)
    found = {}
    from fbi.metrics import instance_outcomes  # (not at import: `fbi evaluate` needs none)

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
    """The checker's answer to "does the explanation name the error?" (paper §5.3): its JSON
    `points_out_error`, else the last true/false/yes/no word, else None."""
    value = json_object_in(text) or {}
    if isinstance(value.get("points_out_error"), bool):
        return value["points_out_error"]
    words = re.findall(r"\b(true|false|yes|no)\b", text.lower())
    return words[-1] in ("true", "yes") if words else None


def _parse(responses: list[ModelResponse]) -> Parsed:
    verdict = parse_check(responses[0].text)
    if verdict is None:
        return Parsed("unparseable", reason="no true/false found")
    return Parsed("ok", {"points_out_error": verdict})


class ExplanationChecks(Stage):
    """The explanation checks of one run folder, with one checker model (its
    ``settings``), as a stage of the run harness."""

    kind = "explain-check"
    title = ("whether a judge's explanations name the error its score missed (paper §5.3; "
             "inside a judge run)")
    spec_file = SPEC_NAME
    outputs = (LOG_NAME, "explanation_checks.batches.jsonl")
    listed = False

    def __init__(self, run_dir: str | Path, settings: ModelSettings,
                 limit: int | None = None):
        self.run_dir = Path(run_dir)
        self.settings = settings
        self.folder = StageFolder(self.run_dir / SPEC_NAME)
        run = load_run(run_dir)
        if not run.instances:
            raise InputError(f"{run_dir}: no instances.jsonl, so the answers cannot be shown "
                             "to the checker. Fix: re-run `fbi evaluate` into this folder")
        self.judge = run.spec.model
        registry = StrategyRegistry()
        self.template_sha = registry.templates.sha("_explanation_check.jinja")
        self.calls: list[Call] = []
        for (strategy, instance_id), explanation in sorted(
                explanations_to_check(run.judgments).items()):
            instance = run.instances[instance_id]
            error = instance.rationale or get_category(instance.category).description
            text = registry.render_template(
                "_explanation_check.jinja", instruction=instance.question,
                answer=instance.perturbed_answer, error=error, explanation=explanation)
            request = ModelRequest(model=settings.model, messages=(("user", text),),
                                   temperature=0.0, max_tokens=CHECK_TOKENS,
                                   response_schema=SCHEMA, api_base=settings.api_base,
                                   model_args=settings.model_args)
            fields = {"instance_id": instance_id, "judge": run.spec.model,
                      "strategy": strategy, "checker": settings.model}
            self.calls.append(Call(f"{instance_id}|{strategy}|explain-check", request,
                                   ExplanationCheck, fields, _parse,
                                   expected_reply_tokens=12))
        if limit is not None:
            self.calls = self.calls[:limit]

    @property
    def checker(self) -> str:
        return self.settings.model

    def identity(self) -> RunIdentity:
        return RunIdentity(
            model=self.checker, api_base=self.settings.endpoint,
            prompts={"_explanation_check": PromptRecord(template_sha=self.template_sha)},
            dataset=DatasetRecord(judge_run=str(self.run_dir), judge=self.judge),
            parameters=Parameters(temperature=0.0, max_tokens=CHECK_TOKENS,
                                  model_args=self.settings.recorded_model_args() or None),
            settings=RunSettings(concurrency=self.settings.concurrency,
                                 max_cost=self.settings.max_cost))

    def phases(self) -> Iterator[Phase]:
        yield Phase(self.run_dir / LOG_NAME, ExplanationCheck, self.calls,
                    keep_records=False)

    def probe_requests(self) -> list[ModelRequest]:
        return [c.request for c in self.calls]
