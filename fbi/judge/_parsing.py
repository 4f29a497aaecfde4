"""Turning a judge's raw reply into a score or a pairwise verdict, so no answer can forge it.

The answers under evaluation are written by whoever made the dataset, and the judge may
repeat them; a verdict must come from the judge alone (issue 12).

**Structured replies.** The verdict is the reply's own JSON object: the last complete
*top-level* object (code fences and surrounding text allowed) that carries a valid
value for the field asked for — one that also has an ``explanation`` string, as the
prompts ask, is preferred over a bare one. Objects nested inside the judge's object
(an answer quoted in its explanation) are never top level, and a reply is never
discarded because an answer holds the same bytes: the reply is the judge's.

**Free text.** The verdict is the judge's closing verdict statement: the last verdict
marker in the reply after removing the spans the judge explicitly quotes (text inside
quotation marks, code spans, fences or ``>`` quote lines that also occurs in an answer).
Numbers are scores only in a score pattern (``[[N]]``, ``Rating: N``, ``Score: N/M``,
``N/M`` or ``N out of M`` with M the top of the range); the most explicit pattern
present decides. Words become verdicts only in a verdict statement ("Final verdict: a
tie", "my verdict is a win for B"); ``[[A]]``/``[[B]]``/``[[C]]`` (tie) are markers
anywhere.

A reply with no verdict, a score outside the range, a refusal, a broken JSON object or
a reply cut off by the token limit is ``unparseable``: its own outcome, never counted
silently as detected or undetected.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: 3: the last valid top-level JSON object, never discarded as an echo; free text read
#: from the judge's verdict statement after removing its quotes of the answers.
PARSER_VERSION = "3"

_VERDICT_WORDS = {
    "a": "A", "b": "B", "tie": "tie", "c": "tie", "both_bad": "both_bad",
    "both bad": "both_bad", "both-bad": "both_bad", "d": "both_bad",
}
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LABEL = r"\b(?:rating|score)\b[\"']?\**\s*(?:[:=]|\bis\b)\s*\**\s*"
_BRACKET_SCORE = re.compile(r"\[\[\s*" + _NUMBER + r"\s*\]\]")
_LABELLED_SCORE = re.compile(_LABEL + _NUMBER + r"(?:\s*(?:/|out of)\s*(\d+))?",
                             re.IGNORECASE)
_FRACTION_SCORE = re.compile(r"(?<![\d./])" + _NUMBER + r"\s*(?:/|out of)\s*(\d+)(?![\d/])",
                             re.IGNORECASE)
_BRACKET_VERDICT = re.compile(r"\[\[\s*(A|B|C|D|tie|both[ _-]bad)\s*\]\]", re.IGNORECASE)
# A verdict statement runs from "verdict" (or "final decision/answer/choice") to the end
# of its sentence.
_STATEMENT = re.compile(
    r"\b(?:verdict|final (?:decision|answer|choice))\b(?P<clause>[^\n]{0,200}?)"
    r"(?:[.!?;](?=\s|$)|\n|$)", re.IGNORECASE)
_SLOT = r"(?:(?:assistant|answer|output|response)\s+)?[\"'“*]*(?-i:(A|B))(?![\w-])"
_WINNER_PHRASES = [re.compile(p, re.IGNORECASE) for p in (
    r"\bwin(?:s|ner)?\s+(?:for|to|is)\s+" + _SLOT,
    r"\bin\s+favou?r\s+of\s+" + _SLOT,
    r"\bprefer(?:s|red)?\s+" + _SLOT,
    _SLOT + r"[\"'”*]*\s+(?:wins|is\s+(?:the\s+)?(?:better|superior|stronger|winner))",
)]
_TIE = re.compile(r"\b(?:tie|tied|draw|equally good)\b", re.IGNORECASE)
_BOTH_BAD = re.compile(
    r"\bboth[ _-]bad\b|\bboth\b[^.]{0,30}?\b(?:bad|unacceptable|wrong|incorrect)\b",
    re.IGNORECASE)
_DIRECT = re.compile(r"^\W*(?:(?:is|was)\W+)?" + _SLOT, re.IGNORECASE)
_LABEL_BEFORE_QUOTE = re.compile(
    r"(?:\bverdict\b|\bfinal (?:decision|answer|choice)\b|\b(?:rating|score)\b)"
    r"\W{0,3}(?:is)?\W{0,3}$", re.IGNORECASE)
_FENCED_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_QUOTED_SPANS = [
    _FENCED_BLOCK,
    re.compile(r"`([^`\n]+)`"),  # code span
    re.compile(r"“([^”]+)”"),  # quotes may span lines: an answer quoted whole
    re.compile(r"‘([^’]+)’"),
    re.compile(r"«([^»]+)»"),
    re.compile(r"^[ \t]*>[ \t]?(.*)$", re.MULTILINE),  # a quoted line
]
_REFUSAL = re.compile(r"\b(I can(?:no|')t|I am unable|I'm unable|I won't|as an AI)\b",
                      re.IGNORECASE)
_FENCE_START = re.compile(r"^```[a-zA-Z]*\s*")


@dataclass(frozen=True)
class ParsedReply:
    status: Literal["ok", "unparseable"]
    score: int | None = None
    verdict: str | None = None  # the slot verdict: A, B, tie or both_bad
    explanation: str | None = None
    reason: str | None = None  # why it is unparseable
    at: int | None = None  # where the object or marker that gave the verdict starts


def parse_reply(
    text: str,
    field: Literal["score", "verdict"],
    score_range: tuple[int, int] | None = None,
    echoes: Sequence[str] = (),
    finish_reason: str | None = None,
) -> ParsedReply:
    """Parse one reply. ``echoes`` are the texts under evaluation (answers, instruction):
    what the judge quotes from them is not its verdict."""
    if not text or not text.strip():
        return ParsedReply("unparseable", reason="empty reply")
    objects = _objects_with_places(text)
    quotes = _quoted_spans(text, [e for e in echoes if e], objects)
    unquoted = _outside(objects, quotes)
    if _FENCE_START.sub("", text.strip()).startswith("{"):
        # A reply that is a JSON object is read only as one: the free-text patterns
        # would read what is inside its strings (often the answers, quoted). Its object
        # is the judge's even where an answer holds the same bytes.
        found = _from_json(unquoted, field, score_range) or _from_json(objects, field,
                                                                         score_range)
        return _placed(found) if found else _broken_json(objects, field, finish_reason)
    # Free text with perhaps an object in it: the judge's last word outside its quotes
    # of the answers decides, a JSON object or a verdict marker.
    structured = _from_json(unquoted, field, score_range)
    # Markers inside an object are in its strings (often an answer, quoted).
    visible = _blanked(text, [*quotes, *((start, end) for start, end, _ in objects)])
    marker = _last_score(visible, score_range) if field == "score" else _last_verdict(visible)
    if marker is not None and (structured is None or structured[1].status != "ok"
                               or marker[0] > structured[0]):
        return _placed((marker[0], _checked(marker[1], field, score_range, text.strip())))
    if structured is not None:
        return _placed(structured)
    # The judge's own fenced object that merely equals an answer's bytes.
    fenced = _from_json(_outside(objects, [(start, end) for start, end in quotes
                                           if not _FENCED_BLOCK.fullmatch(text, start, end)]),
                        field, score_range)
    if fenced is not None:
        return _placed(fenced)
    if finish_reason == "length":
        return ParsedReply("unparseable", reason="reply cut off by the token limit")
    if _REFUSAL.search(text):
        return ParsedReply("unparseable", reason="refusal")
    return ParsedReply("unparseable", reason="no verdict found")


def _placed(found: tuple[int, ParsedReply]) -> ParsedReply:
    start, parsed = found
    return dataclasses.replace(parsed, at=start) if parsed.status == "ok" else parsed


Placed = tuple[int, int, dict]  # a JSON object and where it starts and ends in the reply


def _outside(objects: list[Placed], spans: list[tuple[int, int]]) -> list[Placed]:
    return [(start, end, obj) for start, end, obj in objects
            if not any(q_start <= start and end <= q_end for q_start, q_end in spans)]


def _broken_json(objects: list[Placed], field: str, finish_reason: str | None) -> ParsedReply:
    if finish_reason == "length":
        return ParsedReply("unparseable", reason="reply cut off by the token limit")
    if objects:
        return ParsedReply("unparseable", reason=f"JSON reply without {field!r}")
    return ParsedReply("unparseable", reason="broken JSON object")


# ------------------------------------------------------------------ structured replies


def _from_json(objects: list[Placed], field: str, score_range
               ) -> tuple[int, ParsedReply] | None:
    """The reading of the last object carrying a valid value for the field (one with an
    explanation preferred) and where it starts; None when no object has the field."""
    readings = [(start, obj, _checked(obj[field], field, score_range, _explanation_of(obj)))
                for start, _, obj in objects if field in obj]
    if not readings:
        return None
    valid = [(start, parsed) for start, _, parsed in readings if parsed.status == "ok"]
    explained = [(start, parsed) for start, obj, parsed in readings
                 if parsed.status == "ok" and isinstance(obj.get("explanation"), str)]
    return (explained or valid or [(start, parsed) for start, _, parsed in readings])[-1]


def top_level_objects(text: str) -> list[dict]:
    """Every complete JSON object in ``text`` that is not inside another one, in order."""
    return [obj for _, _, obj in _objects_with_places(text)]


def _objects_with_places(text: str) -> list[Placed]:
    """(start, end, object) of every top-level JSON object in ``text``.

    An object that starts but never closes swallows the rest of the text: what follows
    its opening brace is its content, not the judge's next statement.
    """
    decoder = json.JSONDecoder(strict=False)  # raw line breaks inside strings happen
    objects: list[Placed] = []
    index = text.find("{")
    while index != -1:
        try:
            obj, end = decoder.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            end = _matching_brace(text, index)
            if end is None:
                break
        else:
            if isinstance(obj, dict):
                objects.append((index, end, obj))
        index = text.find("{", end)
    return objects


def _matching_brace(text: str, start: int) -> int | None:
    """Where the brace-delimited, JSON-ish span opening at ``start`` ends (strings
    respected), or None if it never closes."""
    depth, in_string, escaped = 0, False, False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def _explanation_of(obj: dict) -> str | None:
    explanation = obj.get("explanation")
    return explanation if isinstance(explanation, str) else None


# ------------------------------------------------------------------ free text


def _quoted_spans(text: str, answers: Sequence[str],
                  objects: list[Placed]) -> list[tuple[int, int]]:
    """Where the reply quotes the answers: quotation marks, code spans, fences or ``>``
    lines whose content occurs in an answer. Quotation marks inside a JSON object are
    its syntax, not quotes; a quoted value right after a verdict label ("Verdict:
    \"tie\"") is the judge's own."""
    if not answers:
        return []
    haystacks: list[str] = []  # the answers normalised, on the first candidate quote only

    def quotes_an_answer(start: int, end: int, content: str) -> bool:
        content = _normalised(content)
        if not haystacks:
            haystacks.extend(_normalised(a) for a in answers)
        # the label, if any, sits just before the quote on the same line
        line_start = text.rfind("\n", max(0, start - 40), start) + 1 or max(0, start - 40)
        return (bool(content) and any(content in h for h in haystacks)
                and not _LABEL_BEFORE_QUOTE.search(text[line_start:start]))

    def in_an_object(position: int) -> bool:
        return any(start < position < end for start, end, _ in objects)

    spans = []
    for pattern in _QUOTED_SPANS:
        for match in pattern.finditer(text):
            if not in_an_object(match.start()) and quotes_an_answer(
                    match.start(), match.end(), match.group(1)):
                spans.append((match.start(), match.end()))
    for quote in ('"', "'"):
        spans += _straight_quoted(text, quote, quotes_an_answer, in_an_object)
    return spans


