"""The QA robustness suites: make question variants, answer each with the model under
test through the shared runner, and score the answers.

Suites:

* ``multiqa`` — the original and ``--rephrasings`` LLM rewrites of each question;
* ``noise`` — natural noise (casing, punctuation, typos, swaps, whitespace, combined),
  a paraphrase (the first rewrite), and for context questions an unrelated passage
  before or after the context;
* ``shuffle`` — multiple-choice questions with their option contents shuffled;
* ``maqa`` — multi-answer questions sampled ``--samples`` times at temperature 1.

A run folder holds ``run.json``, ``rewrites.jsonl``, ``answers.jsonl`` (one record per
answer, with its correctness) and ``robustness.json`` (every metric). Re-running
resumes; nothing is paid twice. ``score_answers`` turns any answers table into the same
metrics with no model call.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field

from fbi.errors import InputError
from fbi.logs import read_log
from fbi.metrics import (
    token_confidence,
)
from fbi.outputs import write_atomically
from fbi.providers import (
    LOCAL_JUDGE,
    ModelClient,
    ModelRequest,
    ModelResponse,
    json_object_in,
)
from fbi.records import CallRecord
from fbi.robustness._items import (
    LETTERS,
    Judge,
    QAItem,
    normalise,
    parse_reply,
)
from fbi.robustness._scoring import (
    SUITES,
    QAAnswer,
    score_answer,
    summarise,
)
from fbi.robustness._variants import (
    Variant,
    noise_variants,
    original,
    rephrase_variants,
    shuffle_variants,
)
from fbi.run_spec import (
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
    Parsed,
    Phase,
    Progress,
    RunTotals,
    Stage,
    StageFolder,
)
from fbi.settings import ModelSettings
from fbi.templates import TemplateFolder

ANSWER_SCHEMA = {"type": "object", "properties": {
    "answer": {"type": "string", "maxLength": 300},
    "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["answer", "confidence"], "additionalProperties": False}
REWRITE_SCHEMA = {"type": "object", "properties": {
    "rewrites": {"type": "array", "items": {"type": "string", "maxLength": 400}}},
    "required": ["rewrites"], "additionalProperties": False}


class RewriteCall(CallRecord):
    """One call asking for rephrasings of a question: a line of ``rewrites.jsonl``."""

    item_id: str
    """The QA item rephrased."""
    model: str
    """The model that rephrased it."""
    rewrites: list[str] = Field(default_factory=list)
    """The rephrasings read from the reply."""


@dataclass(frozen=True)
class RobustnessConfig:
    """What `fbi robustness run` measures: the model under test (its settings), suites,
    their sizes, correctness rule and sampling."""
    model: ModelSettings = field(default_factory=lambda: ModelSettings(model=LOCAL_JUDGE))
    """The model under test: its settings."""
    suites: tuple[str, ...] = SUITES
    """The suites to run (``multiqa``, ``noise``, ``shuffle``, ``maqa``)."""
    rephrasings: int = 5
    """MultiQ&A: rephrasings of each question."""
    shuffles: int = 4
    """MMLU order: shuffles of each question's choices."""
    samples: int = 5
    """Answers sampled per question where a suite samples (MultiQ&A, MAQA)."""
    seed: int = 0
    """The seed of shuffles, noise and sampling."""
    correctness: Literal["match", "f1", "embedding"] = "f1"
    """How an answer counts as correct: exact ``match``, token ``f1`` over a threshold, or
    ``embedding`` similarity."""
    threshold: float | None = None
    """The threshold of ``f1`` or ``embedding`` (None: the rule's default)."""
    possible_answers: int | None = None
    """K for certainty and M2; None: observed answers."""
    limit: int | None = None
    """Only the first N questions."""

    def __post_init__(self) -> None:
        unknown = set(self.suites) - set(SUITES)
        if unknown:
            from fbi.taxonomy import unknown_name_message

            raise InputError(unknown_name_message("suite", sorted(unknown)[0], list(SUITES)))
        if self.correctness not in ("match", "f1", "embedding"):
            raise InputError(f"correctness {self.correctness!r}: give match, f1 or embedding")
        if self.threshold is not None and not 0 <= self.threshold <= 1:
            raise InputError(f"threshold {self.threshold}: give a number from 0 to 1")

    @property
    def reply_tokens(self) -> int:
        return self.model.max_tokens or 200


