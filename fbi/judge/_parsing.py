"""Turning a judge's raw reply into a score or a pairwise verdict: what the judge asserted,
not what any text in its reply looks like.

The answers under evaluation are written by whoever made the dataset, and the judge may
repeat them, quote them or paraphrase their ending; a verdict must come from the judge
alone (issues 12, 22 and 38). How a reply is read depends on what the judge was asked for.

**Structured replies** (the request carried a JSON schema, ``structured=True``). A reply
that opens with ``{`` (a code fence allowed) *is* the judge's object: it is read, and
nothing after it; a broken one is unparseable. After leading prose, the first top-level
object outside the judge's quotes of the answers that carries the field, and that no
answer holds, decides (an answer's object is found at any depth, after unbalanced braces,
and in the lenient shapes below). Objects nested inside an object are its strings. A
field's value may be in the bracketed form (``"verdict": "[[A]]"``, ``"score": "[[7]]"``),
as judges that mix the two formats write it. Otherwise the reply is read as free text.

**Lenient objects.** The FBI authors' reader accepts shapes strict JSON refuses (a
Python dict, a trailing comma, a missing final brace), and fbi reads them too where the
reading is unambiguous (`fbi.judge._objects`).

**Free text.** Every verdict marker is collected: for scores ``[[N]]``, ``Rating: N``,
``Score: N/M``, ``N/M`` or ``N out of M`` (M the top of the range), and JSON objects
carrying the score; for pairwise verdicts ``[[A]]``/``[[B]]``/``[[C]]``/``[[D]]``,
verdict statements ("Final verdict: a tie", "my verdict is a win for B") and JSON objects
carrying the verdict. Each marker falls in one of three tiers:

* **quoted** — inside the judge's quote of an answer (quotation marks of any script, code
  spans, fences, ``>`` lines, parentheses or emphasis whose content occurs in an answer),
  or inside a stretch of the reply copied from an answer that reaches past the marker by
  at least one word of content (not verdict vocabulary such as "my final verdict is"):
  never the judge's verdict;
* **the judge's own** — a marker whose text occurs in no answer;
* **ambiguous** — a marker whose text an answer also holds, standing on its own (a judge's
  honest "Rating: [[1]]" when an answer planted the same words).

The judge's own markers decide; failing those, the ambiguous ones — so an answer that
plants the judge's likely words cannot make its honest verdict vanish. Within a tier the
most explicit kind present decides (brackets and objects, then labels, then fractions);
markers that disagree make the reply unparseable ("conflicting verdicts", or "cannot tell
the judge's verdict from the answers' text" among ambiguous ones): never resolved by
position, since position is what a quoted forgery controls. Comparisons with the answers
are made on normalised text: invisible characters removed, Unicode NFKC, case folded,
quote marks, emphasis and ellipses removed, white space collapsed, surrounding
punctuation stripped.

A reply with no verdict, a score outside the range, a refusal, a broken JSON object or
a reply cut off by the token limit is ``unparseable``: its own outcome, never counted
silently as detected or undetected (the reports show the worst case beside every rate
that has unparseable replies).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from fbi.judge._objects import Placed, answer_objects, objects_with_places

#: 5 (issue 38): objects an answer holds are found at any depth and after unbalanced
#: braces; lenient object shapes (the authors'); a marker an answer also holds is the
#: judge's when it stands on its own, quoted only inside a copied stretch of the answer.
PARSER_VERSION = "5"

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
# A verdict statement runs from its keyword to the end of its sentence (or the next
# keyword: "A claims 'verdict: A', but my verdict is B" holds two statements).
_KEYWORD = re.compile(r"\b(?:verdict|final (?:decision|answer|choice))\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;](?=\s|$)|\n")
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
# What a judge puts around a quote: paired marks of every script (a quote may span
# lines: an answer quoted whole), code, ``>`` lines, emphasis and parentheses.
_QUOTED_SPANS = [
    _FENCED_BLOCK,
    re.compile(r"`([^`\n]+)`"),
    *(re.compile(re.escape(open_) + "([^" + re.escape(close) + "]+)" + re.escape(close))
      for open_, close in ("“”", "‘’", "«»", "»«", "‹›", "„“", "„”", "‚‘", "‚’", "「」",
                           "『』", "〝〞", "〝〟", "＂＂", "（）", "()")),
    re.compile(r"\*{1,2}([^*\n]+)\*{1,2}"),
    re.compile(r"^[ \t]*>[ \t]?(.*)$", re.MULTILINE),
]
# Removed before comparing a reply's text with an answer's: marks a quote adds.
_QUOTE_MARKS = re.compile("[\"'`´“”„‟‘’‚‛«»‹›「」『』〝〞〟＂＇′″❛❜❝❞*_~]")
_ELLIPSIS = re.compile(r"…|\.{3,}")
# Invisible characters an answer can hide inside a planted verdict, which a judge drops
# when it repeats it: zero-width spaces and joiners, direction marks, soft hyphens, BOMs.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_EDGE_PUNCTUATION = " \t\n.,;:!?-–—"
_REFUSAL = re.compile(r"\b(I can(?:no|')t|I am unable|I'm unable|I won't|as an AI)\b",
                      re.IGNORECASE)
_FENCE_START = re.compile(r"^\s*```[a-zA-Z]*\s*")
# Words a judge puts around its own verdict, which an answer can plant beside a forged
# one: a copied stretch must reach past them to count as a quote.
_VERDICT_VOCABULARY = frozenset(
    "my the a an this its i final overall verdict decision answer choice rating score "
    "scores is be would give gives giving it therefore thus so hence in conclusion "
    "summary out of assistant response output better winner wins win for to that and "
    "as follows here based on evaluation judgement judgment result".split())
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ParsedReply:
    """What the parser read from one judge reply: a score or a slot verdict, the explanation,
    or why it is unparseable."""
    status: Literal["ok", "unparseable"]
    """``ok``, or ``unparseable`` when no verdict could be read."""
    score: int | None = None
    """The score read (single-answer and reference strategies)."""
    verdict: str | None = None
    """The slot verdict: A, B, tie or both_bad."""
    explanation: str | None = None
    """The judge's explanation, when the reply holds one."""
    reason: str | None = None
    """Why it is unparseable."""
    at: int | None = None
    """Where the object or marker that gave the verdict starts."""


