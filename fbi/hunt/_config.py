"""What `fbi hunt` is asked, checked where it is made: the Python API refuses what the
CLI refuses (issues 40 and 49)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fbi.errors import InputError
from fbi.hunt._describer import PROPOSALS
from fbi.hunt._operators import LLM, Operator, llm_categories
from fbi.settings import ModelSettings
from fbi.taxonomy import unknown_name_message

#: The fewest calls a hunt can do anything with.
MIN_BUDGET = 40
DEFAULT_BUDGET = 3000


@dataclass(frozen=True)
class HuntConfig:
    """What `fbi hunt` is asked: the judge, its strategies, the budget and the seed."""

    model: ModelSettings
    """The judge: its model, server or pool, sampling, concurrency and USD budget."""
    budget: int = DEFAULT_BUDGET
    """Model calls the hunt may make: the judge's (the preflight probe's included) and
    the perturber's."""
    strategies: tuple[str, ...] = ("vanilla",)
    """The strategies each edit is judged by (one per probe, chosen at random)."""
    seed: int = 0
    """Seeds the split, the draws and the search."""
    operators: tuple[str, ...] = ()
    """Restrict the search to these operators (``number-errors``, ``grammar+spelling``,
    ``chronology+manipulation/padding``, ``manipulation/padding``); empty: all."""
    label: str | None = None
    """The judge's name in the output."""
    prompts_dir: Path | None = None
    """A folder of the user's own strategy templates."""
    alpha: float = 0.05
    """The family-wise error level of the confirmed findings."""
    margin: float = 0.10
    """A finding must be missed this much more often than the baseline (10 points)."""
    search: Literal["adaptive", "grid", "strings"] = "adaptive"
    """``grid``: every probe a random edit, no suspicion tested (the baseline the
    adaptive search is measured against); ``strings``: the adaptive search over short
    strings put before or after wrong answers or standing alone (`fbi.hunt._strings`)."""
    perturber: ModelSettings | None = None
    """An LLM perturber: its edits in the categories no rule makes (``llm/CATEGORY``)
    join the search."""
    perturber_edits: int = 24
    """The perturber's edits asked per category, half of the items from each split;
    its calls count against ``budget``."""
    describer: ModelSettings | None = None
    """A model that reads missed and caught edits side by side midway through the search
    and proposes blind spots in words; each proposal is tested like any suspicion."""
    describer_edits: int = 30
    """Edits the describer makes for each proposal it cannot say with predicates, half
    of the items from each split; its calls count against ``budget``."""

    def __post_init__(self) -> None:
        if self.budget < MIN_BUDGET:
            raise InputError(f"--budget {self.budget} is too small: a hunt needs at least "
                             f"{MIN_BUDGET} calls (a few probes, then confirmation); give "
                             f"--budget {DEFAULT_BUDGET} or more to find quiet blind spots")
        if not 0 < self.alpha < 1:
            raise InputError(f"--alpha {self.alpha} must lie between 0 and 1")
        if not 0 <= self.margin < 1:
            raise InputError(f"--margin {self.margin} must lie in [0, 1)")
        for name in self.operators:
            if name.startswith(LLM) and self.perturber is None:
                if name.removeprefix(LLM) not in llm_categories():
                    raise InputError(unknown_name_message(
                        "LLM operator", name, [LLM + c for c in llm_categories()]))
                raise InputError(f"--operator {name} needs --perturber MODEL")
            Operator.parse(name)  # an unknown one is an InputError with the valid names
        if self.perturber is not None and not 2 <= self.perturber_edits <= 10_000:
            raise InputError("--perturber-edits: give 2 to 10000 edits per category")
        if self.describer is not None and not 2 <= self.describer_edits <= 1000:
            raise InputError("--describer-edits: give 2 to 1000 edits per proposal")
        if self.budget < MIN_BUDGET + self.perturber_calls + self.describer_calls:
            raise InputError(
                f"--budget {self.budget} is too small: the perturber's "
                f"{self.perturber_calls} calls, the describer's {self.describer_calls} "
                f"and {MIN_BUDGET} for the judge; give a larger --budget or fewer "
                "--perturber-edits or --describer-edits")

    @property
    def llm_operators(self) -> list[str]:
        """The perturber's categories searched (``--operator llm/…``, else all)."""
        if self.perturber is None:
            return []
        named = [n.removeprefix(LLM) for n in self.operators if n.startswith(LLM)]
        rules_named = [n for n in self.operators if not n.startswith(LLM)]
        return named or ([] if rules_named else llm_categories())

    @property
    def perturber_calls(self) -> int:
        """Calls asked of the perturber, at most."""
        return len(self.llm_operators) * self.perturber_edits

    @property
    def describer_calls(self) -> int:
        """Calls asked of the describer, at most: one to describe, then its edits."""
        return 0 if self.describer is None else 1 + PROPOSALS * self.describer_edits
