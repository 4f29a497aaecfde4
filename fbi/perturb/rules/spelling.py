"""Spelling: realistic typos in a few content words."""

from __future__ import annotations

import random

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule
from fbi.text import KEYBOARD_NEIGHBOURS, content_words


def typo(word: str, rng: random.Random) -> str:
    """One realistic typo: swapped, neighbouring, dropped or doubled letter."""
    for _ in range(20):
        kind = rng.choice(("swap", "neighbour", "drop", "double"))
        i = rng.randrange(1, len(word) - 1)  # keep the first and last letters
        if kind == "swap" and word[i] != word[i + 1]:
            candidate = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        elif kind == "neighbour" and word[i] in KEYBOARD_NEIGHBOURS:
            candidate = word[:i] + rng.choice(KEYBOARD_NEIGHBOURS[word[i]]) + word[i + 1:]
        elif kind == "drop":
            candidate = word[:i] + word[i + 1:]
        else:
            candidate = word[:i] + word[i] + word[i:]
        if candidate != word:
            return candidate
    return word[:1] + word[2] + word[1] + word[3:]


@rule("spelling")
def spelling(item: GoldItem, rng: random.Random) -> RuleResult:
    words = content_words(item.gold_answer)
    if len(words) < 2:
        raise Declined("fewer than two content words to misspell")
    chosen = sorted(rng.sample(words, min(len(words), rng.randint(2, 4))),
                    key=lambda span: span.start)
    text, changes = item.gold_answer, []
    for span in reversed(chosen):  # from the end, so earlier offsets stay valid
        wrong = typo(span.text, rng)
        text = text[:span.start] + wrong + text[span.end:]
        changes.append(Change(span.text, wrong, span.start))
    return RuleResult(text, tuple(reversed(changes)), "misspelled words")
