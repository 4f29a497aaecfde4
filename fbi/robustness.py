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

import asyncio
import datetime as dt
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fbi.errors import InputError, ModelError
from fbi.llm import LOCAL_JUDGE, ModelClient, ModelRequest
from fbi.parsing import json_object_in
from fbi.qa import LETTERS, Judge, QAItem, normalise, parse_letter, parse_reply, split_answers
from fbi.qa_metrics import (
    auroc,
    multiqa_metrics,
    noise_metrics,
    response_consistency,
    retest_metrics,
    token_confidence,
)
from fbi.records import CallRecord
from fbi.runner import Progress, RecordLog, RunTotals, Task, run_tasks
from fbi.templates import TemplateFolder
from fbi.variants import Variant, noise_variants, original, rephrase_variants, shuffle_variants

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

    @property
    def reply_tokens(self) -> int:
        return self.max_tokens or 200


@dataclass(frozen=True)
class AnswerJob:
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
                 dataset_spec: str = "sample"):
        unknown = set(config.suites) - set(SUITES)
        if unknown:
            from fbi.taxonomy import unknown_name_message

            raise InputError(unknown_name_message("suite", sorted(unknown)[0], list(SUITES)))
        self.items, self.config, self.dataset_spec = items, config, dataset_spec
        self.output_dir = Path(output_dir)
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
        # MAQA asks for token log-probabilities where the provider can give them.
        top_logprobs = 5 if job.suite == "maqa" and not self.config.model.startswith(
            "local/") else 0
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

    # -- running -------------------------------------------------------------------

    def run(self, client: ModelClient, progress: Progress | None = None) -> RunTotals:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._write_run_json()
        rewrites: dict[str, list[str]] = {}
        if self.needs_rewrites():
            log = RecordLog(self.output_dir / "rewrites.jsonl", RewriteCall)
            tasks = [Task(f"{item.id}|rewrite", self._rewrite_task(client, item))
                     for item in self.items]
            try:
                asyncio.run(run_tasks(tasks, log, self.config.concurrency, None))
            finally:
                log.close()
            done = RecordLog(self.output_dir / "rewrites.jsonl", RewriteCall)
            done.close()
            rewrites = {r.item_id: r.rewrites for r in done.finished.values()
                        if r.status == "ok"}
        jobs = self.plan_answers(rewrites)
        log = RecordLog(self.output_dir / "answers.jsonl", QAAnswer)
        tasks = [Task(job.call_id, self._answer_task(client, job)) for job in jobs]
        try:
            totals = asyncio.run(run_tasks(tasks, log, self.config.concurrency, progress))
        finally:
            log.close()
        answers = [a for a in RecordLog(self.output_dir / "answers.jsonl", QAAnswer)
                   .finished.values()]
        summary = summarise(answers, self.config.seed, self.config.possible_answers)
        summary["model"] = self.config.model
        summary["dataset"] = self.dataset_spec
        (self.output_dir / "robustness.json").write_text(
            json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return totals

    def _write_run_json(self) -> None:
        from fbi import __version__

        spec = {"schema_version": 1, "kind": "robustness", "fbi_version": __version__,
                "model": self.config.model, "api_base": self.config.api_base,
                "suites": list(self.config.suites), "dataset": {
                    "spec": self.dataset_spec, "questions": len(self.items),
                    "fingerprint": hashlib.sha256("\n".join(
                        i.model_dump_json() for i in self.items).encode()).hexdigest()},
                "parameters": {k: v for k, v in self.config.__dict__.items()
                               if k not in ("model", "suites", "api_base")},
                "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        (self.output_dir / "run.json").write_text(json.dumps(spec, indent=2) + "\n",
                                                  encoding="utf-8")

    def _rewrite_task(self, client: ModelClient, item: QAItem):
        request = self.rewrite_request(item)

        async def run() -> RewriteCall:
            record = {"call_id": f"{item.id}|rewrite", "item_id": item.id,
                      "model": request.model, "prompt_hash": _hash(request)}
            try:
                response = await client.complete(request)
            except ModelError as error:
                return RewriteCall(**record, status="error", reason=str(error))
            rewrites = _parse_rewrites(response.text, item.question)[: self.config.rephrasings]
            return RewriteCall(
                **record, raw_output=response.text, rewrites=rewrites,
                status="ok" if rewrites else "unparseable",
                reason=None if rewrites else "no rewrites in the reply", **response.usage())
        return run

    def _answer_task(self, client: ModelClient, job: AnswerJob):
        request = self.answer_request(job)

        async def run() -> QAAnswer:
            variant, item = job.variant, job.item
            record: dict[str, Any] = {
                "call_id": job.call_id, "item_id": item.id, "kind": item.kind,
                "suite": job.suite, "variant": variant.id, "variant_kind": variant.kind,
                "sample": job.sample, "question": variant.question,
                "choices": list(variant.choices) if variant.choices else None,
                "gold": list(item.answers), "gold_letter": variant.gold_letter(item),
                "model": request.model, "prompt_hash": _hash(request)}
            try:
                response = await client.complete(request)
            except ModelError as error:
                return QAAnswer(**record, status="error", reason=str(error))
            usage = response.usage()
            answer, confidence = parse_reply(response.text)
            scored = score_answer(self.judge, item.kind, answer, tuple(item.answers),
                                  variant.choices, record["gold_letter"])
            status = "ok" if scored["answer"] else "unparseable"
            return QAAnswer(**record, raw_output=response.text, confidence=confidence,
                            token_confidence=token_confidence(response.token_logprobs),
                            status=status, reason=None if status == "ok" else "no answer",
                            **scored, **usage)
        return run


def score_answer(judge: Judge, kind: str, answer: str, golds: tuple[str, ...],
                 choices: tuple[str, ...] | None, gold_letter: str | None) -> dict:
    """Correctness fields of one answer (see fbi.qa for the rules of each kind)."""
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
        if isinstance(rewrite, str) and rewrite.strip() and normalise(rewrite) not in seen:
            seen.add(normalise(rewrite))
            kept.append(rewrite.strip())
    return kept


def _hash(request: ModelRequest) -> str:
    return hashlib.sha256(json.dumps(request.messages).encode()).hexdigest()


def _distractors() -> list[str]:
    from importlib import resources

    import yaml

    text = resources.files("fbi.data").joinpath("distractors.yaml").read_text("utf-8")
    return list(yaml.safe_load(text)["passages"])


# ------------------------------------------------------------------ scoring


def answers_frame(answers: list[QAAnswer]) -> pd.DataFrame:
    return pd.DataFrame([a.model_dump() for a in answers])


def summarise(answers: list[QAAnswer], seed: int = 0, possible_answers: int | None = None
              ) -> dict:
    frame = answers_frame(answers) if answers else pd.DataFrame()
    return summarise_frame(frame, seed, possible_answers)


def summarise_frame(frame: pd.DataFrame, seed: int = 0,
                    possible_answers: int | None = None) -> dict:
    """Every suite's metrics from an answers table (the columns of ``answers.jsonl``)."""
    result: dict[str, Any] = {"schema_version": 1, "answers": len(frame), "suites": {}}
    if frame.empty:
        return result
    usable = frame[frame["status"] == "ok"] if "status" in frame else frame
    result["unusable_answers"] = int(len(frame) - len(usable))
    for suite, group in usable.groupby("suite"):
        if suite == "multiqa":
            result["suites"]["multiqa"] = _multiqa(group, seed, possible_answers)
        elif suite == "noise":
            result["suites"]["noise"] = _noise(group, seed)
        elif suite == "shuffle":
            result["suites"]["shuffle"] = _shuffle(group)
        elif suite == "maqa":
            result["suites"]["maqa"] = _maqa(group)
    return result


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
    result = {}
    for variant in sorted(c for c in table.columns if c != "original"):
        pair = table[["original", variant]].dropna()
        if len(pair):
            result[variant] = _clean(noise_metrics(pair["original"].to_numpy(),
                                                   pair[variant].to_numpy(), seed=seed))
    return result


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


def score_answers(spec: str, correctness: str = "f1", seed: int = 0,
                  possible_answers: int | None = None) -> dict:
    """Metrics from an answers table a user brings (JSONL, CSV or Parquet); no model."""
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{spec}: no such file. Fix: give an answers table "
                         "(.jsonl, .csv or .parquet)")
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
                         "answers table schema in the README")
    frame["variant"] = frame["variant"].astype(str).replace({"0": "original"})
    frame["answer"] = frame["answer"].fillna("").astype(str)
    frame["suite"] = frame.get("suite", "multiqa")
    frame["status"] = "ok"
    frame["answer_normalised"] = frame["answer"].map(normalise)
    if "correct" not in frame or frame["correct"].isna().any():
        judge = Judge(correctness)  # type: ignore[arg-type]
        golds = frame["gold"].map(_golds)
        computed = [judge.free_text(a, g) for a, g in zip(frame["answer"], golds, strict=True)]
        frame["correct"] = frame["correct"].fillna(pd.Series(computed, index=frame.index)) \
            if "correct" in frame else computed
    frame["correct"] = frame["correct"].astype(bool)
    if "sample" not in frame:
        frame["sample"] = 0
    summary = summarise_frame(frame, seed, possible_answers)
    summary["source"] = str(path)
    return summary


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