def parse_reply(
    text: str,
    field: Literal["score", "verdict"],
    score_range: tuple[int, int] | None = None,
    echoes: Sequence[str] = (),
    finish_reason: str | None = None,
    structured: bool = True,
) -> ParsedReply:
    """Parse one reply. ``echoes`` are the texts under evaluation (answers, instruction):
    what the judge quotes from them is not its verdict. ``structured``: the judge was
    asked for a JSON object (see the module docstring for both rules)."""
    if not text or not text.strip():
        return ParsedReply("unparseable", reason="empty reply")
    answers = _Answers([e for e in echoes if e])
    objects = objects_with_places(text, close_unclosed=finish_reason != "length",
                                   copied=lambda index: answers.copied_brace(text, index))
    opening = _FENCE_START.match(text)
    if structured and text[opening.end() if opening else 0:].lstrip().startswith("{"):
        # The reply is an object: it is the judge's, even where an answer holds the
        # same bytes, and nothing after it is read.
        if objects and objects[0][0] == text.index("{"):
            return _read_object(objects[0], field, score_range)
        return _broken_json(field, finish_reason)
    quotes = _quoted_spans(text, answers, objects)
    if structured:
        own = [o for o in _outside(objects, quotes)
               if field in o[2] and not answers.hold_object(o[2], text[o[0]:o[1]])]
        if own:
            return _read_object(own[0], field, score_range)
    parsed = _free_text(text, field, score_range, answers, objects, quotes, finish_reason)
    if structured and parsed.reason == "no verdict found":
        # Nothing outside its quotes: the judge's own fenced object that equals an
        # answer's (a judge asked for JSON that wraps its reply in a fence).
        fenced = [o for o in objects if field in o[2] and any(
            match.start() <= o[0] and o[1] <= match.end()
            for match in _FENCED_BLOCK.finditer(text))]
        if fenced:
            return _read_object(fenced[0], field, score_range)
    return parsed


def _read_object(placed: Placed, field: str, score_range) -> ParsedReply:
    start, _, obj = placed
    if field not in obj:
        return ParsedReply("unparseable", reason=f"JSON reply without {field!r}")
    return _placed(start, _checked(obj[field], field, score_range, _explanation_of(obj)))


def _placed(start: int, parsed: ParsedReply) -> ParsedReply:
    return dataclasses.replace(parsed, at=start) if parsed.status == "ok" else parsed


def _broken_json(field: str, finish_reason: str | None) -> ParsedReply:
    if finish_reason == "length":
        return ParsedReply("unparseable", reason="reply cut off by the token limit")
    return ParsedReply("unparseable", reason="broken JSON object")


def _outside(objects: list[Placed], spans: list[tuple[int, int]]) -> list[Placed]:
    return [(start, end, obj) for start, end, obj in objects
            if not any(q_start <= start and end <= q_end for q_start, q_end in spans)]


def _explanation_of(obj: dict) -> str | None:
    """fbi's "explanation", or the FBI authors' "justification" (--protocol paper)."""
    for name in ("explanation", "justification"):
        if isinstance(obj.get(name), str):
            return obj[name]
    return None


# ------------------------------------------------------------------ the answers


