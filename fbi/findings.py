"""What a blind-spot hunt found (`fbi hunt`, issues 40 and 49): ``hunt.json``'s records.
Core, so the hunt writes them and the report and the viewer read them without importing
each other. Every number is checked when read: a tampered ``hunt.json`` with a rate
outside 0–1 or an interval that is not one is refused with its path."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

HUNT_SCHEMA_VERSION = 2

Rate = float


def _check_rate(value: float | None, what: str) -> None:
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{what} {value!r} is not a rate between 0 and 1")


def _check_interval(interval: list[float] | None, rate: float | None, what: str) -> None:
    if interval is None:
        return
    if len(interval) != 2:
        raise ValueError(f"{what}: an interval has two ends")
    low, high = interval
    _check_rate(low, f"{what}'s lower end")
    _check_rate(high, f"{what}'s upper end")
    if low > high or (rate is not None and not low - 1e-9 <= rate <= high + 1e-9):
        raise ValueError(f"{what} [{low}, {high}] is not an interval around {rate}")


class HuntExample(BaseModel):
    """A missed edit that shows a finding: its description covers it and no other
    finding does."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    instance_id: str
    """The edit's instance id (the gold item's id, the operator and a digest)."""
    strategy: str
    """The strategy it was judged by."""
    order: str | None = None
    """Pairwise: ``edit-first`` or ``edit-second``."""
    held_out: bool = True
    """Made for the held-out confirmation (else: seen by the search)."""
    question: str
    """The instruction."""
    gold_answer: str
    """The gold answer."""
    edited_answer: str
    """The gold answer with the edit, as the judge saw it."""
    judge_reply: str | None = None
    """The judge's reply about the edited answer."""


class HuntFinding(BaseModel):
    """A description the search carried to held-out confirmation, and what came of it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str
    """A short name; the vetted edits' category is ``hunt/NAME``."""
    description: str
    """The finding in words: a conjunction of at most three predicates, or a blind
    spot's widest description (`fbi.hunt._neighbours`: what its parts share, with any of
    their places, manipulations or strings)."""
    predicates: list[str]
    """The predicates' names (`fbi.hunt.PREDICATES` and the hunt's operators); for a
    widest description, the shared ones, then those of which any one holds."""
    population: Literal["error", "sway"] = "error"
    """``error``: error edits the judge did not penalise. ``sway``: correct answers with
    text added that the judge rated above the gold answer."""
    status: Literal["confirmed", "not confirmed", "merged"]
    """Confirmed on held-out edits; not confirmed; or merged into an earlier finding
    that explains its edits (``merged_into``)."""
    confirmed: bool
    """``status`` is ``confirmed``."""
    merged_into: str | None = None
    """The finding that explains it, when merged."""
    also_seen_as: list[str] = Field(default_factory=list)
    """Descriptions merged into this one."""
    miss_rate: Rate | None
    """Held-out: the share of its edits the judge missed (an unreadable reply counts as
    missed), its edits that an earlier confirmed finding explains left out; None
    without any."""
    interval: list[float] | None
    """The 95% Wilson interval of ``miss_rate``."""
    n: int = Field(ge=0)
    """Held-out probes counted (an edit judged once)."""
    misses: int = Field(ge=0)
    """Of those, missed."""
    unreadable: int = Field(ge=0)
    """Of the misses, replies fbi could not read."""
    baseline_rate: Rate | None
    """The held-out miss rate of random edits outside it and outside the findings
    confirmed before it."""
    baseline_n: int = Field(ge=0)
    """How many random edits that rate is over."""
    p_value: float = Field(ge=0, le=1)
    """One-sided score test (Farrington–Manning) that it is missed more than ``margin``
    more often than the baseline."""
    p_adjusted: float = Field(ge=0, le=1)
    """``p_value`` × the number of candidates confirmed (Bonferroni), at most 1."""
    search_miss_rate: Rate
    """The miss rate the search saw (on other items)."""
    search_n: int = Field(ge=0)
    """Search probes of this description that no earlier candidate explained."""
    examples: list[HuntExample] = Field(default_factory=list)
    """Missed edits only it explains, plainest first (held-out first), at most five."""

    @model_validator(mode="after")
    def _numbers_hold(self) -> HuntFinding:
        if self.confirmed != (self.status == "confirmed"):
            raise ValueError(f"confirmed is {self.confirmed} but status is {self.status!r}")
        for value, what in ((self.miss_rate, "miss_rate"), (self.baseline_rate,
                                                             "baseline_rate"),
                            (self.search_miss_rate, "search_miss_rate")):
            _check_rate(value, what)
        _check_interval(self.interval, self.miss_rate, "interval")
        if self.misses > self.n or self.unreadable > self.misses:
            raise ValueError(f"{self.misses} misses ({self.unreadable} unreadable) of "
                             f"{self.n} probes cannot be")
        if self.p_adjusted + 1e-12 < self.p_value:
            raise ValueError("p_adjusted is below p_value")
        return self

    @property
    def title(self) -> str:
        """How the finding is named to people: its description, and for the sway
        population what it is of (two findings of one description are two things)."""
        return self.description + (" (rated above the gold answer)"
                                   if self.population == "sway" else "")


