"""Finding the spans rules work on: sentences, list items, numbers, words.

Every finder returns character spans into the original text, so a rule can replace
exactly one span and report exactly what it changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A number as written in answers: 1,234.5 or 12 or -3 or 0.75 (not part of a word).
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])"
                    r"|(?<![\w.,])-?\d+(?:\.\d+)?(?![\w])")
# A list item, its body with the indented lines that continue it ("- Put the phone\n
#   away."): an item is never cut at its first line break.
LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[-*•]|\d+[.)])[ \t]+"
                       r"(?P<body>\S.*(?:\n(?![ \t]*(?:[-*•]|\d+[.)])[ \t])[ \t]+\S.*)*)$",
                       re.MULTILINE)
# A sentence ends at . ! or ? followed by a space or the end of the line (so "23.5" and
# "e.g." inside a word stay whole).
SENTENCE = re.compile(r"\S(?:[^\n]*?)(?:[.!?]+[\"')\]]*(?=\s|$)|$)", re.MULTILINE)
WORD = re.compile(r"[A-Za-z][a-z]+")

STOPWORDS = frozenset("""
a about above after again against all also although am an and any are as at be because
been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how i if
in into is it its itself just more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours
yourself yourselves
""".split())


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def numbers(text: str) -> list[Span]:
    return [Span(m.start(), m.end(), m.group(0)) for m in NUMBER.finditer(text)]


def parse_number(text: str) -> float:
    return float(text.replace(",", ""))


def format_like(value: float, original: str) -> str:
    """Write ``value`` the way ``original`` was written (decimals, thousands commas)."""
    decimals = len(original.split(".", 1)[1]) if "." in original else 0
    text = f"{value:,.{decimals}f}" if "," in original else f"{value:.{decimals}f}"
    return text


def is_list_numbering(text: str, span: Span) -> bool:
    """True for the "3." of a numbered list item, which is not a quantity."""
    line_start = text.rfind("\n", 0, span.start) + 1
    prefix = text[line_start:span.start]
    return not prefix.strip() and text[span.end:span.end + 1] in (".", ")")


def list_items(text: str) -> list[re.Match]:
    """List items of the longest run of consecutive items with the same marker style."""
    items = list(LIST_ITEM.finditer(text))
    runs: list[list[re.Match]] = []
    for item in items:
        if runs:
            previous = runs[-1][-1]
            between = text[previous.end():item.start()]
            same_style = _style(previous) == _style(item) and \
                previous.group("indent") == item.group("indent")
            if same_style and between.count("\n") <= 2 and not between.strip():
                runs[-1].append(item)
                continue
        runs.append([item])
    return max(runs, key=len) if runs else []


def _style(item: re.Match) -> str:
    marker = item.group("marker")
    return "number" if marker[0].isdigit() else marker


def sentences(text: str) -> list[Span]:
    """Sentences of prose (list items and lines count as their own sentences)."""
    found = []
    for match in SENTENCE.finditer(text):
        raw = match.group(0)
        stripped = raw.strip()
        if len(stripped) < 2 or not any(c.isalpha() for c in stripped):
            continue
        start = match.start() + raw.index(stripped)
        found.append(Span(start, start + len(stripped), stripped))
    return found


def content_words(text: str) -> list[Span]:
    """Lower-case words of five or more letters that are not stop words or names."""
    return [Span(m.start(), m.end(), m.group(0)) for m in WORD.finditer(text)
            if len(m.group(0)) >= 5 and m.group(0).islower()
            and m.group(0).lower() not in STOPWORDS]


def replace(text: str, span: Span, new: str) -> str:
    return text[:span.start] + new + text[span.end:]


# Letters next to each other on a QWERTY keyboard: typos a hand would make (used by the
# spelling rule and by the natural-noise question variants).
KEYBOARD_NEIGHBOURS = {
    "q": "wa", "w": "qes", "e": "wrd", "r": "etf", "t": "ryg", "y": "tuh", "u": "yij",
    "i": "uok", "o": "ipl", "p": "ol", "a": "qsz", "s": "adwx", "d": "sfec", "f": "dgrv",
    "g": "fhtb", "h": "gjyn", "j": "hkun", "k": "jlim", "l": "kop", "z": "asx", "x": "zcsd",
    "c": "xvdf", "v": "cbfg", "b": "vngh", "n": "bmhj", "m": "njk",
}
