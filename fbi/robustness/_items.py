"""QA items for the robustness suites: loading, answer normalisation, and correctness.

An item is a question with its gold answer(s), optional choices (multiple choice) and
optional context (extractive QA). Its kind decides the answering prompt and how an
answer is judged right:

* ``extractive`` and ``abstractive``: normalised exact match, token F1 over a threshold,
  or embedding similarity over a threshold (``--correctness``);
* ``multiple-choice``: the parsed choice letter against the (remapped) key;
* ``multi-answer``: the set of answers given, against the gold set; right iff its
  precision is higher than 0.5 (MAQA, Yang et al. 2024, §4.3: "the prediction label
  as 1 if the precision score is higher than 0.5").
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from importlib import resources
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from fbi.errors import DatasetError, InputError, Problem
from fbi.records import content_id

if TYPE_CHECKING:
    from fbi.datasets import Reader

Kind = Literal["extractive", "multiple-choice", "abstractive", "multi-answer"]
LETTERS = "ABCDEFGHIJ"


class QAItem(BaseModel):
    """One QA item: a question, its gold answers, and optional choices and context."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    """The record format's version."""
    id: str
    """Unique within its file."""
    kind: Kind
    """``extractive``, ``multiple-choice``, ``abstractive`` or ``multi-answer``."""
    question: str = Field(min_length=1)
    """The question."""
    answers: tuple[str, ...] = Field(min_length=1)
    """Gold; for multiple choice: the choice text."""
    choices: tuple[str, ...] | None = None
    """The choices of a multiple-choice item."""
    context: str | None = None
    """The passage an extractive item's answer comes from."""

    @property
    def gold_letter(self) -> str | None:
        if not self.choices:
            return None
        return LETTERS[self.choices.index(self.answers[0])]


# ------------------------------------------------------------------ loading


def load_qa_items(spec: str = "sample") -> tuple[list[QAItem], int]:
    """QA items from the built-in sample or any file/folder SPEC; rows read are returned."""
    from fbi.datasets import with_line_numbers

    if spec == "sample":
        import yaml

        text = resources.files("fbi.data").joinpath("qa_sample.yaml").read_text("utf-8")
        rows = [("qa-sample", f"item {n}", item)
                for n, item in enumerate(yaml.safe_load(text)["items"], start=1)]
        return _qa_items(rows)
    return with_line_numbers(spec, lambda reader: _qa_items(_read(spec, reader)))


def _read(spec: str, reader: Reader) -> list[tuple[str, str, dict]]:
    from fbi.datasets import read_rows

    problems: list[Problem] = []
    raw = list(read_rows(spec, [], problems, reader))
    if problems:
        raise DatasetError(problems, rows_read=len(raw))
    return [(r.file, r.location, r.data) for r in raw]


def _qa_items(rows: list[tuple[str, str, dict]]) -> tuple[list[QAItem], int]:
    items, problems, seen = [], [], set()
    for file, location, data in rows:
        if "__error__" in data:
            message, fix = data["__error__"]
            problems.append(Problem(file, location, message, fix))
            continue
        try:
            item = _item(data)
        except (ValueError, InputError) as error:
            problems.append(Problem(file, location, str(error).split("\n")[0],
                                    "the QA columns: docs/how-to/robustness.md"))
            continue
        if item.id in seen:
            problems.append(Problem(file, location, f"duplicate id '{item.id}'",
                                    "give every question its own id"))
            continue
        seen.add(item.id)
        items.append(item)
    if problems:
        raise DatasetError(problems, rows_read=len(rows))
    return items, len(rows)


def _listish(value) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = json.loads(text)
        else:
            return [part.strip() for part in text.split("|") if part.strip()]
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return [str(v) for v in value]


