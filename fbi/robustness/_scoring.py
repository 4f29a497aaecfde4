"""Scoring QA answers: the correctness of one answer, the answer record
(``answers.jsonl``), and every suite's metrics from a table of answers — a run's own log
or any answers table (``fbi robustness score``), with no model call.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fbi.errors import InputError
from fbi.files import open_regular
from fbi.logs import read_log
from fbi.metrics import (
    MAQAMetrics,
    MultiQAMetrics,
    NoiseSuite,
    RetestMetrics,
    RobustnessResults,
    SuiteResults,
    auroc,
    multiqa_metrics,
    noise_group_metrics,
    noise_metrics,
    response_consistency,
    retest_metrics,
)
from fbi.records import CallRecord
from fbi.robustness._items import LETTERS, Judge, normalise, parse_letter, split_answers
from fbi.run_spec import Parameters, RunSpec

SUITES = ("multiqa", "noise", "shuffle", "maqa")


class QAAnswer(CallRecord):
    """One answer to one question variant: a line of ``answers.jsonl``.
    ``call_id`` is ``item|suite|variant|sample``."""

    item_id: str
    """The QA item asked."""
    kind: str
    """The item's kind (extractive, multiple-choice, abstractive, multi-answer)."""
    suite: str
    """The suite that asked."""
    variant: str
    """The variant's id (``original``, ``rephrase-2``, ...)."""
    variant_kind: str
    """The variant's kind (original, rephrase, noise, ...)."""
    sample: int = 0
    """Which of the suite's samples it is."""
    question: str
    """The question as asked."""
    choices: list[str] | None = None
    """The choices as shown, in their shown order."""
    gold: list[str]
    """The gold answers."""
    gold_letter: str | None = None
    """The gold choice's letter in the shown order (multiple-choice)."""
    model: str
    """The model answering."""
    answer: str | None = None
    """As given (a letter for multiple choice)."""
    answer_normalised: str | None = None
    """For agreement: the chosen option's text for MC."""
    confidence: float | None = None
    """Verbalised, 0–1."""
    token_confidence: dict[str, float] | None = None
    """Max softmax, margin, neg. entropy."""
    correct: bool | None = None
    """Whether the answer counts as correct under the run's correctness rule."""
    precision: float | None = None
    """Token precision against the best-matching gold answer."""
    recall: float | None = None
    """Token recall against the best-matching gold answer."""
    f1: float | None = None
    """Token F1 against the best-matching gold answer."""


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


# ------------------------------------------------------------------ scoring


def answers_frame(answers: list[QAAnswer]) -> pd.DataFrame:
    """The answers as a DataFrame, one row per answer."""
    return pd.DataFrame([a.model_dump() for a in answers])


def summarise(answers: list[QAAnswer], seed: int = 0, possible_answers: int | None = None,
              requested: tuple[str, ...] | None = None,
              planned: set[str] | None = None) -> RobustnessResults:
    """Every robustness metric of a run's answers, per suite, with failed and skipped suites
    and why."""
    frame = answers_frame(answers) if answers else pd.DataFrame()
    return summarise_frame(frame, seed, possible_answers, requested, planned)


class _Incomplete(Exception):
    """A suite's answers are usable, but no question has every variant it needs."""


#: Why a suite gave no metric though some of its answers are usable.
_INCOMPLETE = {
    "multiqa": "no question has its original and a rephrasing both answered "
               "({unusable} of {rows} answers unusable; check rewrites.jsonl)",
    "shuffle": "no question answered in every order ({unusable} of {rows} unusable)",
}
_NOTHING_OF_ITS_KIND = {"shuffle": "no multiple-choice question",
                        "maqa": "no multi-answer question"}


