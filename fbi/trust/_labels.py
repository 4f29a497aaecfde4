"""Human labels (``fbi trust --human FILE``, ``fbi report --human FILE``): one file read
into [`HumanLabel`][fbi.metrics.HumanLabel]s, each bad row refused with its file and line.
Label Studio's JSON export of the tasks `fbi export label-studio` wrote is read as it is
(`_label_studio`).

The file is any table fbi reads (.jsonl, .csv, .tsv, .parquet), one label a row:

* ``instance_id`` — or ``prompt`` and ``perturbed_answer``, the instance's instruction and
  perturbed answer as its dataset holds them;
* ``verdict`` — ``a`` (the gold answer is better), ``b`` (the perturbed one) or ``tie``;
  MT-Bench's ``model_a``/``model_b``/``tie (bothbad)`` are read as the same; and/or
* ``score`` — a number, the person's score of the answer ``scored`` names (``gold`` or
  ``perturbed``, the default);
* ``annotator`` — optional; several annotators' labels give the human–human agreement.

MT-Bench's published human judgments (``question_id``, ``model_a``, ``model_b``,
``winner``, ``judge``, ``turn``) are read as they are: the row names the instance whose
original id is the question id, whose gold answer is ``model_a``'s and perturbed answer
``model_b``'s (provenance ``gold_model`` and ``generator``: a preference set's
``chosen_model`` and ``rejected_model``) at that turn — or the other way round, the
verdict then turned round too; ``winner`` is the verdict and ``judge`` the annotator.
Rows by the paper's authors (``judge`` ``author_*``) are left out, and their number
said: FastChat's ``compute_agreement.py`` counts only the ``expert_*`` judges as people
(issue 53) — unless asked (`HumanSource` with ``authors``; ``--human-authors``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import DatasetError, InputError, Problem
from fbi.metrics import HumanLabel
from fbi.trust._items import one_sided_labels
from fbi.trust._label_file import is_label_file, read_label_rows
from fbi.trust._label_studio import TaskIndex, is_label_studio_task, labels_of_task

#: A Label Studio annotation that chose no verdict (counted, said, left out).
_NO_CHOICE = object()

#: The verdict words read, exactly (MT-Bench's human judgments: model_a, model_b, tie,
#: "tie (bothbad)"); anything else, "tiebreaker-b" included, is refused.
_VERDICTS = {"a": "a", "model_a": "a", "b": "b", "model_b": "b", "tie": "tie",
             "tie (bothbad)": "tie", "tie(bothbad)": "tie"}


@dataclass(frozen=True)
class HumanSource:
    """A labels file and how to read it, where a path alone does not say enough."""

    path: Path
    """The file."""
    authors: bool = False
    """Count MT-Bench's ``author_*`` judges as people too (FastChat counts only the
    ``expert_*`` ones)."""

    def __str__(self) -> str:
        return str(self.path)


def read_human_labels(source: str | Path | HumanSource, instances: dict[str, object]
                      ) -> tuple[list[HumanLabel], list[str]]:
    """The labels of ``source`` and the warnings about them (MT-Bench rows of pairs no
    run holds, rows left out). ``instances``: id → instance of the runs reported. A bad
    row is an InputError naming its file and line or row."""
    from fbi.datasets import RawRow, read_rows, readable_rows

    path = source.path if isinstance(source, HumanSource) else source
    authors_count = isinstance(source, HumanSource) and source.authors
    by_text: dict[tuple, str] = {}
    for i in instances.values():
        # best-of-N rows pair one rejected answer with several chosen ones: texts that
        # name more than one instance name none (`AMBIGUOUS`), never the last of them
        key = (i.instruction, i.perturbed_answer)
        by_text[key] = i.id if by_text.get(key, i.id) == i.id else AMBIGUOUS
    by_text.update(_by_models(instances))
    problems: list[Problem] = []
    labels, unknown, authors, unchosen = [], 0, 0, 0
    if is_label_file(path):  # fbi label's own file: its one reader, retractions applied
        rows = [RawRow(str(path), f"line {r.line}", {
            "instance_id": r.instance_id, "verdict": r.verdict, "annotator": r.annotator})
            for r in read_label_rows(path)]
    else:
        try:
            rows = list(read_rows(str(path), [], problems, "fbi"))
        except DatasetError as error:
            raise InputError(f"--human: {error}") from None
    first_at: dict[tuple, str] = {}  # (instance, annotator, what) → where first labelled
    tasks: list[TaskIndex] = []  # made when a Label Studio task is first seen
    for row in readable_rows(rows, problems):
        try:
            if is_label_studio_task(row.data) and not tasks:
                tasks.append(TaskIndex(instances.values()))
            found = [_label(data, by_text, authors_count) if data is not None else _NO_CHOICE
                     for data in (labels_of_task(row.data, tasks[0])
                                  if is_label_studio_task(row.data) else [row.data])]
        except ValueError as error:
            problems.append(Problem(row.file, row.location, str(error),
                                    "correct the row (its columns: docs/how-to/compare-judges.md)"))
            continue
        for label in found:
            if label is _NO_CHOICE:
                unchosen += 1
                continue
            if label is None:
                authors += 1
                continue
            kinds = ([("verdict",)] if label.verdict else []) + \
                ([("score", label.answer)] if label.score is not None else [])
            repeated = [first_at[key] for kind in kinds
                        if (key := (label.instance_id, label.annotator, *kind)) in first_at]
            if repeated:  # one person counted twice: a ceiling of agreeing with itself
                problems.append(Problem(
                    row.file, row.location, f"annotator {label.annotator!r} labels instance "
                    f"{label.instance_id!r} again (first at {repeated[0]})",
                    "keep one label per person and instance; give each person's rows "
                    "their own annotator"))
                continue
            for kind in kinds:
                first_at[(label.instance_id, label.annotator, *kind)] = row.location
            if label.instance_id not in instances:
                if not _is_mt_bench(row.data):  # an id given outright names nothing
                    problems.append(Problem(
                        row.file, row.location, f"instance {label.instance_id!r} is in no "
                        "run given", "give the runs these labels were made on (a "
                        "published set's MT-Bench rows of other pairs are left out, said)"))
                    continue
                unknown += 1
                continue
            labels.append(label)
    if problems:
        raise InputError(f"--human: {problems[0]}" + (
            f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    warnings = _left_out(path, unknown, authors)  # (unknown: MT-Bench rows of other pairs)
    if unchosen:
        warnings.append(f"{path}: {unchosen} Label Studio annotation(s) choose no verdict "
                        "(no A, B or Tie in a 'verdict' region); they are left out")
    warnings += [note for note in [one_sided_labels(labels, str(path))] if note]
    if not labels:
        raise InputError(f"--human {path}: no label names an instance of these runs. Fix: "
                         "give instance_id (as in the runs' instances.jsonl), or prompt and "
                         "perturbed_answer")
    return labels, warnings


def _left_out(path, unknown: int, authors: int) -> list[str]:
    """What reading the labels left out, said."""
    said = [f"{path}: {unknown} MT-Bench row(s) name pairs that no run reported holds; "
            "they are left out"] if unknown else []
    if authors:
        said.append(f"{path}: {authors} MT-Bench row(s) by the paper's authors (judge "
                    "author_*) are left out: as FastChat's compute_agreement counts, only "
                    "the expert_* judges are people")
    return said


def _by_models(instances: dict[str, object]) -> dict[tuple, str]:
    """(question id, model of the gold answer, model of the perturbed one, turn) → the
    instance, for MT-Bench's human judgments; the pair the other way round maps to the
    instance with a ``~swapped`` mark, so its verdict is turned round."""
    found: dict[tuple, str] = {}
    swapped: dict[tuple, set[str]] = {}
    for i in instances.values():
        p = getattr(i, "provenance", None)  # (callers may pass lighter records)
        if p is None or not (p.original_id and p.gold_model and p.generator):
            continue
        turn = getattr(i, "turn", 1)
        key = (p.original_id, p.gold_model, p.generator, turn)
        found[key] = i.id if found.get(key, i.id) == i.id else AMBIGUOUS  # type: ignore
        swapped.setdefault((p.original_id, p.generator, p.gold_model, turn),
                           set()).add(i.id + SWAPPED)  # type: ignore[attr-defined]
    for key, ids in swapped.items():  # a pair the right way round wins
        found.setdefault(key, ids.pop() if len(ids) == 1 else AMBIGUOUS)
    return found


SWAPPED = "\x00swapped"
#: What texts (or MT-Bench's models) that match several instances map to.
AMBIGUOUS = "\x00ambiguous"


def _label(data: dict, by_text: dict[tuple, str], authors: bool = False
           ) -> HumanLabel | None:
    def text(name: str) -> str:
        value = data.get(name)
        if isinstance(value, bool | list | dict):  # never "True" or "['a']" by str()
            raise ValueError(f"{name} {json.dumps(value)} is not text. Fix: write the "
                             f"{name} as text")
        return "" if value is None else str(value).strip()

    if _is_mt_bench(data):
        return _mt_bench_label(data, by_text, text, authors)

    instance_id = text("instance_id")
    if not instance_id:
        if not (text("prompt") and text("perturbed_answer")):
            raise ValueError("no instance_id, and no prompt with perturbed_answer")
        instance_id = by_text.get((str(data["prompt"]), str(data["perturbed_answer"])), "")
        if not instance_id:
            raise ValueError("prompt and perturbed_answer match no instance of the runs")
        if instance_id == AMBIGUOUS:
            raise ValueError("prompt and perturbed_answer match several instances of the "
                             "runs (a best-of-N row pairs one answer with several); give "
                             "the instance_id")
    verdict = text("verdict").lower()
    if verdict:
        verdict = _VERDICTS.get(verdict, "")
        if not verdict:
            raise ValueError(f"verdict {text('verdict')!r}: give a, b or tie (or MT-Bench's "
                             "model_a, model_b, tie, tie (bothbad))")
    score = None
    if text("score"):
        if isinstance(data.get("score"), bool):
            raise ValueError(f"score {text('score')!r} is not a number")
        try:
            score = float(text("score"))
        except ValueError:
            raise ValueError(f"score {text('score')!r} is not a number") from None
        if not math.isfinite(score):
            raise ValueError(f"score {text('score')!r} is not a finite number (one NaN "
                             "would turn every correlation it enters)")
    scored = text("scored").lower() or "perturbed"
    if scored not in ("gold", "perturbed"):
        raise ValueError(f"scored {text('scored')!r}: give gold or perturbed")
    if not verdict and score is None:
        raise ValueError("neither a verdict nor a score")
    return HumanLabel(instance_id, text("annotator") or "human", verdict or None, score,
                      scored)  # type: ignore[arg-type]


def _is_mt_bench(data: dict) -> bool:
    """A row of MT-Bench's published human judgments."""
    return "question_id" in data and "model_a" in data and "model_b" in data


