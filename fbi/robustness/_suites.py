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
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fbi.errors import InputError
from fbi.llm import (
    LOCAL_JUDGE,
    ModelClient,
    ModelRequest,
    ModelResponse,
    json_object_in,
    litellm_version,
)
from fbi.logs import read_log
from fbi.metrics import (
    auroc,
    multiqa_metrics,
    noise_group_metrics,
    noise_metrics,
    response_consistency,
    retest_metrics,
    token_confidence,
)
from fbi.outputs import write_atomically
from fbi.records import CallRecord, RunSpec
from fbi.robustness._items import (
    LETTERS,
    Judge,
    QAItem,
    normalise,
    parse_letter,
    parse_reply,
    split_answers,
)
from fbi.robustness._variants import (
    Variant,
    noise_variants,
    original,
    rephrase_variants,
    shuffle_variants,
)
from fbi.runs import (
    BatchOptions,
    Call,
    DryRun,
    Parsed,
    Progress,
    RunTotals,
    dry_run,
    execute_into,
    finished_ids,
    now,
    run_stage,
)
from fbi.templates import TemplateFolder

SUITES = ("multiqa", "noise", "shuffle", "maqa")
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
    model: str
    rewrites: list[str] = Field(default_factory=list)


class QAAnswer(CallRecord):
    """One answer to one question variant: a line of ``answers.jsonl``.
    ``call_id`` is ``item|suite|variant|sample``."""

    item_id: str
    kind: str
    suite: str
    variant: str
    variant_kind: str
    sample: int = 0
    question: str
    choices: list[str] | None = None
    gold: list[str]
    gold_letter: str | None = None
    model: str
    answer: str | None = None  # as given (a letter for multiple choice)
    answer_normalised: str | None = None  # for agreement: the chosen option's text for MC
    confidence: float | None = None  # verbalised, 0–1
    token_confidence: dict[str, float] | None = None  # max softmax, margin, neg. entropy
    correct: bool | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None


@dataclass(frozen=True)
class RobustnessConfig:
    """What `fbi robustness run` measures: model, suites, their sizes, correctness rule and
    sampling."""
    model: str = LOCAL_JUDGE
    suites: tuple[str, ...] = SUITES
    rephrasings: int = 5
    shuffles: int = 4
    samples: int = 5
    seed: int = 0
    api_base: str | None = None
    concurrency: int = 8
    correctness: Literal["match", "f1", "embedding"] = "f1"
    threshold: float | None = None
    possible_answers: int | None = None  # K for certainty and M2; None: observed answers
    max_tokens: int | None = None
    max_cost: float | None = None
    limit: int | None = None  # only the first N questions

    @property
    def reply_tokens(self) -> int:
        return self.max_tokens or 200


@dataclass(frozen=True)
class AnswerJob:
    """One question variant to put to the model under one suite, with its sample number and
    temperature."""
    item: QAItem
    suite: str
    variant: Variant
    sample: int = 0
    temperature: float = 0.0

    @property
    def call_id(self) -> str:
        return f"{self.item.id}|{self.suite}|{self.variant.id}|{self.sample}"