def summarise_frame(frame: pd.DataFrame, seed: int = 0,
                    possible_answers: int | None = None,
                    requested: tuple[str, ...] | None = None,
                    planned: set[str] | None = None) -> RobustnessResults:
    """Every suite's metrics from an answers table (the columns of ``answers.jsonl``).

    A requested suite whose answers give no metric (no usable answers, or MultiQ&A with
    no rephrasing answered) is listed in ``failed_suites`` with the reason, never
    dropped; one with no question of its kind (``shuffle`` needs multiple choice,
    ``maqa`` multi-answer questions) is listed in ``skipped_suites``.
    """
    present = set(frame["suite"]) if "suite" in frame else set()
    planned = present if planned is None else planned
    requested = tuple(requested) if requested else tuple(s for s in SUITES if s in present)
    usable = frame[frame["status"] == "ok"] if "status" in frame else frame
    scorers = {"multiqa": lambda g: _multiqa(g, seed, possible_answers),
               "noise": lambda g: _noise(g, seed), "shuffle": _shuffle, "maqa": _maqa}
    suites, failed, skipped = {}, {}, {}
    for suite in requested:
        if suite not in planned:
            skipped[suite] = _NOTHING_OF_ITS_KIND.get(suite, "no question for this suite")
            continue
        group = usable[usable["suite"] == suite] if len(usable) else usable
        rows = frame[frame["suite"] == suite] if "suite" in frame else frame
        unusable = int((rows["status"] != "ok").sum()) if "status" in rows else 0
        try:
            metrics = scorers[suite](group) if len(group) else None
        except _Incomplete:
            failed[suite] = _INCOMPLETE[suite].format(unusable=unusable, rows=len(rows))
            continue
        if metrics is None:
            failed[suite] = f"no usable answers ({unusable} of {len(rows)} unusable)"
        else:
            suites[suite] = metrics
    return RobustnessResults(answers=len(frame), unusable_answers=len(frame) - len(usable),
                             suites=SuiteResults(**suites), failed_suites=failed,
                             skipped_suites=skipped)


def _matrix(group: pd.DataFrame, variants: list[str], column: str) -> tuple[pd.DataFrame, int]:
    table = group.pivot_table(index="item_id", columns="variant", values=column,
                              aggfunc="first")
    complete = table.reindex(columns=variants).dropna()
    return complete, len(table) - len(complete)


def _multiqa(group: pd.DataFrame, seed: int, possible_answers: int | None) -> MultiQAMetrics:
    variants = ["original", *sorted(v for v in group["variant"].unique() if v != "original")]
    correct, dropped = _matrix(group.assign(correct=group["correct"].astype(float)),
                               variants, "correct")
    normalised, _ = _matrix(group, variants, "answer_normalised")
    common = correct.index.intersection(normalised.index)
    if len(common) == 0 or len(variants) < 2:
        raise _Incomplete
    metrics = multiqa_metrics(correct.loc[common].to_numpy(),
                              normalised.loc[common].astype(str).to_numpy(),
                              k_possible=possible_answers, seed=seed)
    return metrics.model_copy(update={
        "dropped_incomplete": dropped + len(correct) - len(common)})


def _noise(group: pd.DataFrame, seed: int) -> NoiseSuite | None:
    table = group.assign(correct=group["correct"].astype(float)).pivot_table(
        index="item_id", columns="variant", values="correct", aggfunc="first")
    if "original" not in table:
        return None
    noises = sorted(c for c in table.columns if c != "original")
    by_noise = {}
    for variant in noises:
        pair = table[["original", variant]].dropna()
        if len(pair):
            by_noise[variant] = noise_metrics(pair["original"].to_numpy(),
                                              pair[variant].to_numpy(), seed=seed)
    if not by_noise:
        return None
    groups = noise_group_metrics(table["original"].to_numpy(), table[noises].to_numpy(),
                                 seed=seed)
    return NoiseSuite(groups=groups, by_noise=by_noise)


def _shuffle(group: pd.DataFrame) -> RetestMetrics:
    variants = ["original", *sorted(v for v in group["variant"].unique() if v != "original")]
    correct, dropped = _matrix(group.assign(correct=group["correct"].astype(float)),
                               variants, "correct")
    if correct.empty or len(variants) < 2:
        raise _Incomplete
    metrics = retest_metrics(correct["original"].to_numpy(), correct[variants[1:]].to_numpy())
    return metrics.model_copy(update={"dropped_incomplete": dropped})


#: The token-confidence figures MAQA reports an AUROC of (`token_confidence`).
TOKEN_CONFIDENCES = ("max_softmax", "margin", "neg_entropy")


def _maqa(group: pd.DataFrame) -> MAQAMetrics:
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
        tokens = pd.DataFrame([t if isinstance(t, dict) else {}
                               for t in group["token_confidence"]])
        for name in TOKEN_CONFIDENCES:
            if name in tokens:
                result[f"auroc_{name}"] = auroc(tokens[name].to_numpy(dtype=float), correct)
    return MAQAMetrics(**result)


SCORE_COLUMNS = {"question_id": "item_id", "id": "item_id", "shuffle": "variant",
                 "shuffle_id": "variant", "variant_id": "variant"}


