"""The JSON objects a judge's reply or an answer holds: strict JSON first, then the lenient
shapes the FBI authors' reader accepts, at any depth (issue 38).

The authors' reader (``scripts/analyze_results.py``: langchain's partial-JSON parser, then
``ast.literal_eval``) accepts shapes strict JSON refuses, and fbi reads them too where the
reading is unambiguous: Python-dict quotes (``{'score': 3}``), Python literals (``True``,
``None``), trailing commas, a missing final brace (only when the reply was not cut off by
the token limit: a cut-off ``{"score": 1`` may have been 10), line breaks inside strings.
An answer's objects are found wherever they start — nested in others, after an unclosed
brace of code, written inside a JSON string — so no object an answer holds can pass for
the judge's (`fbi.judge._parsing`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator, Sequence

Placed = tuple[int, int, dict]  # a JSON object and where it starts and ends in the reply

#: The longest span read leniently (a Python dict, a missing brace): bounds the work an
#: answer with many braces can make the parser do.
_LENIENT_CHARS = 20_000
#: Characters of an answer decoded in all to find the objects it holds (beyond them, an
#: object the judge repeats is still recognised by its text).
_ANSWER_DECODE_CHARS = 2_000_000
# Where a verdict field is a key: the objects an answer holds are found from these.
_FIELD_KEY = re.compile(r"""["']?\b(?:score|verdict)\b["']?\s*:""")


def objects_with_places(text: str, close_unclosed: bool = True,
                         copied: Callable[[int], bool] = lambda index: False
                         ) -> list[Placed]:
    """(start, end, object) of every top-level JSON object in ``text``, strict JSON first
    and then the lenient shapes (see the module docstring).

    An object that starts but never closes swallows the rest of the text: what follows
    its opening brace is its content, not the judge's next statement. It is read with its
    missing braces added when ``close_unclosed`` (the reply was not cut off). A brace the
    judge ``copied`` from an answer (code it repeats) opens nothing of the judge's: the
    search goes on after it.
    """
    decoder = json.JSONDecoder(strict=False)  # raw line breaks inside strings happen
    objects: list[Placed] = []
    index = text.find("{")
    while index != -1:
        try:
            obj, end = decoder.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            end, depth = _matching_brace(text, index)
            if end is None and copied(index):
                index = text.find("{", index + 1)
                continue
            if end is None:
                if close_unclosed and depth:
                    obj = _lenient(text[index:] + "}" * depth)
                    if isinstance(obj, dict):
                        objects.append((index, len(text), obj))
                break
            obj = _lenient(text[index:end])
        if isinstance(obj, dict):
            objects.append((index, end, obj))
        index = text.find("{", end)
    return objects


def _matching_brace(text: str, start: int) -> tuple[int | None, int]:
    """Where the brace-delimited span opening at ``start`` ends (strings in either quote
    respected), or None and the depth left open when it never closes (0: it ends inside
    a string, which no brace added can mend)."""
    depth, quote, escaped = 0, "", False
    for position in range(start, min(len(text), start + 4 * _LENIENT_CHARS)):
        char = text[position]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            # an apostrophe inside a word ("it's") opens no string
            if char == '"' or not (position and text[position - 1].isalnum()):
                quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1, 0
    return None, 0 if quote else depth


_JSON_LITERALS = re.compile(r"""("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')|\b(true|false|null)\b""")
_TRAILING_COMMA = re.compile(r""",(\s*[}\]])""")


def _lenient(span: str) -> object | None:
    """``span`` read as the FBI authors' reader would: JSON with trailing commas, or a
    Python literal (single quotes, True/None, JSON's true/null too). None when neither."""
    if len(span) > _LENIENT_CHARS:
        return None
    python = _JSON_LITERALS.sub(
        lambda m: m.group(1) or {"true": "True", "false": "False", "null": "None"}[m.group(2)],
        span)
    attempts: list[Callable[[], object]] = [
        lambda: json.loads(_TRAILING_COMMA.sub(r"\1", span), strict=False),
        lambda: ast.literal_eval(span),
        lambda: ast.literal_eval(python),
    ]
    for attempt in attempts:
        try:
            return attempt()
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def answer_objects(text: str) -> Iterator[dict]:
    """The objects an answer holds that carry a verdict field at their top level, wherever
    they start: nested ones, ones after an unbalanced brace, lenient ones, and ones
    written inside a JSON string (``\\"``). Each is the innermost brace around a field
    key, decoded once; at most `_ANSWER_DECODE_CHARS` are decoded."""
    budget = _ANSWER_DECODE_CHARS
    for variant in dict.fromkeys((text, text.replace('\\"', '"'))):
        keys = [m.start() for m in _FIELD_KEY.finditer(variant)]
        if not keys:
            continue
        # braces paired outside strings, and (for a brace a string swallowed, as in
        # text that was JSON before its quotes were unescaped) paired ignoring quotes
        starts: dict[int, tuple[int | None, int]] = {}
        for quotes in (False, True):
            pairs, around = _brace_pairs(variant, quotes, keys)
            starts.update({brace: pairs[brace] for brace in around.values()})
        for brace, (end, depth) in sorted(starts.items()):
            span = variant[brace:end] if end else variant[brace:] + "}" * depth
            if (end is None and not depth) or len(span) > min(budget, _LENIENT_CHARS):
                continue
            budget -= len(span)
            try:
                obj = json.loads(span, strict=False)
            except (json.JSONDecodeError, RecursionError):
                obj = _lenient(span)
            if isinstance(obj, dict):
                yield obj


def _brace_pairs(text: str, quotes: bool = True, positions: Sequence[int] = ()
                 ) -> tuple[dict[int, tuple[int | None, int]], dict[int, int]]:
    """In one pass, for each brace outside strings (or every brace, without ``quotes``):
    where its span ends, or None and the braces it would need to close at the end of the
    text (0 when the text ends inside a string, which no brace mends); and for each of
    the sorted ``positions``, the innermost brace open there."""
    pairs: dict[int, tuple[int | None, int]] = {}
    around: dict[int, int] = {}
    stack: list[int] = []
    waiting = list(reversed(positions))
    quote, escaped = "", False
    for position, char in enumerate(text):
        while waiting and waiting[-1] <= position:
            if waiting.pop() == position and stack and not quote:
                around[position] = stack[-1]
        if quote:  # inside a string: only its end matters
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif quotes and (char == '"' or (char == "'" and not (
                position and text[position - 1].isalnum()))):
            quote = char
        elif char == "{":
            stack.append(position)
        elif char == "}" and stack:
            pairs[stack.pop()] = (position + 1, 0)
    for depth, position in enumerate(reversed(stack), start=1):
        pairs[position] = (None, 0 if quote else depth)
    return pairs, around
