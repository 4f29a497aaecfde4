"""Order: steps, list items or events moved out of their sequence."""

from __future__ import annotations

import random
import re
from itertools import pairwise

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule
from fbi.text import STOPWORDS, list_items, sentences

_TIME_WORDS = re.compile(r"\b(\d{3,4}|first|then|next|after|afterwards|later|finally|before|"
                         r"when|until|once|eventually|soon|years?|days?|hours?)\b",
                         re.IGNORECASE)
# "A, B, C and D": an enumeration of short items (up to four words) inside one sentence.
_ITEM = r"[A-Za-z][\w'-]*(?: [\w'-]+){0,3}"
_ENUMERATION = re.compile(rf"(?:(?<=[:\s])|^)(?P<items>(?:{_ITEM}, ){{2,}}{_ITEM})(?=[.;:\n]|$)",
                          re.MULTILINE)


def swap_list_items(item: GoldItem, rng: random.Random, summary: str) -> RuleResult | None:
    """Swap the bodies of two adjacent list items, keeping the markers where they were."""
    items = list_items(item.gold_answer)
    if len(items) < 3:
        return None
    i = rng.randrange(len(items) - 1)
    first, second = items[i], items[i + 1]
    a, b = first.group("body"), second.group("body")
    text = item.gold_answer
    text = (text[:first.start("body")] + b + text[first.end("body"):second.start("body")] + a +
            text[second.end("body"):])
    changes = (Change(a, b, first.start("body")), Change(b, a, second.start("body")))
    return RuleResult(text, changes, f"{summary}: items {i + 1} and {i + 2} swapped")


def swap_sentences(item: GoldItem, rng: random.Random, summary: str,
                   need_time: bool) -> RuleResult | None:
    spans = sentences(item.gold_answer)
    pairs = [(a, b) for a, b in pairwise(spans)
             if "\n\n" not in item.gold_answer[a.end:b.start]
             and (not need_time or _TIME_WORDS.search(a.text) or _TIME_WORDS.search(b.text))]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    text = item.gold_answer
    text = text[:a.start] + b.text + text[a.end:b.start] + a.text + text[b.end:]
    return RuleResult(text, (Change(a.text, b.text, a.start), Change(b.text, a.text, b.start)),
                      f"{summary}: two sentences swapped")


@rule("chronology")
def chronology(item: GoldItem, rng: random.Random) -> RuleResult:
    result = swap_list_items(item, rng, "events out of order") or \
        swap_sentences(item, rng, "events out of order", need_time=True)
    if result is None:
        raise Declined("no list of three or more steps and no sentences that tell a sequence")
    return result


_ASKS_ORDER = re.compile(r"\b(order|ordered|sequence|steps?|rank|ranked|sort|sorted|"
                         r"chronological|first|then|alphabetical|procedure|instructions)\b",
                         re.IGNORECASE)


@rule("sequence-errors")
def sequence_errors(item: GoldItem, rng: random.Random) -> RuleResult:
    items = list_items(item.gold_answer)
    numbered = bool(items) and items[0].group("marker")[0].isdigit()
    if not (numbered or _ASKS_ORDER.search(item.instruction)):
        raise Declined("the instruction asks for no order and the list is not numbered")
    result = swap_list_items(item, rng, "requested order broken")
    if result is not None:
        return result
    for match in _ENUMERATION.finditer(item.gold_answer):
        parts = match.group("items").split(", ")
        # The first item may have swallowed words of the sentence ("goals are Specific"):
        # keep its trailing words that are not function words.
        words = parts[0].split()
        while words and any(w.lower() in STOPWORDS for w in words):
            words.pop(0)
        if not words or any(w.lower() in STOPWORDS - {"and", "or", "of", "the", "a"}
                            for part in parts[1:] for w in part.split()):
            continue
        offset = len(parts[0]) - len(" ".join(words))
        parts[0] = " ".join(words)
        if len(parts) < 3:
            continue
        # Swap two items before the last, so a closing "and X" keeps its place.
        i = rng.randrange(len(parts) - 2)
        swapped = [*parts[:i], parts[i + 1], parts[i], *parts[i + 2:]]
        rebuilt = ", ".join(swapped)
        start = match.start("items") + offset
        text = item.gold_answer[:start] + rebuilt + item.gold_answer[match.end("items"):]
        return RuleResult(text, (Change(item.gold_answer[start:match.end("items")], rebuilt,
                                        start),),
                          f"requested order broken: items {i + 1} and {i + 2} swapped")
    raise Declined("no list or enumeration of three or more items")
