"""Score-invariant edits: changes of form that keep every fact and requirement."""

from __future__ import annotations

import random
import re
from itertools import pairwise

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule
from fbi.text import list_items, sentences

# A sentence that starts like this leans on the one before: never move it.
_DEPENDENT_START = re.compile(
    r"^(it|its|this|that|these|those|they|their|he|she|his|her|then|so|thus|therefore|"
    r"however|also|but|and|or|as a result|finally|next|after|afterwards|later|in turn|"
    r"because|which|there|here|such)\b", re.IGNORECASE)


def _bullet_style(item: GoldItem) -> RuleResult | None:
    items = list_items(item.gold_answer)
    if len(items) < 2:
        return None
    marker = items[0].group("marker")
    new_marker = {"-": "*", "*": "-", "•": "-"}.get(marker)
    text, changes = item.gold_answer, []
    for match in reversed(items):
        old = match.group("marker")
        new = new_marker or old.replace(".", ")") if old[0].isdigit() else new_marker
        if new is None or new == old:
            return None
        text = text[:match.start("marker")] + new + text[match.end("marker"):]
        changes.append(Change(old, new, match.start("marker")))
    return RuleResult(text, tuple(reversed(changes)), "list marker style changed")


def _reflow(item: GoldItem, rng: random.Random) -> RuleResult | None:
    """Split a paragraph of three or more sentences into two paragraphs."""
    text = item.gold_answer
    spans = sentences(text)
    gaps = [(a, b) for a, b in pairwise(spans)
            if text[a.end:b.start] == " " and not list_items(text[a.start:b.end])]
    if len(gaps) < 2:
        return None
    a, b = rng.choice(gaps)
    before = text[a.start:b.end]
    return RuleResult(text[:a.end] + "\n\n" + text[b.start:],
                      (Change(before, a.text + "\n\n" + b.text, a.start),),
                      "paragraph split between two sentences; text unchanged")


def _reorder(item: GoldItem, rng: random.Random) -> RuleResult | None:
    if item.ability == "reasoning" or list_items(item.gold_answer) or \
            re.search(r"^#|\*\*|\|", item.gold_answer, re.MULTILINE):
        return None  # working, lists and structured markdown have an order of their own
    text = item.gold_answer
    spans = sentences(text)
    pairs = [(a, b) for a, b in pairwise(spans)
             if text[a.end:b.start] == " " and not _DEPENDENT_START.match(a.text)
             and not _DEPENDENT_START.match(b.text) and a is not spans[0]]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return RuleResult(text[:a.start] + b.text + " " + a.text + text[b.end:],
                      (Change(a.text, b.text, a.start), Change(b.text, a.text, b.start)),
                      "two independent sentences reordered")


@rule("score-invariant")
def score_invariant(item: GoldItem, rng: random.Random) -> RuleResult:
    edits = [_bullet_style(item), _reflow(item, rng), _reorder(item, rng)]
    possible = [edit for edit in edits if edit is not None]
    if not possible:
        raise Declined("no list, long paragraph or independent sentences to rearrange safely")
    return rng.choice(possible)