def _item(data: dict) -> QAItem:
    question = str(data.get("question") or "").strip()
    if not question:
        raise ValueError("empty or missing 'question'")
    answers = _listish(data.get("answers")) or _listish(data.get("answer")) or _listish(
        data.get("gold"))
    if not answers:
        raise ValueError("no gold answer: give 'answer' or 'answers'")
    choices = _listish(data.get("choices")) or None
    if choices:
        if len(choices) > len(LETTERS):
            raise ValueError(f"at most {len(LETTERS)} choices")
        gold = answers[0]
        if gold not in choices:  # the key given as a letter ("B") or an index
            index = LETTERS.index(gold.upper()) if gold.upper() in LETTERS[:len(choices)] \
                else int(gold) if gold.isdigit() and int(gold) < len(choices) else None
            if index is None:
                raise ValueError(f"answer '{gold}' is neither a choice nor its letter")
            gold = choices[index]
        answers = [gold]
    context = str(data.get("context") or "") or None
    kind = data.get("kind") or ("multiple-choice" if choices else "multi-answer"
                                if len(answers) > 1 else "extractive" if context
                                else "abstractive")
    item_id = str(data.get("id") or content_id("qa", question, "|".join(answers), ""))
    return QAItem(id=item_id, kind=kind, question=question, answers=tuple(answers),
                  choices=tuple(choices) if choices else None, context=context)


# ------------------------------------------------------------------ answers


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (the SQuAD convention)."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD-style token F1 between a prediction and a gold answer, after normalising both."""
    predicted, expected = normalise(prediction).split(), normalise(gold).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not predicted or not expected or common == 0:
        return float(predicted == expected)
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


_LETTER_PATTERNS = [
    re.compile(r"\[\[\s*([A-J])\s*\]\]"),
    re.compile(r"\b(?:answer|choice|option)\s*(?:is|:)?\s*\(?([A-J])\)?(?![\w])", re.I),
    re.compile(r"^\s*\(?([A-J])[).:]?(?:\s|$)"),
]


def parse_letter(text: str, choices: tuple[str, ...]) -> str | None:
    """The chosen letter: an explicit letter, else the one choice whose text is given."""
    for pattern in _LETTER_PATTERNS:
        match = pattern.search(text)
        if match and match.group(1).upper() in LETTERS[:len(choices)]:
            return match.group(1).upper()
    named = [LETTERS[i] for i, choice in enumerate(choices)
             if normalise(choice) and normalise(choice) in normalise(text)]
    return named[0] if len(named) == 1 else None


def split_answers(text: str) -> list[str]:
    """Several answers in one reply: split on commas, semicolons, 'and', new lines."""
    parts = re.split(r"[,;\n]|\band\b|\bor\b", text)
    return [normalise(p) for p in parts if normalise(p)]


def parse_reply(text: str) -> tuple[str, float | None]:
    """(answer, verbalised confidence 0–1) from a reply asked to be JSON."""
    from fbi.providers import json_object_in

    data = json_object_in(text)
    if isinstance(data, dict) and "answer" in data:
        answer = data["answer"]
        if isinstance(answer, list):
            answer = ", ".join(str(a) for a in answer)
        return str(answer), _confidence(data.get("confidence"))
    match = re.search(r"confidence\s*[:=]?\s*(\d{1,3})", text, re.I)
    answer = re.sub(r"(?is)confidence\s*[:=]?\s*\d{1,3}.*$", "", text).strip()
    answer = re.sub(r"(?i)^\s*(final\s+)?answer\s*[:=]\s*", "", answer).strip()
    return answer.splitlines()[0] if answer else "", _confidence(match.group(1) if match
                                                                  else None)


def _confidence(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number / 100 if 0 <= number <= 100 else None


class Judge:
    """Decides whether an answer is right, by the chosen method."""

    def __init__(self, method: Literal["match", "f1", "embedding"] = "f1",
                 threshold: float | None = None):
        self.method = method
        self.threshold = threshold if threshold is not None else {
            "match": 1.0, "f1": 0.5, "embedding": 0.75}[method]
        self._embedder = None

    def free_text(self, answer: str, golds: tuple[str, ...]) -> bool:
        if not answer.strip():
            return False
        if self.method == "match":
            return normalise(answer) in {normalise(g) for g in golds}
        if self.method == "f1":
            return max(token_f1(answer, g) for g in golds) >= self.threshold
        return max(self.similarity(answer, golds)) >= self.threshold

    def similarity(self, answer: str, golds: tuple[str, ...]) -> list[float]:
        from fbi.robustness._embeddings import cosine_similarities

        return cosine_similarities(answer, list(golds))

    def multi(self, answer: str, golds: tuple[str, ...]) -> tuple[bool, float, float, float]:
        from fbi.metrics import set_scores

        predicted = split_answers(answer)
        precision, recall, f1 = set_scores(predicted, [normalise(g) for g in golds])
        return precision > 0.5, precision, recall, f1
