"""Numbers: wrong values, wrongly copied numbers, broken steps, final answers, units."""

from __future__ import annotations

import random
import re

from fbi.perturb.rules._base import Change, Declined, GoldItem, RuleResult, rule
from fbi.text import Span, format_like, is_list_numbering, numbers, parse_number, replace


def quantities(text: str) -> list[Span]:
    """Numbers that are values, not the "2." of a numbered list."""
    return [span for span in numbers(text) if not is_list_numbering(text, span)]


def wrong_value(original: str, rng: random.Random) -> str:
    """A plausible wrong value written like ``original``: same form, a different number."""
    value = parse_number(original)
    # A wrong value keeps the original's sign: a negative number stays negative, and a
    # positive one does not fall below zero (either would change the form, not the value).
    def keeps_sign(new: float) -> bool:
        return new < 0 if value < 0 else new >= 0

    if "." not in original and 1000 <= value <= 2100:  # a year: shift it a little
        offsets = [d for d in range(-20, 21) if d]
    elif value == int(value):
        size = max(2, int(abs(value) * 0.3))
        # the offsets -size..size without 0 that keep the sign, as a range: choosing from
        # it draws exactly what rng.choice of the whole list would (one randrange of its
        # length), without building a list of 600,000 offsets for 1,000,000
        low = -size if value < 0 else max(-size, -int(value))
        high = min(size, -int(value) - 1) if value < 0 else size
        negative = max(0, -low)
        index = rng.randrange(negative + max(0, high))
        offset = low + index if index < negative else index - negative + 1
        new = format_like(value + offset, original)
        return new if new != original else format_like(value + (-1 if value < 0 else 1),
                                                       original)
    else:
        decimals = original.split(".", 1)[1] if "." in original else ""
        step = 10 ** -max(1, len(decimals))
        offsets = [d * step for d in range(-9, 10) if d and keeps_sign(value + d * step)]
    new = format_like(value + rng.choice(offsets), original)
    if new == original:  # rounding in format_like undid the change: step away from zero
        new = format_like(value + (-1 if value < 0 else 1), original)
    return new


def _change_number(item: GoldItem, span: Span, rng: random.Random, summary: str) -> RuleResult:
    wrong = wrong_value(span.text, rng)
    return RuleResult(replace(item.gold_answer, span, wrong),
                      (Change(span.text, wrong, span.start),), summary)


@rule("number-errors")
def number_errors(item: GoldItem, rng: random.Random) -> RuleResult:
    candidates = quantities(item.gold_answer)
    if not candidates:
        raise Declined("the answer holds no number")
    return _change_number(item, rng.choice(candidates), rng, "a number changed to a wrong value")


@rule("copying-numbers")
def copying_numbers(item: GoldItem, rng: random.Random) -> RuleResult:
    given = {parse_number(s.text) for s in quantities(item.instruction)}
    copies = [s for s in quantities(item.gold_answer) if parse_number(s.text) in given]
    if not copies:
        raise Declined("the answer copies no number from the question")
    first_copies: dict[float, Span] = {}
    for span in copies:  # the first place each given number is copied into the working
        first_copies.setdefault(parse_number(span.text), span)
    span = rng.choice(list(first_copies.values()))
    return _change_number(item, span, rng, "a number from the question copied wrongly")


_RESULT = re.compile(r"=\s*[$€£]?(?P<number>-?\d[\d,]*(?:\.\d+)?)")


@rule("calculations")
def calculations(item: GoldItem, rng: random.Random) -> RuleResult:
    results = [Span(m.start("number"), m.end("number"), m.group("number"))
               for m in _RESULT.finditer(item.gold_answer)]
    if len(results) < 2:
        raise Declined("fewer than two computed results; changing the only one is a final error")
    # Break an intermediate result; the final result (the last one) stays as it was.
    span = rng.choice(results[:-1])
    return _change_number(item, span, rng, "an intermediate result computed wrongly")


@rule("final-errors")
def final_errors(item: GoldItem, rng: random.Random) -> RuleResult:
    candidates = quantities(item.gold_answer)
    if not candidates:
        raise Declined("the answer states no number")
    return _change_number(item, candidates[-1], rng, "the final answer changed; the working kept")


UNIT_SWAPS = {
    "km": "miles", "kilometres": "miles", "kilometers": "miles", "miles": "kilometres",
    "metres": "feet", "meters": "feet", "m": "ft", "feet": "metres", "cm": "mm", "mm": "cm",
    "kg": "lb", "kilograms": "pounds", "pounds": "kilograms", "grams": "ounces", "g": "mg",
    "litres": "gallons", "liters": "gallons", "L": "mL", "mL": "L", "gallons": "litres",
    "hours": "minutes", "hour": "minute", "minutes": "seconds", "seconds": "minutes",
    "days": "weeks", "weeks": "days", "°C": "°F", "°F": "°C", "m²": "m", "cm²": "cm",
    "km²": "km", "m³": "m²", "km/h": "m/s", "mph": "km/h", "m/s": "km/h", "%": "‰",
    "square metres": "metres", "square meters": "meters", "cm³": "cm²",
}
_UNIT = re.compile(r"(?<=\d)(?P<space>\s?)(?P<unit>" + "|".join(
    sorted((re.escape(u) for u in UNIT_SWAPS), key=len, reverse=True)) + r")(?![\w²³])")


@rule("incorrect-units")
def incorrect_units(item: GoldItem, rng: random.Random) -> RuleResult:
    units = [Span(m.start("unit"), m.end("unit"), m.group("unit"))
             for m in _UNIT.finditer(item.gold_answer)]
    if not units:
        raise Declined("no quantity with a unit")
    span = units[-1] if rng.random() < 0.6 else rng.choice(units)  # mostly the result's unit
    wrong = UNIT_SWAPS[span.text]
    return RuleResult(replace(item.gold_answer, span, wrong),
                      (Change(span.text, wrong, span.start),), "a quantity given the wrong unit")