class OverallRate(BaseModel):
    """How often the judge missed random edits: the hunt's baseline, before any finding
    is left out."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    miss_rate: Rate | None
    """Missed random error edits (an unreadable reply counts as missed)."""
    interval: list[float] | None
    """Its 95% Wilson interval."""
    n: int = Field(ge=0)
    """Random edits judged."""
    unreadable: int = Field(ge=0)
    """Replies about them fbi could not read."""
    held_out: bool
    """Over the held-out baseline (else: the search's exploring edits)."""

    @model_validator(mode="after")
    def _numbers_hold(self) -> OverallRate:
        _check_rate(self.miss_rate, "miss_rate")
        _check_interval(self.interval, self.miss_rate, "interval")
        if self.unreadable > self.n:
            raise ValueError("more unreadable replies than edits")
        return self


class HuntResult(BaseModel):
    """``hunt.json``: what a hunt searched, what it spent and what it found."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal[2] = HUNT_SCHEMA_VERSION
    """2."""
    judge: str
    """The judge's label and model."""
    model: str
    """The judge model."""
    strategies: list[str]
    """The strategies judged by."""
    dataset: str
    """The gold answers searched."""
    seed: int
    """The search's seed."""
    budget: int = Field(ge=0)
    """The calls the hunt was allowed (the preflight probe's included)."""
    calls: int = Field(ge=0)
    """The calls it planned: the judge's (the preflight probe's included), the
    perturber's and the describer's."""
    search_calls: int = Field(ge=0)
    """Of those, the search's."""
    confirmation_calls: int = Field(ge=0)
    """Of those, the held-out confirmation's."""
    perturber_calls: int = Field(default=0, ge=0)
    """Of those, the LLM perturber's (``--perturber``)."""
    describer_calls: int = Field(default=0, ge=0)
    """Of those, the describer's and its edits' (``--describer``)."""
    failed_calls: int = Field(ge=0)
    """Calls with no reply: their edits count nowhere."""
    probes: int = Field(default=0, ge=0)
    """Edits judged and counted (an edit under one strategy, in one order)."""
    unreadable_calls: int = Field(default=0, ge=0)
    """Replies about an edit fbi could not read (each counted as missed)."""
    search_items: int = Field(ge=0)
    """Gold items the search drew from."""
    held_out_items: int = Field(ge=0)
    """Gold items kept for confirmation."""
    edits_ran_out: bool = False
    """The search stopped under its budget: round after round, the items held too few
    edits not judged yet (a budget far past what a handful of items can use)."""
    operators: list[str]
    """The roots searched."""
    predicates: int = Field(ge=0)
    """Predicates a description could use."""
    candidates: int = Field(ge=0)
    """Descriptions carried to held-out confirmation (the family corrected for)."""
    correction: str = "bonferroni"
    """The multiple-testing correction over the candidates."""
    alpha: float = Field(gt=0, lt=1)
    """The family-wise error level a finding is confirmed at."""
    margin: float = Field(ge=0, lt=1)
    """How much more often than the baseline a finding must be missed."""
    baseline: str
    """What a finding is compared with."""
    overall: OverallRate | None = None
    """How often the judge missed random edits."""
    findings: list[HuntFinding] = Field(default_factory=list)
    """Every candidate, confirmed first in the order confirmed, then merged, then not
    confirmed."""
    finished: bool = True
    """The hunt ran to its end (False: stopped by the budget in USD or a failure)."""

    @property
    def confirmed(self) -> list[HuntFinding]:
        return [f for f in self.findings if f.confirmed]

    @property
    def mostly_unreadable(self) -> bool:
        """Half or more of the replies about edits could not be read: the miss rates
        are mostly unreadable replies, not blind spots."""
        return self.probes > 0 and 2 * self.unreadable_calls >= self.probes

    @property
    def misses_most(self) -> bool:
        """The judge misses most random edits: its findings are not the story."""
        overall = self.overall
        return bool(overall and overall.miss_rate is not None and overall.n >= 20 and
                    overall.interval is not None and overall.interval[0] > 0.5)
