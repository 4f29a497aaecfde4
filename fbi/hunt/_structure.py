"""Where things are in an answer: the character spans of each kind of place a change can
lie in (issue 49).

A *place* is a named function from a text to the spans ``(start, end)`` where it holds:
inside parentheses, quotes, brackets, inline code, a code block, a table row, a list item,
a heading, bold or italic text; the first, second or last sentence; the first or last
paragraph; a tenth, third or half of the answer. The hunt uses a place twice: as a
predicate (the change starts inside one of its spans) and as a placement (an operator is
asked to make its edit inside one of them, `fbi.hunt.Operator.apply`). Spans never cross
a paragraph break, so a stray bracket cannot claim half an answer.

Places are computed on the gold answer, once per answer (``places_of`` keeps the last
few thousand answers' spans).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from fbi.registry import Registry
from fbi.text import LIST_ITEM, sentences

Span = tuple[int, int]
PlaceFinder = Callable[[str], list[Span]]


@dataclass(frozen=True)
class Place:
    """A kind of place in an answer, as a finder of its spans."""

    name: str
    """The predicate's name (``in_parentheses``)."""
    phrase: str
    """How a description says it (``inside parentheses``)."""
    find: PlaceFinder
    """The spans of a text where it holds."""
    doc: str
    """What it means, with an example."""


PLACES: Registry[Place] = Registry("place", "fbi.places")
"""Every place by name, the built-in ones and any a user registers with
[`place`][fbi.hunt.place] (or a plug-in package through the ``fbi.places`` entry
points): a [`Registry`][fbi.registry.Registry]."""


def place(name: str, phrase: str) -> Callable[[PlaceFinder], PlaceFinder]:
    """Register a place: a function from a text to the spans ``(start, end)`` where it
    holds. It becomes a predicate (a change starting inside one of the spans) and a
    placement (edits made inside one). Example::

        from fbi.hunt import place

        @place("in_exclamation", "in an exclamation")
        def exclamations(text):
            \"\"\"A sentence ending in '!'.\"\"\"
            return [m.span() for m in re.finditer(r"[^.!?\\n]*!", text)]
    """
    def register(find: PlaceFinder) -> PlaceFinder:
        PLACES[name] = Place(name, phrase, find, " ".join((find.__doc__ or "").split()))
        places_of.cache_clear()
        return find
    return register


@lru_cache(maxsize=4096)
def places_of(text: str) -> dict[str, tuple[Span, ...]]:
    """Every place's spans in ``text`` (cached: the same gold answer is edited many
    times)."""
    return {name: tuple(p.find(text)) for name, p in PLACES.items()}


def _register(name: str, phrase: str, find: PlaceFinder, doc: str) -> None:
    PLACES[name] = Place(name, phrase, find, doc)


def _delimited(pattern: str) -> PlaceFinder:
    """The inside of each match's first group that matched: a change to a delimiter
    itself is not "inside"."""
    compiled = re.compile(pattern)

    def find(text: str) -> list[Span]:
        spans = []
        for match in compiled.finditer(text):
            group = next(i for i in range(1, compiled.groups + 1)
                         if match.group(i) is not None)
            spans.append((match.start(group), match.end(group)))
        return spans
    return find


# an inline stretch: up to 400 characters, no paragraph break (a single newline at most)
def _between(open_: str, close: str) -> PlaceFinder:
    body = rf"(?:[^{re.escape(close)}\n]|\n(?!\s*\n)){{1,400}}?"
    return _delimited(rf"{re.escape(open_)}({body}){re.escape(close)}")


_register("in_parentheses", "inside parentheses", _between("(", ")"),
          "Text between ( and ), e.g. «about 5 km (3 miles)».")
_register("in_brackets", "inside square brackets", _between("[", "]"),
          "Text between [ and ], e.g. a link's text or «[1]».")
_register("in_quotes", "inside quotation marks", _delimited(
    r'"((?:[^"\n]|\n(?!\s*\n)){1,400}?)"|“([^”]{1,400}?)”'
    r"|(?<![\w'])'([^'\n]{1,200}?)'(?![\w'])"),
    "Text between straight or curly double quotes, or single quotes that are not "
    'apostrophes, e.g. «he called it "the best"».')
_register("in_bold", "inside bold text", _delimited(
    r"(?<![*\\])\*\*((?:[^*\n]|\*(?!\*)){1,300}?)\*\*|(?<![_\w])__([^_\n]{1,300}?)__(?!\w)"),
    "Text between ** and ** (or __ and __), e.g. «**Note:** keep it dry».")
_register("in_italic", "inside italic text", _delimited(
    r"(?<![*\w\\])\*(?![\s*])([^*\n]{1,200}?)(?<!\s)\*(?![*\w])"
    r"|(?<![_\w])_(?![\s_])([^_\n]{1,200}?)(?<!\s)_(?![_\w])"),
    "Text between single * or _ (not bold, not a list marker), e.g. «*very* small».")