def score_answers(spec: str, correctness: str = "f1", seed: int | None = None,
                  possible_answers: int | None = None) -> RobustnessResults:
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
            parameters = run.parameters if run else Parameters()
            summary = summarise(
                answers, (parameters.seed or 0) if seed is None else seed,
                possible_answers or parameters.possible_answers,
                tuple(run.selection.suites or ()) if run else None)
            named = {} if run is None else {  # as the run named them (the tables' titles)
                "model": run.model, "dataset": run.dataset.spec or path.parent.name}
            return summary.model_copy(update={"source": str(path), **named})
    # (CSV: an empty cell is empty text, never pandas' NaN, whose text "nan" would be a gold)
    readers = {".jsonl": _exact_jsonl, ".csv": lambda p: pd.read_csv(p, keep_default_na=False),
               ".parquet": pd.read_parquet}
    if path.suffix.lower() not in readers:
        raise InputError(f"{spec}: unsupported file type. Fix: use .jsonl, .csv or .parquet")
    try:
        frame = readers[path.suffix.lower()](path)
    except (ValueError, OSError) as error:
        raise InputError(f"{spec}: could not be read ({error}). Fix: check the file") \
            from None
    if "_where" not in frame:  # pandas' rows, counted from 1
        frame["_where"] = [f"row {n}" for n in range(1, len(frame) + 1)]
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
    if "correct" in frame:
        frame["correct"] = [_as_correct(value, where, spec) for value, where in
                            zip(frame["correct"], frame["_where"], strict=True)]
    judge = Judge(correctness)  # type: ignore[arg-type]
    if "gold" in frame:
        golds = frame["gold"].map(_golds)
        given = frame["correct"].notna() if "correct" in frame else \
            pd.Series(False, index=frame.index)
        for index in frame.index[~given & (golds.map(len) == 0)]:
            raise InputError(f"{spec}, {frame.at[index, '_where']}: an empty gold and no "
                             "correct. Fix: give the gold answer(s), or correct: true/false")
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
    for index in frame.index[frame["correct"].isna()]:
        raise InputError(f"{spec}, {frame.at[index, '_where']}: neither correct nor a gold "
                         "answer. Fix: give one of them")
    frame["correct"] = frame["correct"].astype(bool)
    if "sample" not in frame:
        frame["sample"] = 0
    models = frame["model"].dropna().astype(str).unique() if "model" in frame else []
    return summarise_frame(frame, seed or 0, possible_answers).model_copy(update={
        "source": str(path), "dataset": path.name,
        "model": models[0] if len(models) == 1 else
        f"{len(models)} models" if len(models) else "(not in the table)"})


#: What a ``correct`` cell may say: a boolean, 1 or 0, or these words (any case).
_CORRECT_WORDS = {"true": True, "false": False, "1": True, "0": False, "yes": True,
                  "no": False, "1.0": True, "0.0": False}


def _as_correct(value: Any, where: str, spec: str) -> bool | None:
    """A ``correct`` cell as True, False or None (empty); anything else is refused, never
    read as true because it is a non-empty string ("maybe")."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | float | np.integer | np.floating) and value in (0, 1):
        return bool(value)
    said = _CORRECT_WORDS.get(str(value).strip().lower())
    if said is None:
        raise InputError(f"{spec}, {where}: correct {value!r} is neither true nor false. "
                         "Fix: write true or false (or 1 / 0), or leave it empty to compute "
                         "it from gold")
    return said


def _exact_jsonl(path: Path) -> pd.DataFrame:
    """A JSON Lines answers table read exactly (fbi's reader: no NaN, no huge integers,
    no coerced columns), each row with its line."""
    from fbi.datasets import read_file_rows
    from fbi.errors import DatasetError

    rows = []
    try:
        for row in read_file_rows(path, [], {}, "fbi"):
            if "__error__" in row.data:
                message, fix = row.data["__error__"]
                raise InputError(f"{path}, {row.location}: {message}. Fix: {fix}")
            rows.append({**row.data, "_where": row.location})
    except DatasetError as error:
        raise InputError(str(error)) from None
    return pd.DataFrame(rows)


def _run_answers(path: Path) -> tuple[list[QAAnswer], RunSpec | None] | None:
    """The answers of a robustness run's log and the run's spec, or None when the file
    is not such a log."""
    from fbi.runs import read_spec

    with open_regular(path, "rb") as file:
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
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, list | tuple | np.ndarray):
        return tuple(str(v) for v in value)
    text = str(value)
    if text.startswith("["):
        try:
            return tuple(str(v) for v in json.loads(text))
        except json.JSONDecodeError:
            pass
    return tuple(part.strip() for part in text.split("|") if part.strip())