class RobustnessRun:
    def __init__(self, items: list[QAItem], config: RobustnessConfig, output_dir: str | Path,
                 dataset_spec: str = "sample", force: bool = False):
        unknown = set(config.suites) - set(SUITES)
        if unknown:
            from fbi.taxonomy import unknown_name_message

            raise InputError(unknown_name_message("suite", sorted(unknown)[0], list(SUITES)))
        self.all_items = items  # what the dataset holds: its fingerprint is the dataset's
        items = items[:config.limit] if config.limit else items
        self.items, self.config, self.dataset_spec = items, config, dataset_spec
        self.output_dir = Path(output_dir)
        self.force = force  # write beside files fbi did not write (never over them)
        self.templates = TemplateFolder("prompts")
        self.judge = Judge(config.correctness, config.threshold)

    # -- requests ------------------------------------------------------------------

    def rewrite_request(self, item: QAItem) -> ModelRequest:
        text = self.templates.render("_qa_rewrite.jinja", question=item.question,
                                     count=self.config.rephrasings)
        return ModelRequest(self.config.model, (("user", text),), 1.0, 600, REWRITE_SCHEMA,
                            self.config.api_base)

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
        return ModelRequest(self.config.model, messages, job.temperature,
                            self.config.reply_tokens, ANSWER_SCHEMA, self.config.api_base,
                            top_logprobs)

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

    def spec(self, totals: RunTotals | None = None) -> RunSpec:
        from fbi import __version__

        stamp = now()
        templates = ("_qa_answer.jinja", "_qa_rewrite.jinja")
        parameters = {k: v for k, v in self.config.__dict__.items()
                      if k not in ("model", "suites", "api_base", "concurrency", "max_cost",
                                   "limit")}
        return RunSpec(
            kind="robustness", fbi_version=__version__, litellm_version=litellm_version(),
            model=self.config.model, api_base=self.config.api_base,
            prompts={t.removesuffix(".jinja"): {"template_sha": self.templates.sha(t)}
                     for t in templates},
            dataset={"spec": self.dataset_spec, "questions": len(self.items),
                     "fingerprint": hashlib.sha256("\n".join(
                         i.model_dump_json() for i in self.all_items).encode()).hexdigest()},
            selection={"suites": list(self.config.suites), "limit": self.config.limit},
            parameters=parameters,
            settings={"concurrency": self.config.concurrency,
                      "max_cost": self.config.max_cost},
            command=list(sys.argv), created_at=stamp, updated_at=stamp,
            totals={} if totals is None else totals.as_dict())

    # -- running -------------------------------------------------------------------

    def _known_calls(self) -> list[Call]:
        """Rewrite calls and the answer calls known so far (answers to rephrasings are
        known once the rewrites exist)."""
        rewrites = self._finished_rewrites(read_log(self.output_dir / "rewrites.jsonl",
                                                    RewriteCall).latest())
        return (self.rewrite_calls() if self.needs_rewrites() else []) + \
            self.answer_calls(self.plan_answers(rewrites))

    def dry_run(self, client: ModelClient) -> DryRun:
        calls = self._known_calls()
        done = finished_ids(self.output_dir / "rewrites.jsonl", RewriteCall) + \
            finished_ids(self.output_dir / "answers.jsonl", QAAnswer)
        return dry_run(calls, client, done)

    def run(self, client: ModelClient, progress: Progress | None = None,
            batch: BatchOptions | None = None) -> RunTotals:
        """Rewrites, then answers, then the metrics. In batch mode, answers wait until
        the rewrites are back, and the metrics until the answers are."""
        with run_stage(self.spec, self.output_dir / "run.json", client, self.config.model,
                       self.config.api_base,
                       lambda: [c.request for c in self._known_calls()] or None,
                       batch, self.config.max_cost, force=self.force,
                       writes=("rewrites.jsonl", "answers.jsonl", "robustness.json",
                               "rewrites.batches.jsonl", "answers.batches.jsonl")) as totals:
            rewrites: dict[str, list[str]] = {}
            if self.needs_rewrites():
                phase, records = execute_into(
                    self.output_dir / "rewrites.jsonl", RewriteCall, self.rewrite_calls(),
                    client, self.config.concurrency, None, self.config.max_cost, batch)
                totals.merge(phase)
                rewrites = self._finished_rewrites(records)
            jobs = self.plan_answers(rewrites)
            answered = not (totals.interrupted or totals.stopped_by_budget
                            or totals.stopped_by or totals.in_batches)
            if answered:
                phase, records = execute_into(
                    self.output_dir / "answers.jsonl", QAAnswer, self.answer_calls(jobs),
                    client, self.config.concurrency, progress, self.config.max_cost, batch)
                totals.merge(phase)
            # the metrics, from what is answered (a budget or Ctrl-C leaves some out); not
            # while answers are still at the provider or the model became unavailable
            if answered and not totals.in_batches and not totals.stopped_by:
                wanted = {job.call_id for job in jobs}
                answers = [a for k, a in records.items() if k in wanted]
                summary = summarise(answers, self.config.seed, self.config.possible_answers,
                                    self.config.suites, planned_suites(jobs))
                summary["model"] = self.config.model
                summary["dataset"] = self.dataset_spec
                summary["rewrites"] = {"asked": len(self.items) if rewrites or
                                       self.needs_rewrites() else 0,
                                       "usable": sum(bool(r) for r in rewrites.values())}
                write_atomically(self.output_dir / "robustness.json",
                                 json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        return totals

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


def score_answer(judge: Judge, kind: str, answer: str, golds: tuple[str, ...],
                 choices: tuple[str, ...] | None, gold_letter: str | None) -> dict:
    """Correctness fields of one answer (see fbi.robustness._items for the rules of each kind)."""
    if kind == "multiple-choice" and choices:
        letter = parse_letter(answer, choices)
        return {"answer": letter, "correct": None if letter is None else letter == gold_letter,
                "answer_normalised": None if letter is None
                else normalise(choices[LETTERS.index(letter)])}
    if not answer.strip():
        return {"answer": None, "correct": None, "answer_normalised": None}
    if kind == "multi-answer":
        correct, precision, recall, f1 = judge.multi(answer, golds)
        return {"answer": answer, "correct": correct, "precision": precision,
                "recall": recall, "f1": f1,
                "answer_normalised": ", ".join(sorted(set(split_answers(answer))))}
    return {"answer": answer, "correct": judge.free_text(answer, golds),
            "answer_normalised": normalise(answer)}


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


# ------------------------------------------------------------------ scoring


def answers_frame(answers: list[QAAnswer]) -> pd.DataFrame:
    """The answers as a DataFrame, one row per answer."""
    return pd.DataFrame([a.model_dump() for a in answers])


def summarise(answers: list[QAAnswer], seed: int = 0, possible_answers: int | None = None,
              requested: tuple[str, ...] | None = None,
              planned: set[str] | None = None) -> dict:
    """Every robustness metric of a run's answers, per suite, with failed and skipped suites
    and why."""
    frame = answers_frame(answers) if answers else pd.DataFrame()
    return summarise_frame(frame, seed, possible_answers, requested, planned)


def summarise_frame(frame: pd.DataFrame, seed: int = 0,
                    possible_answers: int | None = None,
                    requested: tuple[str, ...] | None = None,
                    planned: set[str] | None = None) -> dict:
    """Every suite's metrics from an answers table (the columns of ``answers.jsonl``).

    A requested suite whose answers give no metric (no usable answers, or MultiQ&A with
    no rephrasing answered) is listed in ``failed_suites`` with the reason, never
    dropped; one with no question of its kind (``shuffle`` needs multiple choice,
    ``maqa`` multi-answer questions) is listed in ``skipped_suites``.
    """
    result: dict[str, Any] = {"schema_version": 1, "answers": len(frame),
                              "unusable_answers": 0, "suites": {}, "failed_suites": {},
                              "skipped_suites": {}}
    present = set(frame["suite"]) if "suite" in frame else set()
    planned = present if planned is None else planned
    requested = tuple(requested) if requested else tuple(s for s in SUITES if s in present)
    usable = frame[frame["status"] == "ok"] if "status" in frame else frame
    result["unusable_answers"] = int(len(frame) - len(usable))
    scorers = {"multiqa": lambda g: _multiqa(g, seed, possible_answers),
               "noise": lambda g: _noise(g, seed), "shuffle": _shuffle, "maqa": _maqa}
    for suite in requested:
        if suite not in planned:
            result["skipped_suites"][suite] = {
                "shuffle": "no multiple-choice question", "maqa": "no multi-answer question",
            }.get(suite, "no question for this suite")
            continue
        group = usable[usable["suite"] == suite] if len(usable) else usable
        metrics = scorers[suite](group) if len(group) else {}
        failure = _failure(suite, metrics, frame)
        if failure:
            result["failed_suites"][suite] = failure
        else:
            result["suites"][suite] = metrics
    return result


def _failure(suite: str, metrics: dict, frame: pd.DataFrame) -> str | None:
    """Why a suite's metrics cannot stand, or None when they can."""
    rows = frame[frame["suite"] == suite] if "suite" in frame else frame
    unusable = int((rows["status"] != "ok").sum()) if "status" in rows else 0
    if not metrics:
        return f"no usable answers ({unusable} of {len(rows)} unusable)"
    if suite == "multiqa" and (metrics.get("questions", 0) == 0
                               or (metrics.get("variants") or 0) < 2):
        return ("no question has its original and a rephrasing both answered "
                f"({unusable} of {len(rows)} answers unusable; check rewrites.jsonl)")
    if suite == "shuffle" and metrics.get("questions", 0) == 0:
        return f"no question answered in every order ({unusable} of {len(rows)} unusable)"
    return None


def _matrix(group: pd.DataFrame, variants: list[str], column: str) -> tuple[pd.DataFrame, int]:
    table = group.pivot_table(index="item_id", columns="variant", values=column,
                              aggfunc="first")
    complete = table.reindex(columns=variants).dropna()
    return complete, len(table) - len(complete)


def _multiqa(group: pd.DataFrame, seed: int, possible_answers: int | None) -> dict:
    variants = ["original", *sorted(v for v in group["variant"].unique() if v != "original")]
    correct, dropped = _matrix(group.assign(correct=group["correct"].astype(float)),
                               variants, "correct")
    normalised, _ = _matrix(group, variants, "answer_normalised")
    common = correct.index.intersection(normalised.index)
    if len(common) == 0:
        return {"questions": 0, "dropped_incomplete": dropped}
    metrics = multiqa_metrics(correct.loc[common].to_numpy(),
                              normalised.loc[common].astype(str).to_numpy(),
                              k_possible=possible_answers, seed=seed)
    metrics["dropped_incomplete"] = dropped + len(correct) - len(common)
    return _clean(metrics)


def _noise(group: pd.DataFrame, seed: int) -> dict:
    table = group.assign(correct=group["correct"].astype(float)).pivot_table(
        index="item_id", columns="variant", values="correct", aggfunc="first")
    if "original" not in table:
        return {}
    noises = sorted(c for c in table.columns if c != "original")
    by_noise = {}
    for variant in noises:
        pair = table[["original", variant]].dropna()
        if len(pair):
            by_noise[variant] = _clean(noise_metrics(pair["original"].to_numpy(),
                                                     pair[variant].to_numpy(), seed=seed))
    if not by_noise:
        return {}
    groups = noise_group_metrics(table["original"].to_numpy(), table[noises].to_numpy(),
                                 seed=seed)
    return {"groups": _clean(groups), "by_noise": by_noise}


def _shuffle(group: pd.DataFrame) -> dict:
    variants = ["original", *sorted(v for v in group["variant"].unique() if v != "original")]
    correct, dropped = _matrix(group.assign(correct=group["correct"].astype(float)),
                               variants, "correct")
    if correct.empty or len(variants) < 2:
        return {"questions": 0, "dropped_incomplete": dropped}
    metrics = retest_metrics(correct["original"].to_numpy(), correct[variants[1:]].to_numpy())
    metrics["dropped_incomplete"] = dropped
    return _clean(metrics)


def _maqa(group: pd.DataFrame) -> dict:
    consistency = response_consistency(group.groupby("item_id")["answer_normalised"]
                                       .apply(list))
    correct = group["correct"].astype(bool).to_numpy()
    result: dict[str, Any] = {
        "questions": int(group["item_id"].nunique()), "samples": len(group),
        "accuracy": float(correct.mean()), "consistency": consistency,
        "precision": float(group["precision"].mean()) if "precision" in group else None,
        "recall": float(group["recall"].mean()) if "recall" in group else None,
        "f1": float(group["f1"].mean()) if "f1" in group else None,
    }
    if "confidence" in group and group["confidence"].notna().any():
        result["verbalised_confidence"] = float(group["confidence"].mean())
        result["auroc_verbalised"] = auroc(group["confidence"].to_numpy(dtype=float), correct)
    if "token_confidence" in group and group["token_confidence"].notna().any():
        tokens = pd.DataFrame([t or {} for t in group["token_confidence"]])
        for column in tokens:
            result[f"auroc_{column}"] = auroc(tokens[column].to_numpy(dtype=float), correct)
    return _clean(result)


def _clean(values: dict) -> dict:
    """JSON-friendly: numpy numbers to Python, NaN to None."""
    cleaned = {}
    for key, value in values.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and math.isnan(value):
            value = None
        cleaned[key] = value
    return cleaned


SCORE_COLUMNS = {"question_id": "item_id", "id": "item_id", "shuffle": "variant",
                 "shuffle_id": "variant", "variant_id": "variant"}


def score_answers(spec: str, correctness: str = "f1", seed: int | None = None,
                  possible_answers: int | None = None) -> dict:
    """Metrics from an answers table (JSONL, CSV or Parquet); no model is called.

    A run's own ``answers.jsonl`` is read exactly as the run read it (the last record of
    each call, unusable answers kept as such, the run's seed, K and suites from the
    ``run.json`` beside it), so it gives the run's ``robustness.json`` metrics. Any
    other table is scored from its columns (docs/how-to/robustness.md).
    """
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{spec}: no such file. Fix: give an answers table "
                         "(.jsonl, .csv or .parquet)")
    if path.suffix.lower() == ".jsonl":
        own = _run_answers(path)
        if own is not None:
            answers, run = own
            parameters = run.parameters if run else {}
            summary = summarise(
                answers, parameters.get("seed", 0) if seed is None else seed,
                possible_answers or parameters.get("possible_answers"),
                tuple(run.selection.get("suites", ())) if run else None)
            summary["source"] = str(path)
            if run is not None:  # named as the run named them (the tables' titles)
                summary.setdefault("model", run.model)
                summary.setdefault("dataset", run.dataset.get("spec", path.parent.name))
            return summary
    readers = {".jsonl": lambda p: pd.read_json(p, lines=True), ".csv": pd.read_csv,
               ".parquet": pd.read_parquet}
    if path.suffix.lower() not in readers:
        raise InputError(f"{spec}: unsupported file type. Fix: use .jsonl, .csv or .parquet")
    try:
        frame = readers[path.suffix.lower()](path)
    except (ValueError, OSError) as error:
        raise InputError(f"{spec}: could not be read ({error}). Fix: check the file") \
            from None
    frame = frame.rename(columns={k: v for k, v in SCORE_COLUMNS.items() if k in frame})
    missing = [c for c in ("item_id", "variant", "answer") if c not in frame]
    if "gold" not in frame and "correct" not in frame:
        missing.append("gold (or correct)")
    if missing:
        raise InputError(f"{spec}: missing column(s) {', '.join(missing)}. Fix: see the "
                         "answers table's columns in docs/how-to/robustness.md")
    frame["variant"] = frame["variant"].astype(str).replace({"0": "original"})
    frame["answer"] = frame["answer"].fillna("").astype(str)
    frame["suite"] = frame.get("suite", "multiqa")
    frame["status"] = "ok"
    frame["answer_normalised"] = frame["answer"].map(normalise)
    judge = Judge(correctness)  # type: ignore[arg-type]
    if "gold" in frame:
        golds = frame["gold"].map(_golds)
        multi = frame["suite"] == "maqa"
        # MAQA rows are judged as answer sets (precision > 0.5), the rest as one answer
        scored = {index: judge.multi(frame.at[index, "answer"], golds[index])
                  for index in frame.index[multi]}
        for position, name in enumerate(("precision", "recall", "f1"), start=1):
            if scored:
                frame[name] = pd.Series({i: v[position] for i, v in scored.items()},
                                        index=frame.index, dtype=float)
        computed = pd.Series([scored[i][0] if i in scored else judge.free_text(a, golds[i])
                              for i, a in frame["answer"].items()], index=frame.index)
        frame["correct"] = frame["correct"].fillna(computed) if "correct" in frame \
            else computed
    frame["correct"] = frame["correct"].astype(bool)
    if "sample" not in frame:
        frame["sample"] = 0
    summary = summarise_frame(frame, seed or 0, possible_answers)
    summary["source"] = str(path)
    models = frame["model"].dropna().astype(str).unique() if "model" in frame else []
    summary["model"] = models[0] if len(models) == 1 else \
        f"{len(models)} models" if len(models) else "(not in the table)"
    summary["dataset"] = path.name
    return summary


def _run_answers(path: Path) -> tuple[list[QAAnswer], RunSpec | None] | None:
    """The answers of a robustness run's log and the run's spec, or None when the file
    is not such a log."""
    from fbi.runs import read_spec

    with open(path, "rb") as file:
        first = file.readline()
    try:
        QAAnswer.model_validate_json(first)
    except ValueError:
        return None
    contents = read_log(path, QAAnswer)
    if contents.problem():
        raise InputError(contents.problem())
    run = read_spec(path.parent / "run.json")
    if run is not None and run.kind != "robustness":
        run = None
    return list(contents.latest().values()), run


def _golds(value) -> tuple[str, ...]:
    if isinstance(value, list | tuple | np.ndarray):
        return tuple(str(v) for v in value)
    text = str(value)
    if text.startswith("["):
        try:
            return tuple(str(v) for v in json.loads(text))
        except json.JSONDecodeError:
            pass
    return tuple(part.strip() for part in text.split("|") if part.strip())
