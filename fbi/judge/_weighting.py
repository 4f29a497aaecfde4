"""Probability-weighted scores, after G-Eval (Liu et al., 2023, §2.3): the score as the
expectation over the score values, weighted by the probability the judge gave each.

For a score given at token position *i*, the candidates at *i* whose text is a number in
the score range carry the weight; the result is renormalised over them (``mass`` says
how much of the position's probability they held). Only the judge's own score counts:
the token is found from where the parser read the verdict, so a number in the
explanation or in a quoted answer never stands in for it.

Multi-digit scores: a candidate that can begin a longer score (``1`` on a 1–10 scale can
begin ``10``) is resolved by the next position when it is the token the judge chose
(``1`` then ``0`` is 10, ``1`` then anything else is 1). When it is an alternative the
judge did not choose, what would have followed is unknown and it counts as itself. With
tokenizers that keep numbers up to 999 in one token (OpenAI's) this never arises; with
those that split digits (Llama, SmolLM) it is an approximation at the top of the range.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_JSON_SCORE = re.compile(r'"score"\s*:\s*"?\s*(\d+)')
_NUMBER = re.compile(r"(?<![\d.])(\d+)(?![\d.]\d)")
_LEADING_DIGITS = re.compile(r"[\s\"':]*(\d+)")

Candidates = list[tuple[str, float]]  # (token text, log-probability), chosen first


@dataclass(frozen=True)
class WeightedScore:
    expected: float
    probabilities: dict[int, float]
    """Score → probability, renormalised over the scores."""
    mass: float
    """The share of the score token's probability that fell on score values."""


def weighted_score(text: str, score: int, at: int, score_range: tuple[int, int],
                   tokens: list[Candidates]) -> WeightedScore | None:
    """The expected score of a reply whose parsed ``score`` the parser read from the
    object or marker starting at ``at``; None when the tokens do not spell ``text`` or
    no candidate there is a score."""
    if "".join(top[0][0] for top in tokens) != text:
        return None  # the token texts are not the reply (or were not kept)
    digits = _score_digits(text, score, at)
    if digits is None:
        return None
    index = _token_at(tokens, digits)
    if index is None:
        return None
    low, high = score_range
    values = range(low, high + 1)
    weights: dict[int, float] = {}
    for rank, (token, logprob) in enumerate(tokens[index]):
        leading = _LEADING_DIGITS.match(token)
        if leading is None:
            continue
        number = leading.group(1)
        probability = math.exp(logprob)
        longer = [v for v in values if str(v).startswith(number) and str(v) != number]
        if longer and rank == 0 and leading.end() == len(token) and index + 1 < len(tokens):
            for value, share in _continuations(number, tokens[index + 1], values).items():
                weights[value] = weights.get(value, 0.0) + probability * share
        elif int(number) in values:
            weights[int(number)] = weights.get(int(number), 0.0) + probability
    total = sum(weights.values())
    if total <= 0:
        return None
    probabilities = {value: weight / total for value, weight in sorted(weights.items())}
    expected = sum(value * p for value, p in probabilities.items())
    return WeightedScore(expected, probabilities, min(1.0, total))


def _score_digits(text: str, score: int, at: int) -> int | None:
    """Where the digits of the parsed score start in ``text``."""
    if text.startswith("{", at):
        found = _JSON_SCORE.search(text, at)
        if found and int(found.group(1)) == score:
            return found.start(1)
    for found in _NUMBER.finditer(text, at):
        if int(found.group(1)) == score:
            return found.start(1)
    return None


def _token_at(tokens: list[Candidates], offset: int) -> int | None:
    start = 0
    for index, top in enumerate(tokens):
        end = start + len(top[0][0])
        if start <= offset < end:
            # the token must not hold digits before the score's own (then it is not
            # where the score begins)
            return None if any(c.isdigit() for c in top[0][0][:offset - start]) else index
        start = end
    return None


def _continuations(prefix: str, following: Candidates, values: range) -> dict[int, float]:
    """How the chosen token ``prefix`` goes on, from the next position's candidates:
    score value → share (renormalised over the listed candidates)."""
    if not following:
        return {int(prefix): 1.0} if int(prefix) in values else {}
    # renormalised in log space: candidates of log-probability −10⁶ underflow to a sum
    # of 0 as plain probabilities, and the shares are still well defined
    top = max(logprob for _, logprob in following)
    total = sum(math.exp(logprob - top) for _, logprob in following)
    shares: dict[int, float] = {}
    for token, logprob in following:
        share = math.exp(logprob - top) / total
        more = re.match(r"\d+", token)
        value = int(prefix + more.group(0)) if more else int(prefix)
        if value in values:
            shares[value] = shares.get(value, 0.0) + share
    return shares
