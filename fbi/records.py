"""Typed, versioned records: everything fbi writes to disk is one of these.

Each record carries ``schema_version``; bump it when a field changes meaning, and keep
readers able to load older versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fbi.conversations import as_dicts, check_context, parse_messages, question_text, turn_of
from fbi.taxonomy import SCORE_INVARIANT, Ability, get_category
from fbi.trajectories import Trajectory, render, task_text

INSTANCE_SCHEMA_VERSION = 1


class VettingLabel(str, Enum):
    """A person's verdict on a perturbation (paper §3.4)."""

    VALID = "valid"
    INVALID = "invalid"
    SCORE_INVARIANT = "score-invariant"
    NOT_RELEVANT = "not-relevant"
    NOT_SURE = "not-sure"
    UNVETTED = "unvetted"


class Provenance(BaseModel):
    """Where an instance came from and how its perturbation was made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = ""
    """Dataset the gold answer came from, e.g. "fbi-original", "sample"."""
    original_id: str = ""
    """The id in that source (FBI's `cdx`), which may repeat there."""
    generator: str = ""
    """What made the perturbation: a model (``gpt-4-turbo``), a rule (``rules:spelling``),
    ``human``, ..."""
    template_version: str = ""
    """The version of the perturbation template that made it (empty for rules and
    people)."""
    seed: int | None = None
    """The seed the perturbation was made with, when one was."""
    gold_model: str = ""
    """The model that wrote the gold answer, when known: a judge of its family may favour
    it."""
    group: str = ""
    """A best-of-N row (RewardBench 2: one prompt, several chosen and rejected answers)
    this pair was expanded from: the row's id; empty for a plain pair."""
    chosen_index: int | None = None
    """In a best-of-N row: which chosen answer (0-based) plays gold here."""
    rejected_index: int | None = None
    """In a best-of-N row: which rejected answer (0-based) plays perturbed here."""
    chosen_count: int | None = None
    """In a best-of-N row: how many chosen answers the row lists."""
    rejected_count: int | None = None
    """In a best-of-N row: how many rejected answers the row lists."""
    changed_step: int | None = None
    """In an agent's trajectory: the step the perturbation changed (numbered from 1, as
    the judge reads the steps: `fbi.trajectories.render`)."""


class Instance(BaseModel):
    """One FBI instance: an instruction, its gold answer and a perturbed answer.

    For score-invariant instances ``ability`` is the ability of the underlying prompt.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = INSTANCE_SCHEMA_VERSION
    """The instance format's version."""
    id: str = Field(min_length=1)
    """Unique within its dataset."""
    ability: Ability
    """The ability its category tests (of the underlying prompt, for score-invariant
    edits)."""
    category: str
    """The perturbation category (`fbi.CATEGORIES`)."""
    instruction: str = Field(min_length=1)
    """The question or task the answers answer (of a conversation: its last user turn)."""
    context: tuple[tuple[str, str], ...] = ()
    """A conversation's turns before the instruction, as (role, content): an optional
    system message, then user and assistant turns alternating, ending with the
    assistant's; empty for a single-turn instance (`fbi.conversations`)."""
    gold_answer: str = Field(min_length=1)
    """The reference answer, unperturbed (of a conversation: the final assistant turn)."""
    perturbed_answer: str = Field(min_length=1)
    """The gold answer with one targeted error (or a score-invariant rewrite)."""
    rationale: str | None = None
    """What was changed and why, as the perturber said it."""
    provenance: Provenance = Provenance()
    """Where the instance came from and how its perturbation was made."""
    label: VettingLabel = VettingLabel.UNVETTED
    """The vetting label it carries (``unvetted`` until someone vetted it)."""
    flags: tuple[str, ...] = ()
    """Pre-screen flags set by the perturbation generator."""

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        get_category(value)  # raises UnknownName with the valid names
        return value

    @field_validator("context")
    @classmethod
    def _turns_take_turns(cls, value: tuple[tuple[str, str], ...]
                          ) -> tuple[tuple[str, str], ...]:
        if not value:  # (most instances: kept cheap, a dataset may hold millions)
            return ()
        return check_context(parse_messages(value, "context"))

    @model_validator(mode="after")
    def _ability_matches_category(self) -> Instance:
        category = get_category(self.category)
        if category.ability is not None and category.ability is not self.ability:
            raise ValueError(
                f"category '{self.category}' belongs to ability '{category.ability.value}', "
                f"not '{self.ability.value}'"
            )
        return self

    @property
    def is_score_invariant(self) -> bool:
        return self.category == SCORE_INVARIANT

    @property
    def is_extra(self) -> bool:
        return get_category(self.category).extra

    @property
    def turn(self) -> int:
        """Which user turn the instruction is (1: single-turn)."""
        return turn_of(self.context)

    @property
    def question(self) -> str:
        """The instruction as prompts show it: with a conversation's earlier turns
        (`fbi.conversations.question_text`)."""
        return question_text(self.context, self.instruction)

    # -- the flat tabular form used by JSONL, CSV and Parquet files -------------------

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Instance:
        """The instance [`to_row`][fbi.Instance.to_row] wrote (every column present, as it
        writes them)."""
        provenance = Provenance(**{name: row[name] for name in PROVENANCE_COLUMNS
                                   if row.get(name) is not None})
        return cls(id=row["id"], ability=row["ability"], category=row["category"],
                   instruction=row["instruction"], context=row.get("context") or (),
                   gold_answer=row["gold_answer"],
                   perturbed_answer=row["perturbed_answer"], rationale=row["rationale"],
                   label=row["label"], provenance=provenance, flags=tuple(row["flags"]),
                   schema_version=row["schema_version"])

    def to_row(self) -> dict[str, Any]:
        """The flat dict written to files; [`from_row`][fbi.Instance.from_row] reads it back
        losslessly."""
        return {
            "id": self.id,
            "ability": self.ability.value,
            "category": self.category,
            "instruction": self.instruction,
            "context": as_dicts(self.context),
            "gold_answer": self.gold_answer,
            "perturbed_answer": self.perturbed_answer,
            "rationale": self.rationale,
            "label": self.label.value,
            "source": self.provenance.source,
            "original_id": self.provenance.original_id,
            "generator": self.provenance.generator,
            "template_version": self.provenance.template_version,
            "seed": self.provenance.seed,
            "gold_model": self.provenance.gold_model,
            "group": self.provenance.group,
            "chosen_index": self.provenance.chosen_index,
            "rejected_index": self.provenance.rejected_index,
            "chosen_count": self.provenance.chosen_count,
            "rejected_count": self.provenance.rejected_count,
            "changed_step": self.provenance.changed_step,
            "flags": list(self.flags),
            "schema_version": self.schema_version,
        }


#: Columns of the flat form, in file order.
ROW_COLUMNS = tuple(
    Instance(
        id="x", ability=Ability.FACTUAL, category="entity", instruction="x",
        gold_answer="x", perturbed_answer="x",
    ).to_row()
)
REQUIRED_COLUMNS = ("category", "instruction", "gold_answer", "perturbed_answer")
PROVENANCE_COLUMNS = ("source", "original_id", "generator", "template_version", "seed",
                      "gold_model", "group", "chosen_index", "rejected_index",
                      "chosen_count", "rejected_count", "changed_step")

#: Column aliases accepted on input (the original FBI release's names).
COLUMN_ALIASES = {
    "question": "instruction",
    "og": "gold_answer",
    "perturbed_gpt4": "perturbed_answer",
    "cdx": "id",
}


def content_id(category: str, instruction: str, gold: str, perturbed: str) -> str:
    """A stable id for rows that come without one: the same content gives the same id."""
    digest = hashlib.sha256("\x1f".join((category, instruction, gold, perturbed)).encode())
    return f"{category}-{digest.hexdigest()[:12]}"


@dataclass(frozen=True)
class GoldItem:
    """An instruction and its gold answer: the input of perturbation."""

    id: str
    """Unique within its file."""
    ability: str
    """The ability of the question (LF, F, IF, R)."""
    instruction: str
    """The question or task."""
    gold_answer: str
    """The answer to perturb."""
    source: str = ""
    """The dataset it came from."""
    context: tuple[tuple[str, str], ...] = ()
    """A conversation's turns before the instruction (`Instance.context`)."""
    trajectory: Trajectory | None = field(default=None, compare=False)
    """An agent's task: the gold trajectory, which ``gold_answer`` renders (issue 54);
    not compared or hashed (the rendering says the same)."""

    @property
    def question(self) -> str:
        """The instruction as prompts show it (`Instance.question`)."""
        return question_text(self.context, self.instruction)

    @classmethod
    def of_trajectory(cls, trajectory: Trajectory, source: str = "trajectory") -> GoldItem:
        """A gold trajectory as a gold item: its task and tools the instruction, its
        rendering the answer, as a judge of agents reads them (`fbi.trajectories`)."""
        return cls(trajectory.id, Ability.AGENT.value, task_text(trajectory),
                   render(trajectory), source, trajectory=trajectory)


# ------------------------------------------------------------------ judge runs

JUDGMENT_SCHEMA_VERSION = 1
Status = Literal["ok", "unparseable", "error"]


class CallRecord(BaseModel):
    """What every record of a model call carries: its id, the reply kept raw, what came of
    it, and what it cost. Judgments, perturbation calls, explanation checks, rewrites and
    QA answers all extend it.

    No number in a record is NaN or infinite (``allow_inf_nan=False``): fbi never writes
    one (JSON has none), so a line holding one was edited, and is refused as a bad line
    rather than read as a miss or a score."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    schema_version: Literal[1] = 1
    """The record format's version."""
    call_id: str
    """Unique within its log; a re-run skips ids already there."""
    prompt_hash: str
    """Sha256 of the rendered messages."""
    raw_output: str | None = None
    """The model's reply, as it came (None when the call failed)."""
    repair_outputs: list[str] = Field(default_factory=list)
    """Follow-up replies, if any."""
    status: Status
    """``ok``, ``unparseable`` (a reply fbi could not read) or ``error`` (no reply)."""
    reason: str | None = None
    """Why unparseable, or the error."""
    prompt_tokens: int = 0
    """Tokens in the request, as the provider counted them."""
    completion_tokens: int = 0
    """Tokens in the reply, as the provider counted them."""
    cost: float | None = None
    """USD, from the provider's prices; None when unknown."""
    latency_s: float = 0.0
    """Seconds from request to reply (0 for a cached reply)."""
    cached: bool = False
    """Answered from the response cache."""
    reasoning: str | None = None
    """A reasoning model's thinking on the first reply, kept apart from ``raw_output``
    and never read for a verdict (None: the model gave none)."""
    reasoning_tokens: int = 0
    """Of ``completion_tokens``, those spent reasoning, as the provider counted them."""
    reasoning_cost: float | None = 0.0
    """USD of those tokens (part of ``cost``); None when the model is unpriced."""


class Judgment(CallRecord):
    """One judge call and what came of it: a line of ``judgments.jsonl``.

    ``role`` says what was judged: ``gold`` or ``perturbed`` for single-answer calls,
    ``gold-first`` or ``perturbed-first`` (the slot order) for pairwise ones, and
    ``perturbed`` for reference-guided ones. A pairwise ``slot_verdict`` (A, B, tie,
    both_bad) is mapped back to ``verdict`` (gold, perturbed, tie, both_bad) with it.
    """

    instance_id: str
    """The instance judged."""
    ability: Ability
    """The instance's ability."""
    category: str
    """The instance's category."""
    strategy: str
    """The strategy's name (``vanilla``, ``pairwise``, ``reference``, ...)."""
    strategy_version: str
    """The strategy template's version."""
    paradigm: Literal["single", "pairwise", "reference", "step"]
    """``single``, ``pairwise``, ``reference`` or ``step``."""
    role: Literal["gold", "perturbed", "gold-first", "perturbed-first"]
    """What was judged (see above)."""
    judge: str
    """The judge's name: its label and model (`fbi.records.judge_name`)."""
    score_range: tuple[int, int] | None = None
    """The score range the judge was asked for (single-answer and reference strategies)."""
    score: int | float | None = None
    """The score read from the reply (a reward model's: its scalar reward)."""
    slot_verdict: str | None = None
    """The pairwise verdict as the judge gave it: A, B, tie or both_bad."""
    verdict: Literal["gold", "perturbed", "tie", "both_bad"] | None = None
    """The pairwise verdict mapped to the answers: gold, perturbed, tie or both_bad."""
    explanation: str | None = None
    """The judge's explanation, when the strategy asks for one."""
    expected_score: float | None = None
    """--logprobs: the score weighted by the judge's token probabilities (G-Eval)."""
    score_probabilities: dict[int, float] | None = None
    """--logprobs: the probability of each score, renormalised over the scores."""
    score_mass: float | None = None
    """--logprobs: the share of the score token's probability the scores cover."""
    parser_version: str = ""
    """The version of the reply parser that read it (a re-parse updates it)."""
    sample: int = 0
    """Which of --samples K asks of the same call (0: the first, or only)."""


def judge_name(label: str | None, model: str) -> str:
    """How a judge is named to people wherever fbi prints one: its ``--label`` with the
    model beside it ("careful (openai/gpt-4o)"), or the model alone."""
    return f"{label} ({model})" if label and label != model else model


class ExplanationCheck(CallRecord):
    """A checker model's reading of one undetected instance's judge explanation(s):
    a line of ``explanation_checks.jsonl`` (paper §5.3). ``call_id`` is
    ``instance_id|strategy|explain-check``."""

    instance_id: str
    """The undetected instance whose explanation was checked."""
    judge: str
    """The judge whose explanation it was."""
    strategy: str
    """The strategy the judge used."""
    checker: str
    """The checker model."""
    points_out_error: bool | None = None
    """Whether the explanation points out the error (None: the reply was unreadable)."""

