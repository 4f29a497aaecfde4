"""What a blind-spot hunt found (`fbi hunt`, issue 40): ``hunt.json``'s records. Core,
so the hunt writes them and the report reads them without importing each other."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

HUNT_SCHEMA_VERSION = 1


class HuntExample(BaseModel):
    """An edit of a finding that the judge missed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    instance_id: str
    """The edit's instance id (the gold item's id, the operator and a digest)."""
    strategy: str
    """The strategy it was judged by."""
    question: str
    """The instruction."""
    gold_answer: str
    """The gold answer."""
    edited_answer: str
    """The gold answer with the edit."""
    judge_reply: str | None = None
    """The judge's reply about the edited answer (pairwise: with the gold in slot A)."""


class HuntFinding(BaseModel):
    """A kind of edit the hunt found the judge missing more often than comparable edits."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str
    """A short name; the vetted edits' category is ``hunt/NAME``."""
    description: str
    """The finding in words: what changed, where and how much."""
    operator: str
    """What changed: an operator (``number-errors``), a family (``family:numbers``),
    what was added (``manipulation/padding``), or ``any error rule``."""
    axes: dict[str, str]
    """The description's axes and values (see `fbi.hunt.AXES`)."""
    confirmed: bool
    """Its held-out miss rate is above the baseline's at the adjusted level."""
    miss_rate: float | None
    """Held-out: the share of its edits the judge missed (an unreadable reply counts as
    missed); None without held-out edits."""
    interval: list[float] | None
    """The 95% Wilson interval of ``miss_rate``."""
    n: int
    """Held-out edits judged (probes: an edit under one strategy)."""
    misses: int
    """Of those, missed."""
    unreadable: int
    """Of the misses, replies fbi could not read."""
    baseline_rate: float | None
    """The held-out miss rate of comparable edits: plain error edits outside the finding."""
    baseline_n: int
    """How many comparable edits that rate is over."""
    p_value: float
    """One-sided Fisher exact test, held-out edits against the baseline."""
    p_adjusted: float
    """``p_value`` adjusted by Holm's procedure for every hypothesis the search tested."""
    search_miss_rate: float
    """The miss rate the search saw (on other instances)."""
    search_n: int
    """Search probes of this description."""
    examples: list[HuntExample] = Field(default_factory=list)
    """Held-out edits the judge missed (then the search's), at most five."""


class HuntResult(BaseModel):
    """``hunt.json``: what a hunt searched, what it spent and what it found."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: int = HUNT_SCHEMA_VERSION
    """1."""
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
    budget: int
    """The calls the hunt was allowed (the preflight probe's included)."""
    calls: int
    """The calls it planned: the judge's (the preflight probe's included) and the
    perturber's."""
    search_calls: int
    """Of those, the search's."""
    confirmation_calls: int
    """Of those, the held-out confirmation's."""
    perturber_calls: int = 0
    """Of those, the LLM perturber's (``--perturber``)."""
    failed_calls: int
    """Calls with no reply: their edits count nowhere."""
    search_items: int
    """Gold items the search drew from."""
    held_out_items: int
    """Gold items kept for confirmation."""
    operators: list[str]
    """The root descriptions searched, as names."""
    hypotheses_tested: int
    """Descriptions the search tested: the family Holm's procedure adjusts for."""
    correction: str = "holm"
    """The multiple-testing correction (Holm 1979)."""
    alpha: float
    """The family-wise error level a finding is confirmed at."""
    baseline: str
    """What a finding is compared with."""
    findings: list[HuntFinding] = Field(default_factory=list)
    """Every candidate taken to confirmation, confirmed first, by adjusted p-value."""
    finished: bool = True
    """The hunt ran to its end (False: stopped by the budget in USD or a failure)."""
