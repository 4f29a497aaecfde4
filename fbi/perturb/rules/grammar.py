"""Grammar: agreement, article and verb-form errors made by rule."""

from __future__ import annotations

import random
import re

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule

# (pattern, replacement, kind); the pattern's last group (or the whole match) is replaced.
SWAPS = [
    (r"\b(is)\b", "are", "subject-verb agreement"),
    (r"\b(are)\b", "is", "subject-verb agreement"),
    (r"\b(was)\b", "were", "subject-verb agreement"),
    (r"\b(were)\b", "was", "subject-verb agreement"),
    (r"\b(has)\b", "have", "subject-verb agreement"),
    (r"\b(have)\b", "has", "subject-verb agreement"),
    (r"\b(does)\b", "do", "subject-verb agreement"),
    (r"\b(an)(?= [aeiouAEIOU])", "a", "article"),
    (r"\b(a)(?= [bcdfgjklmnpqrstvwxyz]\w)", "an", "article"),
    (r"\b(?:it|he|she) ([a-z]{3,}s)\b", "drop-s", "verb form"),  # "it makes" → "it make"
    (r"\b(?:also|often|usually|always|never) ([a-z]{3,}[^s]s)\b", "drop-s", "verb form"),
    (r"\b(?:can|will|should|must) ([a-z]{3,}e)\b", "add-d", "verb form"),  # "can maked"
]


def _candidates(text: str):
    for pattern, replacement, kind in SWAPS:
        for match in re.finditer(pattern, text):
            old = match.group(1)
            if replacement == "drop-s":
                new = old[:-1]
            elif replacement == "add-d":
                new = old + "d"
            else:
                new = replacement
            if old[:1].isupper():
                new = new[:1].upper() + new[1:]
            yield match.start(1), match.end(1), old, new, kind


@rule("grammar")
def grammar(item: GoldItem, rng: random.Random) -> RuleResult:
    candidates = list(_candidates(item.gold_answer))
    if not candidates:
        raise Declined("no verb, auxiliary or article a rule can break")
    chosen: list = []
    for candidate in rng.sample(candidates, len(candidates)):
        if all(candidate[1] <= c[0] or candidate[0] >= c[1] for c in chosen):
            chosen.append(candidate)
        if len(chosen) == min(3, len(candidates)):
            break
    chosen.sort()
    text, changes = item.gold_answer, []
    for start, end, old, new, _ in reversed(chosen):
        text = text[:start] + new + text[end:]
        changes.append(Change(old, new, start))
    kinds = sorted({c[4] for c in chosen})
    return RuleResult(text, tuple(reversed(changes)), f"grammar errors ({', '.join(kinds)})")
