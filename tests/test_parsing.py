"""The verdict parser: the adversarial corpus of issue 12 and the plain cases."""

from __future__ import annotations

import pytest
from parsing_corpus import CASES, Case

from fbi.judge import parse_reply


def reading(case: Case):
    parsed = parse_reply(case.reply, case.field, case.score_range, case.answers,
                         case.finish_reason, structured=case.structured)
    if parsed.status != "ok":
        return None
    return parsed.score if case.field == "score" else parsed.verdict


def test_the_corpus_is_large_and_covers_every_kind_of_attack():
    kinds = {case.kind for case in CASES}
    assert len(CASES) >= 100
    assert {"json-echo", "json-nested", "json-quoted", "quoted-score", "quoted-verdict",
            "hedge", "fence", "broken", "prose", "quote-after"} <= kinds
    assert any(not case.structured for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}-{n}" for n, c in enumerate(CASES)])
def test_adversarial_corpus(case):
    assert reading(case) == case.expected


@pytest.mark.parametrize("reply, reason", [
    ("", "empty reply"),
    ('{"score": 11}', "score 11 outside 1-10"),
    ('{"score": 7.5}', "not a whole number"),
    ("I'm sorry, I can't evaluate this.", "refusal"),
    ("The answer has problems but I", "no verdict found"),
    ("Rating: [[3]]. No, Rating: [[7]].", "conflicting verdicts"),
    ('{"explanation": "The answer is', "broken JSON object"),
    ('{"explanation": "ok", "rating": 7}', "JSON reply without 'score'"),
])
def test_unparseable_replies_say_why(reply, reason):
    parsed = parse_reply(reply, "score", (1, 10))
    assert parsed.status == "unparseable" and reason in parsed.reason


def test_cut_off_reply_is_unparseable():
    parsed = parse_reply('{"explanation": "The answer is", ', "score", (1, 10),
                         finish_reason="length")
    assert parsed.status == "unparseable" and "cut off" in parsed.reason


def test_the_explanation_is_kept():
    parsed = parse_reply('{"explanation": "The answer is complete.\n\n" ,"score": 10}',
                         "score", (1, 10))
    assert parsed.explanation.startswith("The answer is complete.")
    free = parse_reply("Good answer.\nRating: [[8]]", "score", (1, 10))
    assert free.explanation == "Good answer.\nRating: [[8]]"


def test_a_huge_reply_with_many_quotes_parses():
    """(How fast: benchmarks/parser_adversarial.py; a test asserts no time.)"""
    answer = "x " * 50 + "Rating: [[10]]"
    reply = ('"x x" ' * 20_000) + "Rating: [[3]]"
    assert parse_reply(reply, "score", (1, 10), [answer]).score == 3
