"""Typed, versioned records: everything fbi writes to disk is one of these.

Each record carries ``schema_version``; bump it when a field changes meaning, and keep
readers able to load older versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fbi.taxonomy import SCORE_INVARIANT, Ability, get_category

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

    source: str = ""  # dataset the gold answer came from, e.g. "fbi-original", "sample"
    original_id: str = ""  # the id in that source (FBI's `cdx`), which may repeat there
    generator: str = ""  # "gpt-4-turbo", "rules:spelling", "human", ...
    template_version: str = ""
    seed: int | None = None
    # the model that wrote the gold answer, when known: a judge of its family may favour it
    gold_model: str = ""


class Instance(BaseModel):
    """One FBI instance: an instruction, its gold answer and a perturbed answer.

    For score-invariant instances ``ability`` is the ability of the underlying prompt.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = INSTANCE_SCHEMA_VERSION
    id: str = Field(min_length=1)
    ability: Ability
    category: str
    instruction: str = Field(min_length=1)
    gold_answer: str = Field(min_length=1)
    perturbed_answer: str = Field(min_length=1)
    rationale: str | None = None
    provenance: Provenance = Provenance()
    label: VettingLabel = VettingLabel.UNVETTED
    flags: tuple[str, ...] = ()  # pre-screen flags set by the perturbation generator

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        get_category(value)  # raises UnknownName with the valid names
        return value

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

    # -- the flat tabular form used by JSONL, CSV and Parquet files -------------------

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Instance:
        """The instance :meth:`to_row` wrote (every column present, as it writes them)."""
        provenance = Provenance(**{name: row[name] for name in PROVENANCE_COLUMNS})
        return cls(id=row["id"], ability=row["ability"], category=row["category"],
                   instruction=row["instruction"], gold_answer=row["gold_answer"],
                   perturbed_answer=row["perturbed_answer"], rationale=row["rationale"],
                   label=row["label"], provenance=provenance, flags=tuple(row["flags"]),
                   schema_version=row["schema_version"])

    def to_row(self) -> dict[str, Any]:
        """The flat dict written to files; :meth:`from_row` reads it back losslessly."""
        return {
            "id": self.id,
            "ability": self.ability.value,
            "category": self.category,
            "instruction": self.instruction,
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
                      "gold_model")

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
    ability: str
    instruction: str
    gold_answer: str
    source: str = ""


# ------------------------------------------------------------------ judge runs

JUDGMENT_SCHEMA_VERSION = 1
RUN_SCHEMA_VERSION = 2
Status = Literal["ok", "unparseable", "error"]