@dataclass(frozen=True)
class AnswerJob:
    """One question variant to put to the model under one suite, with its sample number and
    temperature."""
    item: QAItem
    """The QA item."""
    suite: str
    """The suite asking (``multiqa``, ``noise``, ``shuffle``, ``maqa``)."""
    variant: Variant
    """The form of the question to ask."""
    sample: int = 0
    """Which of the suite's samples it is."""
    temperature: float = 0.0
    """The sampling temperature of this ask."""

    @property
    def call_id(self) -> str:
        return f"{self.item.id}|{self.suite}|{self.variant.id}|{self.sample}"


class RobustnessRun(Stage):
    """The suites of one model over QA items, as a stage of the run harness: rewrites,
    then answers, then the metrics ([`finish`][fbi.robustness.RobustnessRun.finish])."""

    kind = "robustness"
    title = "a model's answers to QA items and their variants, scored (fbi robustness run)"
    outputs = ("rewrites.jsonl", "answers.jsonl", "robustness.json",
               "rewrites.batches.jsonl", "answers.batches.jsonl")
    reported = True

    def __init__(self, items: list[QAItem], config: RobustnessConfig, output_dir: str | Path,
                 dataset_spec: str = "sample", force: bool = False):
        self.all_items = items  # what the dataset holds: its fingerprint is the dataset's
        items = items[:config.limit] if config.limit else items
        self.items, self.config, self.dataset_spec = items, config, dataset_spec
        self.output_dir = Path(output_dir)
        self.force = force  # write beside files fbi did not write (never over them)
        self.settings = config.model
        self.folder = StageFolder(self.output_dir / "run.json", force=force)
        self.templates = TemplateFolder("prompts")
        self.judge = Judge(config.correctness, config.threshold)

    # -- requests ------------------------------------------------------------------

    def rewrite_request(self, item: QAItem) -> ModelRequest:
        text = self.templates.render("_qa_rewrite.jinja", question=item.question,
                                     count=self.config.rephrasings)
        return ModelRequest(self.settings.model, (("user", text),), 1.0, 600,
                            REWRITE_SCHEMA, self.settings.api_base,
                            model_args=self.settings.model_args)

    def answer_request(self, job: AnswerJob) -> ModelRequest:
        variant = job.variant
        text = self.templates.render(
            "_qa_answer.jinja", kind=job.item.kind, question=variant.question,
            context=variant.context or "", choices=list(variant.choices or ()),
            letters=LETTERS)
        messages: tuple[tuple[str, str], ...] = (("user", text),)
        if job.sample:  # MAQA samples are independent draws: make each request distinct
            messages = (("system", f"Sample {job.sample}."), ("user", text))
        # MAQA asks for token log-probabilities; a provider without them is not asked
        # (ModelClient leaves the parameter out) and its answers carry no confidence.
        top_logprobs = 5 if job.suite == "maqa" else 0
        return ModelRequest(self.settings.model, messages, job.temperature,
                            self.config.reply_tokens, ANSWER_SCHEMA, self.settings.api_base,
                            top_logprobs, model_args=self.settings.model_args)

    # -- planning ------------------------------------------------------------------

    def needs_rewrites(self) -> bool:
        return bool({"multiqa", "noise"} & set(self.config.suites))

    def plan_answers(self, rewrites: dict[str, list[str]]) -> list[AnswerJob]:
        distractors = _distractors()
        jobs: list[AnswerJob] = []
        for item in self.items:
            base = original(item)
            if "multiqa" in self.config.suites:
                jobs += [AnswerJob(item, "multiqa", v) for v in
                         [base, *rephrase_variants(item, rewrites.get(item.id, []))]]
            if "noise" in self.config.suites:
                variants = [base, *noise_variants(item, self.config.seed, distractors)]
                if rewrites.get(item.id):
                    variants.append(Variant("paraphrase", "paraphrase", rewrites[item.id][0],
                                            item.choices, item.context))
                jobs += [AnswerJob(item, "noise", v) for v in variants]
            if "shuffle" in self.config.suites and item.choices:
                jobs += [AnswerJob(item, "shuffle", v) for v in
                         [base, *shuffle_variants(item, self.config.shuffles, self.config.seed)]]
            if "maqa" in self.config.suites and item.kind == "multi-answer":
                jobs += [AnswerJob(item, "maqa", base, sample, 1.0)
                         for sample in range(1, self.config.samples + 1)]
        return jobs

    # -- calls ---------------------------------------------------------------------

    def rewrite_calls(self) -> list[Call]:
        calls = []
        for item in self.items:
            request = self.rewrite_request(item)
            calls.append(Call(f"{item.id}|rewrite", request, RewriteCall,
                              {"item_id": item.id, "model": request.model},
                              _rewrite_parser(item.question, self.config.rephrasings),
                              expected_reply_tokens=60 * self.config.rephrasings))
        return calls

    def answer_calls(self, jobs: list[AnswerJob]) -> list[Call]:
        calls = []
        for job in jobs:
            request = self.answer_request(job)
            variant, item = job.variant, job.item
            fields = {
                "item_id": item.id, "kind": item.kind, "suite": job.suite,
                "variant": variant.id, "variant_kind": variant.kind, "sample": job.sample,
                "question": variant.question,
                "choices": list(variant.choices) if variant.choices else None,
                "gold": list(item.answers), "gold_letter": variant.gold_letter(item),
                "model": request.model}
            calls.append(Call(job.call_id, request, QAAnswer, fields,
                              _answer_parser(self.judge, job, fields["gold_letter"]),
                              expected_reply_tokens=30))
        return calls

    def identity(self) -> RunIdentity:
        config, settings = self.config, self.settings
        templates = ("_qa_answer.jinja", "_qa_rewrite.jinja")
        return RunIdentity(
            model=settings.model, api_base=settings.endpoint,
            prompts={t.removesuffix(".jinja"): PromptRecord(template_sha=self.templates.sha(t))
                     for t in templates},
            dataset=DatasetRecord(spec=self.dataset_spec, questions=len(self.items),
                                  fingerprint=hashlib.sha256("\n".join(
                                      i.model_dump_json() for i in self.all_items
                                  ).encode()).hexdigest()),
            selection=Selection(suites=list(config.suites), limit=config.limit),
            parameters=Parameters(
                rephrasings=config.rephrasings, shuffles=config.shuffles,
                samples=config.samples, seed=config.seed, correctness=config.correctness,
                threshold=config.threshold, possible_answers=config.possible_answers,
                max_tokens=settings.max_tokens,
                model_args=settings.recorded_model_args() or None),
            settings=RunSettings(concurrency=settings.concurrency, max_cost=settings.max_cost))

    # -- running -------------------------------------------------------------------

    def phases(self) -> Iterator[Phase]:
        rewrites = Phase(self.output_dir / "rewrites.jsonl", RewriteCall,
                         self.rewrite_calls(), shown=False)
        if self.needs_rewrites():
            yield rewrites
        answers = self.plan_answers(self._finished_rewrites(rewrites.records))
        self._planned = answers
        yield Phase(self.output_dir / "answers.jsonl", QAAnswer, self.answer_calls(answers))

    def probe_requests(self) -> list[ModelRequest] | None:
        rewrites = self._finished_rewrites(read_log(self.output_dir / "rewrites.jsonl",
                                                    RewriteCall).latest())
        known = (self.rewrite_calls() if self.needs_rewrites() else []) + \
            self.answer_calls(self.plan_answers(rewrites))
        return [c.request for c in known] or None

    def run(self, client: ModelClient, progress: Progress | None = None,
            batch: BatchOptions | None = None) -> RunTotals:
        """Rewrites, then answers, then the metrics. In batch mode, answers wait until
        the rewrites are back, and the metrics until the answers are."""
        self._planned = None  # the answers asked for, once the rewrites are in
        return super().run(client, progress, batch)

    def finish(self, totals: RunTotals) -> None:
        """The metrics, from what is answered (a budget or Ctrl-C leaves some out); not
        while answers are still at the provider, the model became unavailable, or the
        answers were never asked (the rewrites did not finish)."""
        if self._planned is None or totals.in_batches or totals.stopped_by:
            return
        wanted = {job.call_id for job in self._planned}
        records = read_log(self.output_dir / "answers.jsonl", QAAnswer).latest()
        answers = [a for k, a in records.items() if k in wanted]
        rewrites = self._finished_rewrites(read_log(self.output_dir / "rewrites.jsonl",
                                                    RewriteCall).latest())
        summary = summarise(answers, self.config.seed, self.config.possible_answers,
                            self.config.suites, planned_suites(self._planned))
        summary = summary.model_copy(update={
            "model": self.settings.model, "dataset": self.dataset_spec,
            "rewrites": {"asked": len(self.items) if rewrites or self.needs_rewrites()
                         else 0, "usable": sum(bool(r) for r in rewrites.values())}})
        write_atomically(self.output_dir / "robustness.json",
                         summary.model_dump_json(indent=2) + "\n")

    def _finished_rewrites(self, records: dict[str, RewriteCall]) -> dict[str, list[str]]:
        wanted = {f"{item.id}|rewrite" for item in self.items}
        return {r.item_id: r.rewrites for k, r in records.items()
                if k in wanted and r.status == "ok"}