def _straight_quoted(text: str, quote: str, quotes_an_answer, in_an_object
                     ) -> list[tuple[int, int]]:
    """Spans between straight quote marks that quote an answer, the longest from each
    opening mark. A single quote opens only after a non-letter and closes only before
    one, so apostrophes ("I'd", "A's") are not quotes.

    A stretch that is not in an answer has no longer extension that is, so each opening
    mark extends to the next marks only while the text so far is still a quote.
    """
    marks = [i for i, char in enumerate(text) if char == quote]
    if quote == "'":
        opens = [m for m in marks if m == 0 or not text[m - 1].isalnum()]
        closes = {m for m in marks if m + 1 >= len(text) or not text[m + 1].isalnum()}
    else:
        opens, closes = marks, set(marks)
    spans: list[tuple[int, int]] = []
    after = -1
    for start in opens:
        if start <= after or in_an_object(start):
            continue
        longest = None
        for index in range(bisect.bisect_right(marks, start), len(marks)):
            end = marks[index]
            if not quotes_an_answer(start, end + 1, text[start + 1:end]):
                break
            if end in closes:
                longest = end
        if longest is not None:
            spans.append((start, longest + 1))
            after = longest
    return spans


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the spans replaced by spaces (same length, so order is kept)."""
    characters = list(text)
    for start, end in spans:
        characters[start:end] = " " * (end - start)
    return "".join(characters)


def _normalised(text: str) -> str:
    return " ".join(text.split()).lower()


def _last_score(text: str, score_range: tuple[int, int] | None) -> tuple[int, str] | None:
    """The last score of the most explicit score pattern present, and where it is."""
    top = score_range[1] if score_range else None
    bracketed = [(m.start(), m.group(1)) for m in _BRACKET_SCORE.finditer(text)]
    labelled = [(m.start(), m.group(1)) for m in _LABELLED_SCORE.finditer(text)
                if m.group(2) is None or top is None or int(m.group(2)) == top]
    fractions = [(m.start(), m.group(1)) for m in _FRACTION_SCORE.finditer(text)
                 if top is not None and int(m.group(2)) == top]
    strongest = bracketed or labelled or fractions
    return strongest[-1] if strongest else None


def _last_verdict(text: str) -> tuple[int, str] | None:
    """The last verdict marker, a [[X]] anywhere or a verdict statement's verdict, and
    where it is."""
    found = [(m.start(), m.group(1)) for m in _BRACKET_VERDICT.finditer(text)]
    for statement in _STATEMENT.finditer(text):
        verdict = _verdict_of_clause(statement.group("clause"))
        if verdict is not None:
            found.append((statement.start(), verdict))
    return max(found) if found else None


def _verdict_of_clause(clause: str) -> str | None:
    """What a verdict statement says, most explicit form first."""
    bracketed = _BRACKET_VERDICT.search(clause)
    if bracketed:
        return bracketed.group(1)
    for phrase in _WINNER_PHRASES:
        winner = phrase.search(clause)
        if winner:
            return winner.group(1)
    if _BOTH_BAD.search(clause):
        return "both_bad"
    if _TIE.search(clause):
        return "tie"
    direct = _DIRECT.search(clause)
    return direct.group(1) if direct else None


# ------------------------------------------------------------------ values


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
