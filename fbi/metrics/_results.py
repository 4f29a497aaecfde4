"""The typed rows metric functions return, each field documented: the same models make
up the report's ``summary.json`` (:mod:`fbi.report._schema`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Rate = float | None  # a share; None where nothing could be counted


class Row(BaseModel):
    """A row of one summary table: immutable, and nothing but its fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    def as_dict(self) -> dict:
        return self.model_dump()


class JudgeStrategy(Row):
    judge: str
    """The run's label (its judge, or ``--label``)."""
    strategy: str
    """The strategy's name (``fbi strategies``)."""


class GroupRate(JudgeStrategy):
    """One rate row: a judge × strategy × group, its counts and its three rates."""

    paradigm: str
    """``single``, ``pairwise`` or ``reference``."""
    level: Literal["category", "ability", "overall", "score-invariant"]
    """What the group is."""
    group: str
    """The category, the ability's short name, ``all`` or ``SI``."""
    instances: int
    """Instances of the group in the run's dataset."""
    judged: int
    """With a readable verdict."""
    n: int
    """With any judgment."""
    detected: int
    """Errors detected (SI: edits penalised)."""
    undetected: int
    """Errors missed (SI: edits retained)."""
    unparseable: int
    """With an unreadable or failed verdict."""
    missing: int
    """Without a judgment."""
    rate: Rate
    """fbi's rate: undetected (SI: retained) over the readable verdicts."""
    ci_low: Rate
    """The rate's 95% interval, low end."""
    ci_high: Rate
    """The rate's 95% interval, high end."""
    ci_method: str | None
    """``wilson``, ``bootstrap`` or ``wilson-pooled``."""
    worst_case_rate: Rate
    """Unreadable verdicts counted as undetected (SI: as penalised)."""
    paper_rate: Rate
    """The paper's convention (§5, Tables 3–17)."""


class PairwiseBreakdown(JudgeStrategy):
    """Paper Tables 6–15 (pairwise): G / P / both good / both bad / inconsistent, and the
    position bias."""

    group: str
    """The category, ``all`` or ``score-invariant``."""
    G: int
    """Gold preferred in both orders."""
    P: int
    """Perturbed preferred in both orders."""
    both_good: int
    """Tie in both orders."""
    both_bad: int
    """Both bad in both orders."""
    inconsistent: int
    """Anything else."""
    unparseable: int
    """An order unreadable."""
    flip_rate: Rate
    """Share of pairs whose mapped verdict changes with the order."""
    first_slot_share: Rate
    """Share of A among A/B verdicts (0.5: no position preference)."""
    slot_choices: int
    """The A/B verdicts it is over."""
    first_slot_ci_low: Rate
    """Its Wilson 95% interval, low end."""
    first_slot_ci_high: Rate
    """Its Wilson 95% interval, high end."""


class ReferenceHistogram(JudgeStrategy):
    """Paper Table 16: how often the perturbed answer got top, top−1, top−2 or lower."""

    group: str
    """The category, ``all`` or ``score-invariant``."""
    top: int
    """Perturbed answers given the top score (undetected)."""
    top_1: int
    """Given the top − 1."""
    top_2: int
    """Given the top − 2."""
    lower: int
    """Given less."""
    unparseable: int
    """Unreadable."""