def planned_suites(jobs: list[AnswerJob]) -> set[str]:
    """The suites the planned jobs belong to."""
    return {job.suite for job in jobs}


def _rewrite_parser(question: str, count: int):
    def parse(responses: list[ModelResponse]) -> Parsed:
        rewrites = _parse_rewrites(responses[0].text, question)[:count]
        if not rewrites:
            return Parsed("unparseable", reason="no usable rewrites in the reply")
        return Parsed("ok", {"rewrites": rewrites})
    return parse


def _answer_parser(judge: Judge, job: AnswerJob, gold_letter: str | None):
    def parse(responses: list[ModelResponse]) -> Parsed:
        response = responses[0]
        answer, confidence = parse_reply(response.text)
        scored = score_answer(judge, job.item.kind, answer, tuple(job.item.answers),
                              job.variant.choices, gold_letter)
        fields = {**scored, "confidence": confidence,
                  "token_confidence": token_confidence(response.token_logprobs)}
        if not scored["answer"]:
            return Parsed("unparseable", fields, "no answer")
        return Parsed("ok", fields)
    return parse


def _parse_rewrites(text: str, question: str) -> list[str]:
    data = json_object_in(text) or {}
    rewrites = data.get("rewrites", [])
    if not isinstance(rewrites, list):
        return []
    seen, kept = {normalise(question)}, []
    for rewrite in rewrites:
        if not isinstance(rewrite, str) or not normalise(rewrite) or \
                _PLACEHOLDER.search(rewrite) or normalise(rewrite) in seen:
            continue  # empty, the template's own placeholder, the question, or a repeat
        seen.add(normalise(rewrite))
        kept.append(rewrite.strip())
    return kept


# The rewrite template shows its reply shape with placeholders such as "<rewrite 1>";
# a reply that copies them back has rewritten nothing.
_PLACEHOLDER = re.compile(r"<\s*rewrite\s*\d*\s*>|^\s*\.\.\.\s*$", re.IGNORECASE)


def _distractors() -> list[str]:
    from importlib import resources

    import yaml

    text = resources.files("fbi.data").joinpath("distractors.yaml").read_text("utf-8")
    return list(yaml.safe_load(text)["passages"])


