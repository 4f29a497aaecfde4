"""The rule engine: deterministic perturbations for the categories a rule can do honestly.

Each family module registers one function per category; a rule takes the gold item and a
seeded ``random.Random`` and returns the perturbed answer with every change it made
(the span before and after), or raises `Declined` with the reason. Categories no
rule can do honestly (they need world knowledge or judgement) are declined by name with
the advice to use the LLM engine; nothing is ever faked.
"""

from __future__ import annotations

import random

from fbi.perturb.rules._base import (
    NEEDS_LLM,
    RULES,
    RULES_VERSION,
    Change,
    Declined,
    Rule,
    RuleResult,
    rule,
)
from fbi.records import GoldItem


def apply_rule(category: str, item: GoldItem, seed: int) -> RuleResult:
    """Run the rule for ``category``; raises Declined when there is none or it cannot."""
    if category in NEEDS_LLM:
        raise Declined(NEEDS_LLM[category])
    if category not in RULES:
        raise Declined(f"no rule for '{category}'; use the LLM engine")
    # The seed, category and item decide the choices, so a run is repeatable.
    result = RULES.get(category)(item, random.Random(f"{seed}:{category}:{item.id}"))
    if result.perturbed == item.gold_answer or not result.changes:
        raise Declined("the rule found nothing to change")
    return result


def rules() -> dict[str, Rule]:
    """Every rule, by the category it makes (the families loaded)."""
    return dict(RULES)


def family_of(category: str) -> str:
    """The family of a category's rule: the module it is in (numbers, order, ...)."""
    return rules()[category].__module__.rsplit(".", 1)[-1]