def code_blocks(text: str) -> list[Span]:
    """The lines between a ``` (or ~~~) fence and the next; an unclosed fence runs to the
    end."""
    spans, start = [], None
    for match in re.finditer(r"(?m)^[ \t]*(```|~~~)[^\n]*$", text):
        if start is None:
            start = match.end() + 1
        else:
            spans.append((start, match.start()))
            start = None
    if start is not None and start < len(text):
        spans.append((start, len(text)))
    return [(s, e) for s, e in spans if e > s]


def inline_code(text: str) -> list[Span]:
    outside_blocks = _not_in(code_blocks(text))
    return [(m.start(1), m.end(1)) for m in re.finditer(r"(?<!`)`([^`\n]+)`(?!`)", text)
            if outside_blocks(m.start())]


_register("in_code_block", "inside a code block", code_blocks,
          "The lines between a ``` fence and the next (an unclosed fence runs to the end).")
_register("in_inline_code", "inside inline code", inline_code,
          "Text between single backticks, e.g. «call `len(x)`».")


def _lines(pattern: str) -> PlaceFinder:
    compiled = re.compile(pattern, re.MULTILINE)

    def find(text: str) -> list[Span]:
        outside_blocks = _not_in(code_blocks(text))
        return [m.span() for m in compiled.finditer(text) if outside_blocks(m.start())]
    return find


def list_items(text: str) -> list[Span]:
    outside_blocks = _not_in(code_blocks(text))
    return [(m.start("body"), m.end("body")) for m in LIST_ITEM.finditer(text)
            if outside_blocks(m.start())]


_register("in_table_row", "inside a table row", _lines(r"^[ \t]*\|.*\|[ \t]*$"),
          "A Markdown table row: a line that starts and ends with |.")
_register("in_heading", "inside a heading", _lines(r"^[ \t]{0,3}#{1,6}[ \t]+\S.*$"),
          "A Markdown heading line, e.g. «## Steps».")
_register("in_list_item", "inside a list item", list_items,
          "A bulleted or numbered list item's text, e.g. «2. Bake for 25 minutes».")


_register("after_colon", "after a colon", _delimited(r"(?m):[ \t]+([^\n]{1,400})"),
          "The rest of a line after a colon, e.g. «Cost: $40».")
_register("in_dashes", "between dashes", _delimited(
    r"(?<=\S) (?:—|–|--) ([^\n—–]{1,200}?) (?:—|–|--)(?= )|—([^\n—]{1,200}?)—"),
    "An aside between two dashes, e.g. «the city — then the capital — grew».")


def _sentence(index: int) -> PlaceFinder:
    def find(text: str) -> list[Span]:
        spans = sentences(text)
        needed = 2 if index != 0 else 1  # "the last" of one sentence is "the first"
        if len(spans) < max(needed, index + 1):
            return []
        chosen = spans[index]
        return [(chosen.start, chosen.end)]
    return find


_register("in_first_sentence", "in the first sentence", _sentence(0),
          "The answer's first sentence (a list item or a line counts as a sentence).")
_register("in_second_sentence", "in the second sentence", _sentence(1),
          "The answer's second sentence.")
_register("in_last_sentence", "in the last sentence", _sentence(-1),
          "The answer's last sentence (of two or more).")


def paragraphs(text: str) -> list[Span]:
    """Runs of lines between blank lines."""
    return [m.span() for m in re.finditer(r"\S(?:.|\n(?![ \t]*\n))*", text)]


def _paragraph(index: int) -> PlaceFinder:
    def find(text: str) -> list[Span]:
        found = paragraphs(text)
        return [found[index]] if len(found) >= 2 else []
    return find


_register("in_first_paragraph", "in the first paragraph", _paragraph(0),
          "The answer's first paragraph (of two or more).")
_register("in_last_paragraph", "in the last paragraph", _paragraph(-1),
          "The answer's last paragraph (of two or more).")


def _fraction(k: int, parts: int) -> PlaceFinder:
    def find(text: str) -> list[Span]:
        start, end = len(text) * k // parts, len(text) * (k + 1) // parts
        return [(start, end)] if end > start else []
    return find


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
             "ninth")
for _k in range(10):
    _ordinal = "last" if _k == 9 else _ORDINALS[_k]
    _register(f"in_tenth_{_k + 1}", f"in the {_ordinal} tenth of the answer",
              _fraction(_k, 10), f"The {_ordinal} tenth of the answer, by characters.")
for _k, _word in enumerate(("first", "middle", "last")):
    _register(f"in_{_word}_third", f"in the {_word} third of the answer", _fraction(_k, 3),
              f"The {_word} third of the answer, by characters.")
for _k, _word in enumerate(("first", "second")):
    _register(f"in_{_word}_half", f"in the {_word} half of the answer", _fraction(_k, 2),
              f"The {_word} half of the answer, by characters.")


def _not_in(spans: list[Span]) -> Callable[[int], bool]:
    return lambda position: not any(s <= position < e for s, e in spans)


def inside(spans: tuple[Span, ...] | list[Span], position: int) -> bool:
    """Whether ``position`` lies in one of ``spans``."""
    return any(s <= position < e for s, e in spans)