def normalised(text: str) -> str:
    """``text`` as compared with the answers: invisible characters removed, NFKC, case
    folded, quote marks, emphasis and ellipses removed, white space collapsed."""
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text)).casefold()
    return " ".join(_ELLIPSIS.sub(" ", _QUOTE_MARKS.sub("", text)).split())


def _same_value(a: object, b: object) -> bool:
    """Whether two JSON values read the same (``10``, ``"10"`` and ``"[[10]]"`` do)."""
    def plain(value: object) -> str:
        text = str(value).strip().casefold()
        bracketed = _BRACKETED_VALUE.fullmatch(text)
        return bracketed.group(1) if bracketed else text
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a == b
    return plain(a) == plain(b)


class _Answers:
    """The texts a verdict must not come from, normalised once and only when asked."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self._normalised: list[str] | None = None
        self._objects: list[dict] | None = None

    def __bool__(self) -> bool:
        return bool(self.texts)

    def hold(self, fragment: str) -> bool:
        """Whether the fragment, normalised and stripped of surrounding punctuation,
        occurs in an answer, not inside a longer word or number."""
        needle = normalised(fragment).strip(_EDGE_PUNCTUATION)
        if not needle or not self.texts:
            return False
        if self._normalised is None:
            self._normalised = [normalised(t) for t in self.texts]
        return any(_occurs(needle, haystack) for haystack in self._normalised)

    def hold_object(self, obj: dict, written: str) -> bool:
        """Whether an answer holds the object the judge ``written`` as ``obj``: its very
        text, or (in any shape fbi reads, at any depth) an object with every key and
        value of ``obj``."""
        if not self.texts:
            return False
        if self.hold(written):
            return True
        if self._objects is None:
            self._objects = [o for t in self.texts for o in answer_objects(t)]
        items = obj.items()
        return any(all(key in o and _same_value(o[key], value) for key, value in items)
                   for o in self._objects)

    def copied_brace(self, text: str, index: int) -> bool:
        """Whether the brace at ``index`` ends a stretch of words copied from an answer
        (``x = {`` of code the judge repeats), not one opening the judge's own object."""
        line_start = text.rfind("\n", max(0, index - 40), index) + 1 or max(0, index - 40)
        before = text[line_start:index + 1].lstrip(" \t>")  # a ``>`` quote's marks too
        return bool(re.search(r"\w", before)) and self.hold(before)

    def copied_around(self, text: str, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` lies in a stretch of the reply copied from an
        answer that reaches past it by a word of content: the judge repeating the
        answer, not stating its own verdict in words an answer also holds."""
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        first = bisect.bisect_right([w_end for _, w_end in words], start)
        last = bisect.bisect_left([w_start for w_start, _ in words], end) - 1
        for step, edge in ((-1, first), (1, last)):
            left, right = start, end
            index = edge + step
            while 0 <= index < len(words):
                w_start, w_end = words[index]
                left, right = (w_start, right) if step < 0 else (left, w_end)
                if not self.hold(text[left:right]):
                    break
                word = normalised(text[w_start:w_end]).strip(_EDGE_PUNCTUATION + "()[]{}")
                if word and word not in _VERDICT_VOCABULARY:
                    return True
                index += step
        return False


def _occurs(needle: str, haystack: str) -> bool:
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if not (needle[0].isalnum() and start and haystack[start - 1].isalnum()) and \
                not (needle[-1].isalnum() and end < len(haystack) and haystack[end].isalnum()):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _quoted_spans(text: str, answers: _Answers,
                  objects: list[Placed]) -> list[tuple[int, int]]:
    """Where the reply quotes the answers: a quote (see ``_QUOTED_SPANS``) whose content
    occurs in an answer. Quotation marks inside a JSON object are its syntax, not quotes;
    a quoted value right after a verdict label ("Verdict: \"tie\"") is the judge's own."""
    if not answers:
        return []

    def quotes_an_answer(start: int, end: int, content: str) -> bool:
        # the label, if any, sits just before the quote on the same line
        line_start = text.rfind("\n", max(0, start - 40), start) + 1 or max(0, start - 40)
        return (answers.hold(content)
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


# ------------------------------------------------------------------ free text


@dataclass(frozen=True)
class _Marker:
    at: int
    end: int
    value: object
    """What the marker says, before checking."""
    text: str
    """The marker's own words, compared with the answers."""
    rank: int = 0
    """How explicit (0 most): of the scores, the most explicit kind decides."""
    is_object: bool = False


def _free_text(text: str, field: str, score_range, answers: _Answers,
               objects: list[Placed], quotes: list[tuple[int, int]],
               finish_reason: str | None) -> ParsedReply:
    """The judge's own verdict markers (see the module docstring), or why there is none."""
    # Markers inside an object are in its strings (often an answer, quoted).
    visible = _blanked(text, [*quotes, *((start, end) for start, end, _ in objects)])
    found = _score_markers(visible, score_range) if field == "score" else \
        _verdict_markers(visible)
    found += [_Marker(start, end, obj[field], text[start:end], is_object=True)
              for start, end, obj in _outside(objects, quotes) if field in obj]
    own, ambiguous = [], []
    for marker in found:
        held = answers.hold_object(objects_at(objects, marker.at), marker.text) \
            if marker.is_object else answers.hold(marker.text)
        if not held:
            own.append(marker)
        elif not answers.copied_around(text, marker.at, marker.end):
            ambiguous.append(marker)
    for tier, disagreement in ((own, "conflicting verdicts"),
                               (ambiguous, "cannot tell the judge's verdict from the "
                                           "answers' text")):
        if not tier:
            continue
        if finish_reason == "length" and tier is ambiguous:
            # cut off: the judge's own verdict may be what is missing
            return ParsedReply("unparseable", reason="reply cut off by the token limit")
        rank = min(m.rank for m in tier)
        readings = [(m.at, _checked(m.value, field, score_range, text.strip()))
                    for m in tier if m.rank == rank]
        said = {(r.status, r.score, r.verdict, r.reason) for _, r in readings}
        if len(said) > 1:
            return ParsedReply("unparseable", reason=disagreement)
        at, parsed = max(readings, key=lambda reading: reading[0])
        return _placed(at, parsed)
    if finish_reason == "length":
        return ParsedReply("unparseable", reason="reply cut off by the token limit")
    if _REFUSAL.search(text):
        return ParsedReply("unparseable", reason="refusal")
    if text.lstrip().startswith("{") and not objects:
        return ParsedReply("unparseable", reason="broken JSON object")
    return ParsedReply("unparseable", reason="no verdict found")


def objects_at(objects: list[Placed], start: int) -> dict:
    """The object of ``objects`` that starts at ``start``."""
    return next(obj for at, _, obj in objects if at == start)


def _score_markers(text: str, score_range: tuple[int, int] | None) -> list[_Marker]:
    top = score_range[1] if score_range else None
    markers = [_Marker(m.start(), m.end(), m.group(1), m.group(0))
               for m in _BRACKET_SCORE.finditer(text)]
    markers += [_Marker(m.start(), m.end(), m.group(1), m.group(0), 1)
                for m in _LABELLED_SCORE.finditer(text)
                if m.group(2) is None or top is None or int(m.group(2)) == top]
    markers += [_Marker(m.start(), m.end(), m.group(1), m.group(0), 2)
                for m in _FRACTION_SCORE.finditer(text)
                if top is not None and int(m.group(2)) == top]
    return markers


def _verdict_markers(text: str) -> list[_Marker]:
    """Every ``[[X]]`` anywhere, and every verdict statement's verdict."""
    markers = [_Marker(m.start(), m.end(), m.group(1), m.group(0))
               for m in _BRACKET_VERDICT.finditer(text)]
    keywords = list(_KEYWORD.finditer(text))
    for index, keyword in enumerate(keywords):
        following = keywords[index + 1].start() if index + 1 < len(keywords) else len(text)
        limit = min(following, keyword.end() + 200)
        end = _CLAUSE_END.search(text, keyword.end(), limit)
        clause = text[keyword.end():end.start() if end else limit]
        said = _verdict_of_clause(clause)
        if said is not None:
            verdict, said_end = said
            markers.append(_Marker(keyword.start(), keyword.end() + said_end, verdict,
                                   text[keyword.start():keyword.end() + said_end]))
    return markers


def _verdict_of_clause(clause: str) -> tuple[str, int] | None:
    """What a verdict statement says, most explicit form first, and where saying it ends."""
    searches: list[Callable[[str], re.Match | None]] = [
        _BRACKET_VERDICT.search, *(p.search for p in _WINNER_PHRASES)]
    for search in searches:
        match = search(clause)
        if match:
            return match.group(1), match.end()
    for pattern, verdict in ((_BOTH_BAD, "both_bad"), (_TIE, "tie")):
        match = pattern.search(clause)
        if match:
            return verdict, match.end()
    direct = _DIRECT.search(clause)
    return (direct.group(1), direct.end()) if direct else None


# ------------------------------------------------------------------ values


_BRACKETED_VALUE = re.compile(r"\[\[\s*(.*?)\s*\]\]")


def _checked(value, field: str, score_range, explanation) -> ParsedReply:
    if isinstance(value, str):  # "[[A]]" or "[[7]]" as a JSON value: judges that mix formats
        bracketed = _BRACKETED_VALUE.fullmatch(value.strip())
        value = bracketed.group(1) if bracketed else value
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
    except (ValueError, OverflowError):
        return None
    return int(number) if number.is_integer() else None