class CallRecord(BaseModel):
    """What every record of a model call carries: its id, the reply kept raw, what came of
    it, and what it cost. Judgments, perturbation calls, explanation checks, rewrites and
    QA answers all extend it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    call_id: str  # unique within its log; a re-run skips ids already there
    prompt_hash: str  # sha256 of the rendered messages
    raw_output: str | None = None
    repair_outputs: list[str] = Field(default_factory=list)  # follow-up replies, if any
    status: Status
    reason: str | None = None  # why unparseable, or the error
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_s: float = 0.0
    cached: bool = False


class Judgment(CallRecord):
    """One judge call and what came of it: a line of ``judgments.jsonl``.

    ``role`` says what was judged: ``gold`` or ``perturbed`` for single-answer calls,
    ``gold-first`` or ``perturbed-first`` (the slot order) for pairwise ones, and
    ``perturbed`` for reference-guided ones. A pairwise ``slot_verdict`` (A, B, tie,
    both_bad) is mapped back to ``verdict`` (gold, perturbed, tie, both_bad) with it.
    """

    instance_id: str
    ability: Ability
    category: str
    strategy: str
    strategy_version: str
    paradigm: Literal["single", "pairwise", "reference"]
    role: Literal["gold", "perturbed", "gold-first", "perturbed-first"]
    judge: str
    score_range: tuple[int, int] | None = None
    score: int | None = None
    slot_verdict: str | None = None
    verdict: Literal["gold", "perturbed", "tie", "both_bad"] | None = None
    explanation: str | None = None
    # --logprobs: the score weighted by the judge's token probabilities (G-Eval), the
    # distribution behind it, and the share of the score token's probability it covers
    expected_score: float | None = None
    score_probabilities: dict[int, float] | None = None
    score_mass: float | None = None
    parser_version: str = ""
    sample: int = 0  # which of --samples K asks of the same call (0: the first, or only)


def judge_name(label: str | None, model: str) -> str:
    """How a judge is named to people wherever fbi prints one: its ``--label`` with the
    model beside it ("careful (openai/gpt-4o)"), or the model alone."""
    return f"{label} ({model})" if label and label != model else model


RunKind = Literal["evaluate", "explain-check", "perturb", "robustness"]


class RunSpec(BaseModel):
    """What a run was asked to do: ``run.json`` (or ``QUEUE.run.json`` for perturb,
    ``explanation_checks.run.json`` for explanation checks). Never holds an API key.

    One schema for every stage, told apart by ``kind``. The *identity* of a run — what a
    resumed run must share with the folder it resumes — is its kind, model, api_base,
    prompts (per name: version, template hash, score range), ``parameters`` (what changes
    a reply), the dataset fingerprint and the ``selection``; ``settings`` (concurrency,
    time-outs, budget) and ``label`` may change between invocations.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] = RUN_SCHEMA_VERSION
    kind: RunKind = "evaluate"
    label: str | None = None
    fbi_version: str
    litellm_version: str = ""
    model: str
    api_base: str | None = None
    prompts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    dataset: dict[str, Any] = Field(default_factory=dict)  # spec, fingerprint, instances
    selection: dict[str, Any] = Field(default_factory=dict)  # filters, limit, sample
    parameters: dict[str, Any] = Field(default_factory=dict)  # what changes a reply
    settings: dict[str, Any] = Field(default_factory=dict)  # what does not
    command: list[str] = Field(default_factory=list)
    record_versions: dict[str, int] = Field(default_factory=dict)
    parser_version: str = ""
    created_at: str
    updated_at: str
    totals: dict[str, Any] = Field(default_factory=dict)

    @property
    def judge_name(self) -> str:
        """The label and model as printed (:func:`judge_name`)."""
        return judge_name(self.label, self.model)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_v1(cls, data: Any) -> Any:
        """Schema 1 (evaluate only) named the model ``judge`` and the prompts
        ``strategies``, and kept every parameter in ``parameters``."""
        if isinstance(data, dict) and data.get("schema_version", 1) == 1:
            data = dict(data)
            if "judge" in data:
                data.setdefault("model", data.pop("judge"))
            if "strategies" in data:
                data.setdefault("prompts", data.pop("strategies"))
            parameters = dict(data.get("parameters") or {})
            settings = dict(data.get("settings") or {})
            for name in ("timeout_s", "concurrency", "max_cost"):
                if name in parameters:
                    settings[name] = parameters.pop(name)
            data["parameters"], data["settings"] = parameters, settings
        return data

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        """A run spec never keeps the user:password of an api_base URL."""
        from fbi.redaction import public_url

        return public_url(value)

    @field_validator("command")
    @classmethod
    def _no_secrets_in_command(cls, value: list[str]) -> list[str]:
        """The command line as typed, with keys and URL credentials taken out."""
        from fbi.redaction import redact

        kept = []
        for argument in value:
            if kept and kept[-1] == "--api-key":
                argument = "[redacted]"
            elif argument.startswith("--api-key="):
                argument = "--api-key=[redacted]"
            kept.append(redact(argument))
        return kept

    @property
    def judge(self) -> str:
        return self.model

    @property
    def strategies(self) -> dict[str, dict[str, Any]]:
        return self.prompts


class ExplanationCheck(CallRecord):
    """A checker model's reading of one undetected instance's judge explanation(s):
    a line of ``explanation_checks.jsonl`` (paper §5.3). ``call_id`` is
    ``instance_id|strategy|explain-check``."""

    instance_id: str
    judge: str
    strategy: str
    checker: str
    points_out_error: bool | None = None
