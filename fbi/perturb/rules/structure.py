"""Structure: dropped parts, ignored formats, removed facts."""

from __future__ import annotations

import json
import random
import re

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule
from fbi.text import list_items, numbers, sentences


@rule("do-less")
def do_less(item: GoldItem, rng: random.Random) -> RuleResult:
    items = list_items(item.gold_answer)
    text = item.gold_answer
    if len(items) >= 2:
        dropped = items[rng.randrange(1, len(items))]  # keep the first so it is still a list
        start = dropped.start()
        end = dropped.end() + (1 if text[dropped.end():dropped.end() + 1] == "\n" else 0)
        if start > 0 and end == len(text) and text[start - 1] == "\n":
            start -= 1  # the last item: take the newline before it instead
        return RuleResult(text[:start] + text[end:], (Change(text[start:end], "", start),),
                          "a requested item left out")
    paragraphs = [m for m in re.finditer(r"[^\n]+(?:\n[^\n]+)*", text)]
    if len(paragraphs) >= 2:
        last = paragraphs[-1]
        start = paragraphs[-2].end()
        return RuleResult(text[:start] + text[last.end():],
                          (Change(text[start:last.end()], "", start),),
                          "the last part of the answer left out")
    raise Declined("no list items or paragraphs to leave out")


_ASKS_UPPER = re.compile(r"\b(capital letters|upper ?case|all caps)\b", re.IGNORECASE)
_ASKS_LOWER = re.compile(r"\blower ?case\b", re.IGNORECASE)


@rule("ignore-format")
def ignore_format(item: GoldItem, rng: random.Random) -> RuleResult:
    gold = item.gold_answer
    stripped = gold.strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and data:
        lines = "\n".join(f"{key.replace('_', ' ').capitalize()}: {value}"
                          for key, value in data.items())
        return RuleResult(lines, (Change(gold, lines, 0),), "JSON asked for, plain lines given")
    items = list_items(gold)
    if len(items) >= 2:
        bodies = [m.group("body").rstrip(".") for m in items]
        bodies = [bodies[0]] + [b[0].lower() + b[1:] if b[1:2].islower() else b
                                for b in bodies[1:]]
        prose = ", ".join(bodies[:-1]) + " and " + bodies[-1] + "."
        start, end = items[0].start(), items[-1].end()
        text = gold[:start] + prose + gold[end:]
        return RuleResult(text, (Change(gold[start:end], prose, start),),
                          "a list written as prose")
    if _ASKS_UPPER.search(item.instruction) and any(c.isupper() for c in gold):
        return RuleResult(gold.lower(), (Change(gold, gold.lower(), 0),),
                          "capital letters asked for, lower case given")
    if _ASKS_LOWER.search(item.instruction) and any(c.islower() for c in gold):
        return RuleResult(gold.upper(), (Change(gold, gold.upper(), 0),),
                          "lower case asked for, capitals given")
    raise Declined("no list, JSON or letter case format to break")


def _fact_weight(text: str) -> int:
    names = len(re.findall(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+", text))
    return 2 * len(numbers(text)) + names


@rule("remove-fact")
def remove_fact(item: GoldItem, rng: random.Random) -> RuleResult:
    spans = [s for s in sentences(item.gold_answer) if len(s.text.split()) >= 4]
    if len(spans) < 2:
        raise Declined("fewer than two sentences: removing one would remove the answer")
    best = max(_fact_weight(s.text) for s in spans)
    span = rng.choice([s for s in spans if _fact_weight(s.text) == best])
    text = item.gold_answer
    start, end = span.start, span.end
    while end < len(text) and text[end] == " ":
        end += 1  # take the space after the sentence with it
    if end == len(text) or text[end] == "\n":
        while start > 0 and text[start - 1] == " ":
            start -= 1  # the last sentence of a line: take the space before it instead
    span = type(span)(start, end, text[start:end])
    removed = Change(text[span.start:end], "", span.start)
    return RuleResult(text[:span.start] + text[end:], (removed,), "a key sentence removed")
