"""What every rule family shares: the result of a rule, the registry, and the
categories no rule attempts. The families import this, not the package face, so the
face can load them without a cycle."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from fbi.records import GoldItem
from fbi.registry import Registry

RULES_VERSION = "1"


@dataclass(frozen=True)
class Change:
    before: str
    after: str
    position: int  # character offset in the gold answer


@dataclass(frozen=True)
class RuleResult:
    perturbed: str
    changes: tuple[Change, ...]
    summary: str  # what kind of change, in words

    @property
    def rationale(self) -> str:
        """The summary and every change, quoting text that appears verbatim in the answers
        (the first line of a multi-line span), so the pre-screen can check it. Guillemets
        quote, since answers are full of ordinary quotation marks."""
        if not self.changes:  # (a rule of trajectories says its change in the summary)
            return self.summary
        spans = "; ".join(f"«{_first_line(c.before)}» → «{_first_line(c.after)}» at "
                          f"{c.position}" for c in self.changes)
        return f"{self.summary}: {spans}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:150].strip() if lines else ""


class Declined(Exception):
    """A rule cannot make this perturbation honestly for this item."""


Rule = Callable[[GoldItem, random.Random], RuleResult]
#: Every rule by the category it makes: a [`Registry`][fbi.registry.Registry] whose
#: ``fbi.rules`` entry points are the family modules (fbi's own: pyproject.toml).
RULES: Registry[Rule] = Registry("perturbation rule", "fbi.rules")

#: Categories no rule attempts, and why.
NEEDS_LLM = {
    "consistency": "a contradiction has to fit the content; use the LLM engine",
    "coherence": "breaking the logical flow needs judgement; use the LLM engine",
    "comprehensiveness": "knowing which part is essential needs judgement; use the LLM engine",
    "contextual": "the error must contradict the question's context; use the LLM engine",
    "entity": "a plausible wrong entity needs world knowledge; use the LLM engine",
    "incorrect-fact": "a plausible false fact needs world knowledge; use the LLM engine",
    "do-more": "unrequested content has to be written; use the LLM engine",
    "assumptions": "an unwarranted assumption has to be written; use the LLM engine",
    "wrong-formula": "a wrong method has to be carried through; use the LLM engine",
}


def rule(category: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as ``category``'s rule."""
    return RULES.register(category)
