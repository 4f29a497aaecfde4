"""Opposite facts: a claim turned into its negation or opposite."""

from __future__ import annotations

import random
import re

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule

ANTONYMS = {
    "increases": "decreases", "decreases": "increases", "increase": "decrease",
    "decrease": "increase", "more": "less", "less": "more", "higher": "lower",
    "lower": "higher", "larger": "smaller", "smaller": "larger", "faster": "slower",
    "slower": "faster", "expands": "contracts", "contracts": "expands", "warmer": "cooler",
    "cooler": "warmer", "always": "never", "never": "always", "before": "after",
    "after": "before", "rises": "falls", "falls": "rises", "absorb": "release",
    "release": "absorb", "absorbs": "releases", "releases": "absorbs", "gain": "lose",
    "lose": "gain", "strengthens": "weakens", "weakens": "strengthens", "north": "south",
    "south": "north", "east": "west", "west": "east", "inside": "outside", "outside": "inside",
    "positive": "negative", "negative": "positive", "heavier": "lighter", "lighter": "heavier",
}
NEGATIONS = {
    "is": "is not", "are": "are not", "was": "was not", "were": "were not", "can": "cannot",
    "will": "will not", "does": "does not", "do": "do not", "has": "has not", "should":
    "should not", "could": "could not",
}
_WORD = re.compile(r"\b[a-z]+\b")


@rule("opposite-fact")
def opposite_fact(item: GoldItem, rng: random.Random) -> RuleResult:
    text = item.gold_answer
    antonyms, negations = [], []
    for match in _WORD.finditer(text):
        word = match.group(0)
        following = text[match.end():match.end() + 5]
        if word in ANTONYMS:
            antonyms.append((match, ANTONYMS[word]))
        elif word in NEGATIONS and not following.startswith((" not", "n't")):
            negations.append((match, NEGATIONS[word]))
    for match in re.finditer(r"\b(is|are|was|were|do|does|can) not\b", text):
        negations.append((match, match.group(1)))  # remove an existing negation
    candidates = antonyms or negations  # a content antonym reads more naturally
    if not candidates:
        raise Declined("no claim a rule can negate")
    match, new = rng.choice(candidates)
    return RuleResult(text[:match.start()] + new + text[match.end():],
                      (Change(match.group(0), new, match.start()),), "a claim reversed")
