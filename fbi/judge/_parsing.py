"""Turning a judge's raw reply into a score or a pairwise verdict.

Structured output first (the reply is, or ends with, a JSON object), then a tolerant
parser for free text ("Rating: [[7]]", "Score: 7/10", "[[A]]", "Verdict: B").

Only the judge's own verdict counts. A candidate that is a verbatim echo of the answers
under evaluation (an answer that itself says "Rating: 10" or "[[A]]") is ignored; of the
rest, the last one wins, since judges give their verdict at the end. A reply with no
verdict, a score outside the range, a refusal, or a reply cut off by the token limit is
``unparseable``: its own outcome, never counted silently as detected or undetected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PARSER_VERSION = "2"  # 2: raw line breaks inside JSON strings; quoted "score" keys

_VERDICT_WORDS = {
    "a": "A", "b": "B", "tie": "tie", "c": "tie", "both_bad": "both_bad",
    "both bad": "both_bad", "both-bad": "both_bad", "d": "both_bad",
}
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS = [
    re.compile(r"\[\[\s*" + _NUMBER + r"\s*\]\]"),  # [[7]]
    re.compile(r"\b(?:rating|score|grade)\b[\"']?\s*(?:is|of)?\s*[:=]?\s*\**\s*" + _NUMBER +
               r"(?:\s*/\s*\d+)?", re.IGNORECASE),  # Score: 7/10, rating of 7
    re.compile(_NUMBER + r"\s*/\s*(?:10|5|3)\b"),  # 7/10
]
_VERDICT_PATTERNS = [
    re.compile(r"\[\[\s*(A|B|C|D|tie|both[ _-]bad)\s*\]\]", re.IGNORECASE),
    re.compile(r"\bverdict\b\s*(?:is)?\s*[:=]?\s*\**\s*\"?(A|B|tie|both[ _-]bad)\b\"?",
               re.IGNORECASE),
]
_REFUSAL = re.compile(r"\b(I can(?:no|')t|I am unable|I'm unable|I won't|as an AI)\b",
                      re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_ECHO_CONTEXT = 40  # characters to the left of a match checked against the answers


@dataclass(frozen=True)
class ParsedReply:
    status: Literal["ok", "unparseable"]
    score: int | None = None
    verdict: str | None = None  # the slot verdict: A, B, tie or both_bad
    explanation: str | None = None
    reason: str | None = None  # why it is unparseable


def parse_reply(
    text: str,
    field: Literal["score", "verdict"],
    score_range: tuple[int, int] | None = None,
    echoes: Sequence[str] = (),
    finish_reason: str | None = None,
) -> ParsedReply:
    """Parse one reply. ``echoes`` are the texts under evaluation (the answers)."""
    if not text or not text.strip():
        return ParsedReply("unparseable", reason="empty reply")
    echoes = [e for e in echoes if e]
    structured = _from_json(text, field, echoes)
    if structured is not None:
        value, explanation = structured
        return _checked(value, field, score_range, explanation)
    candidates = _free_text_candidates(text, field, echoes)
    if candidates:
        return _checked(candidates[-1], field, score_range, _free_explanation(text))
    if finish_reason == "length":
        return ParsedReply("unparseable", reason="reply cut off by the token limit")
    if _REFUSAL.search(text):
        return ParsedReply("unparseable", reason="refusal")
    return ParsedReply("unparseable", reason="no verdict found")


def _checked(value, field: str, score_range, explanation) -> ParsedReply:
    if field == "verdict":
        verdict = _VERDICT_WORDS.get(str(value).strip().lower())
        if verdict is None:
            return ParsedReply("unparseable", reason=f"unknown verdict {value!r}")
        return ParsedReply("ok", verdict=verdict, explanation=explanation)
    score = _as_int(value)
    if score is None:
        return ParsedReply("unparseable", reason=f"score {value!r} is not a whole number")
    if score_range is not None and not score_range[0] <= score <= score_range[1]:
        return ParsedReply("unparseable",
                           reason=f"score {score} outside {score_range[0]}-{score_range[1]}")
    return ParsedReply("ok", score=score, explanation=explanation)


def _as_int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def _is_echo(snippet: str, echoes: Sequence[str]) -> bool:
    snippet = snippet.strip()
    return bool(snippet) and any(snippet in echo for echo in echoes)


def _from_json(text: str, field: str, echoes: Sequence[str]):
    """(value, explanation) from the reply's own JSON object, or None."""
    stripped = _FENCE.sub("", text.strip())
    candidates = []
    try:
        candidates.append(json.loads(stripped, strict=False))
    except json.JSONDecodeError:
        # A JSON object inside free text: consider each, last one first.
        for match in reversed(list(re.finditer(r"\{[^{}]*\}", text))):
            if _is_echo(match.group(0), echoes):
                continue
            try:
                candidates.append(json.loads(match.group(0), strict=False))
            except json.JSONDecodeError:
                continue
    for obj in candidates:
        if isinstance(obj, dict) and field in obj:
            if _is_echo(json.dumps(obj), echoes) or _is_echo(stripped, echoes):
                continue
            explanation = obj.get("explanation")
            return obj[field], explanation if isinstance(explanation, str) else None
    return None


def _free_text_candidates(text: str, field: str, echoes: Sequence[str]) -> list[str]:
    patterns = _VERDICT_PATTERNS if field == "verdict" else _SCORE_PATTERNS
    found: list[tuple[int, str]] = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            # The match with its context on the same line: if an answer holds that text,
            # the judge is quoting the answer, not giving its verdict.
            line_start = text.rfind("\n", 0, match.start()) + 1
            left = text[max(line_start, match.start() - _ECHO_CONTEXT): match.end()]
            if _is_echo(left, echoes):
                continue
            found.append((match.start(), match.group(1)))
        if found:
            break  # the most explicit pattern that matches decides
    return [value for _, value in sorted(found)]


def _free_explanation(text: str) -> str | None:
    explanation = text.strip()
    return explanation or None