def _mt_bench_label(data: dict, by_models: dict[tuple, str], text, authors: bool
                    ) -> HumanLabel | None:
    """A row of MT-Bench's human judgments (see the module docstring); None for a row by
    the paper's authors, unless ``authors``."""
    if text("judge").startswith("author") and not authors:
        return None
    turn = text("turn") or "1"
    if not turn.isdigit() or isinstance(data.get("turn"), bool):
        raise ValueError(f"turn {text('turn')!r} is not a turn number")
    verdict = _VERDICTS.get(text("winner").lower(), "")
    if not verdict:
        raise ValueError(f"winner {text('winner')!r}: give model_a, model_b, tie or "
                         "tie (bothbad)")
    key = (text("question_id"), text("model_a"), text("model_b"), int(turn))
    instance_id = by_models.get(key, f"mt-bench:{key[0]}:{key[1]}:{key[2]}:t{turn}")
    if instance_id == AMBIGUOUS:
        raise ValueError(f"question {key[0]}, {key[1]} against {key[2]} (turn {turn}) "
                         "matches several instances of the runs; label them by instance_id")
    if instance_id.endswith(SWAPPED):
        instance_id = instance_id.removesuffix(SWAPPED)
        verdict = {"a": "b", "b": "a"}.get(verdict, verdict)
    return HumanLabel(instance_id, text("judge") or text("annotator") or "human",
                      verdict, None, "perturbed")  # type: ignore[arg-type]
