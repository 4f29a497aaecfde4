"""What a hunt can say about an edit: predicates, each a yes/no question about one probe
(issue 49).

A probe is an edit of a gold answer judged once; a predicate reads it through an
[`EditView`][fbi.hunt.EditView] — the question, the gold answer, the edited answer, the
changed stretch, the operator that made it and how it was judged — and says yes or no. A
*description* of a blind spot is a conjunction of at most three predicates ("edits
inside parentheses", "number-errors edits in the last tenth of the answer").

The built-in predicates, by group:

* ``where`` — the change starts inside a place of the gold answer
  ([`PLACES`][fbi.hunt.PLACES]: parentheses, quotes, code, a list item, a heading, the
  last sentence, a tenth of the answer, ...);
* ``what`` — what the change touches: digits, dates, units, negation, comparatives, modal
  verbs, quantifiers, adverbs (in the words changed and in any text a manipulation added:
  the judge reads both), named entities, pronouns and function words (in the words
  changed: every added sentence has some); punctuation or letter case only; inserted,
  deleted or replaced; how many characters and words; one stretch or several (of the
  error edit);
* ``answer`` — the gold answer's length, its Markdown structure and language, the
  question's ability and what it asks for;
* ``how`` and ``judged`` — made per hunt from its operators and strategies: the operator,
  its rule family, a manipulation added, two errors composed; the strategy, and for a
  pairwise call which answer was shown first.

A user adds a predicate in Python with [`predicate`][fbi.hunt.predicate] (or a place with
[`place`][fbi.hunt.place]) before running a hunt; it is then searched like the rest.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from fbi.hunt._structure import PLACES, Place, inside, places_of
from fbi.registry import Registry
from fbi.text import STOPWORDS
from fbi.trajectories import RenderedStep, changed_step, rendered_steps

#: Predicates per description, at most.
MAX_TERMS = 3


@dataclass(frozen=True)
class Change:
    """The changed stretch of an edit, in the gold answer's characters: from the first
    character that differs to the last (one stretch for most rules; two swapped sentences
    or several typos make a longer window with ``stretches`` > 1)."""

    start: int
    """Where the change starts in the gold answer."""
    end: int
    """Where it ends in the gold answer (``start`` for a pure insertion)."""
    before: str
    """The gold answer's words the change touches."""
    after: str
    """The edited answer's words in their place."""
    stretches: int
    """Separate changed stretches (word-level)."""

    @classmethod
    def between(cls, gold: str, edited: str) -> Change:
        """The change from ``gold`` to ``edited``: the common start and end cut off (linear
        in the answers' length), then widened to whole words."""
        prefix = common_prefix(gold, edited)
        suffix = common_prefix(gold[prefix:][::-1], edited[prefix:][::-1])
        start, end = prefix, len(gold) - suffix
        before = gold[_word_start(gold, start):_word_end(gold, end)]
        after = edited[_word_start(edited, prefix):_word_end(edited, len(edited) - suffix)]
        return cls(start, end, before, after, _stretches(before, after))


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix: blocks compared as slices, then the last
    block character by character (C-speed for the long equal stretch answers share)."""
    limit, done, block = min(len(a), len(b)), 0, 256
    while done + block <= limit and a[done:done + block] == b[done:done + block]:
        done += block
    while done < limit and a[done] == b[done]:
        done += 1
    return done


def _word_start(text: str, position: int) -> int:
    while position > 0 and not text[position - 1].isspace():
        position -= 1
    return position


def _word_end(text: str, position: int) -> int:
    while position < len(text) and not text[position].isspace():
        position += 1
    return position


def _stretches(before: str, after: str) -> int:
    if not before or not after:
        return 1
    if len(before) + len(after) > 4000:  # (a long window: many stretches, not counted)
        return 2
    opcodes = difflib.SequenceMatcher(None, before.split(), after.split(),
                                      autojunk=False).get_opcodes()
    return max(1, sum(op != "equal" for op, *_ in opcodes))


@dataclass(frozen=True)
class EditView:
    """One probe as predicates see it."""

    question: str
    """The instruction."""
    gold: str
    """The gold answer."""
    edited: str
    """The gold answer with the error edit (before any manipulation was added)."""
    shown: str
    """The answer the judge sees: ``edited`` with any manipulation added."""
    ability: str
    """The question's ability."""
    operator: str
    """The operator's name (``number-errors``, ``grammar+spelling``,
    ``negation+manipulation/padding``)."""
    rules: tuple[str, ...]
    """The error operators applied (one, or two composed)."""
    manipulation: str | None = None
    """The manipulation added after the error, if any."""
    strategy: str | None = None
    """The strategy it was judged by (None before judging)."""
    order: str | None = None
    """Pairwise: ``edit-first`` or ``edit-second``; None otherwise."""

    @cached_property
    def change(self) -> Change:
        """The error edit's changed stretch."""
        return Change.between(self.gold, self.edited)

    @cached_property
    def trajectory_step(self) -> tuple[int, list[RenderedStep]] | None:
        """For an edit of an agent's trajectory: the changed step's number and the edited
        trajectory's steps (`fbi.trajectories.changed_step`); None for an answer."""
        number = changed_step(self.gold, self.edited)
        return None if number is None else (number, rendered_steps(self.edited))

    @property
    def places(self) -> dict[str, tuple[tuple[int, int], ...]]:
        """Every place's spans in the gold answer."""
        return places_of(self.gold)

    def starts_in(self, place: str) -> bool:
        """Whether the change starts inside ``place``."""
        return inside(self.places[place], self.change.start)

    @cached_property
    def removed_words(self) -> list[str]:
        """The gold answer's words the change touches (split at white space, the
        punctuation around each stripped)."""
        return _words(self.change.before)

    @cached_property
    def added_words(self) -> list[str]:
        """The words the change puts in."""
        return _words(self.change.after)

    @cached_property
    def manipulation_words(self) -> list[str]:
        """The words a manipulation added (none without one)."""
        if self.shown == self.edited:
            return []
        return _words(Change.between(self.edited, self.shown).after)

    def touches(self, test: Callable[[str], bool], added_text: bool = False) -> bool:
        """Whether the words ``test`` picks differ before and after the change: added,
        removed, replaced or reordered. ``added_text``: a manipulation's words count as
        added too (for what the judge reads there as well — numbers, negation, modal
        verbs — not for the function words and pronouns any sentence has)."""
        added = self.added_words + self.manipulation_words if added_text \
            else self.added_words
        return [w for w in self.removed_words if test(w)] != [w for w in added if test(w)]


def _words(text: str) -> list[str]:
    return [w.strip(_EDGE_PUNCTUATION) or w for w in text.split()]


_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}«»“”‘’*_`"


@dataclass(frozen=True)
class Predicate:
    """A yes/no question about a probe."""

    name: str
    """Its name (``in_parentheses``, ``changes_digits``, ``op:number-errors``)."""
    phrase: str
    """How a description says it."""
    group: str
    """``where``, ``what``, ``answer``, ``how`` or ``judged``."""
    test: Callable[[EditView], bool]
    """The question."""
    doc: str = ""
    """What it means, with an example."""
    place: Place | None = None
    """For a ``where`` predicate, its place: an operator can be asked to edit there."""

    @property
    def judged(self) -> bool:
        """Answerable only once the probe is judged (its strategy or order)."""
        return self.group == "judged"


PREDICATES: Registry[Predicate] = Registry("predicate", "fbi.predicates")
"""The predicates every hunt uses, by name (those made per hunt from its operators and
strategies come on top, `fbi.hunt.predicates_for`): a
[`Registry`][fbi.registry.Registry] whose ``fbi.predicates`` entry points are the modules
defining them (fbi's own: pyproject.toml), a plug-in package's the same."""


def predicate(name: str, phrase: str, group: str = "what"
              ) -> Callable[[Callable[[EditView], bool]], Callable[[EditView], bool]]:
    """Register a predicate: a function of an [`EditView`][fbi.hunt.EditView] that says
    yes or no. Its docstring says what it means. Group ``step`` makes it a predicate of
    hunts over agents' trajectories (`EditView.trajectory_step`), any other group one of
    hunts over answers. Example::

        from fbi.hunt import predicate

        @predicate("changes_currency", "changing an amount of money")
        def changes_currency(edit):
            \"\"\"A currency sign or code is among the changed words: «$5» → «$6».\"\"\"
            return edit.touches(lambda w: w in {"$", "€", "£", "USD", "EUR"})
    """
    def register(test: Callable[[EditView], bool]) -> Callable[[EditView], bool]:
        PREDICATES[name] = Predicate(name, phrase, group, test,
                                     " ".join((test.__doc__ or "").split()))
        return test
    return register


# ------------------------------------------------------------------ what changed

_MONTHS = frozenset("january february march april may june july august september october "
                    "november december jan feb mar apr jun jul aug sep sept oct nov dec"
                    .split())
UNITS = frozenset(
    "km m cm mm nm mi miles mile kilometres kilometers kilometre kilometer metres meters "
    "metre meter ft feet foot inches inch yards yard kg g mg lb lbs pounds pound grams gram "
    "kilograms kilogram ounces ounce oz tonnes tons l ml litres liters litre liter gallons "
    "gallon hours hour h hr minutes minute min seconds second s sec days day weeks week "
    "months years year celsius fahrenheit kelvin c f k mph kph w kw kwh watts volts v hz "
    "mhz ghz kb mb gb tb bytes percent".split())
NEGATIONS = frozenset("not no never none nobody nothing neither nor without cannot can't "
                      "won't don't doesn't didn't isn't aren't wasn't weren't shouldn't "
                      "couldn't wouldn't hasn't haven't hadn't mustn't n't".split())
COMPARATIVES = frozenset("more less fewer greater larger smaller higher lower better worse "
                         "bigger faster slower longer shorter older younger most least "
                         "best worst than".split())
MODALS = frozenset("can could may might must shall should will would cannot".split())
QUANTIFIERS = frozenset("all some none every each most many few several any both always "
                        "never often sometimes rarely usually seldom majority minority half "
                        "entire whole".split())


def _is_unit(word: str) -> bool:
    unit = re.sub(r"^[-+]?[\d.,]+", "", word).lower()
    return unit in UNITS or unit in ("%", "‰", "°c", "°f", "°", "$", "€", "£", "m²",
                                     "km²", "m³", "cm³", "km/h", "m/s")


def _in(words: frozenset[str]) -> Callable[[str], bool]:
    return lambda word: word.lower() in words


def _what(name: str, phrase: str, doc: str, test: Callable[[EditView], bool]) -> None:
    PREDICATES[name] = Predicate(name, phrase, "what", test, doc)


_what("changes_digits", "changing digits",
      "A number is among the changed words: «25 minutes» → «28 minutes».",
      lambda e: e.touches(lambda w: any(c.isdigit() for c in w), added_text=True))
_what("changes_date", "changing a date",
      "A year (1000–2099), a date or a month is among the changed words: «in 1887» → "
      "«in 1878».",
      lambda e: e.touches(lambda w: bool(re.fullmatch(
          r"(1\d{3}|20\d{2})(s|'s)?|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}", w))
          or w.lower() in _MONTHS, added_text=True))
_what("changes_unit", "changing a unit",
      "A unit of measure (alone or after its number) is among the changed words: «5 km» "
      "→ «5 miles», «96°C» → «96°F».",
      lambda e: e.touches(_is_unit, added_text=True))
_what("changes_entity", "changing a named entity",
      "A short replacement (up to eight words each way) whose capitalised words that do "
      "not open a sentence differ: «by Newton» → «by Leibniz», «Paris» → «Pairs».",
      lambda e: _entity_changed(e))
_what("changes_negation", "adding or removing a negation",
      "A negation is among the changed words: «is stable» → «is not stable».",
      lambda e: e.touches(lambda w: w.lower() in NEGATIONS or w.lower().endswith("n't"),
                          added_text=True))
_what("changes_comparative", "changing a comparison",
      "A comparative or superlative is among the changed words: «more» → «less».",
      lambda e: e.touches(_in(COMPARATIVES), added_text=True))
_what("changes_modal", "changing a modal verb",
      "A modal verb is among the changed words: «should» → «must».",
      lambda e: e.touches(_in(MODALS), added_text=True))
_what("changes_quantifier", "changing a quantifier",
      "A quantifier is among the changed words: «some» → «all».",
      lambda e: e.touches(_in(QUANTIFIERS), added_text=True))
_PRONOUNS = frozenset("i me my mine we us our ours you your yours he him his she her hers "
                      "it its they them their theirs this that these those who whom whose "
                      "which".split())
_what("changes_pronoun", "changing a pronoun",
      "A pronoun is among the changed words: «its» → «their».",
      lambda e: e.touches(_in(_PRONOUNS)))
_what("changes_function_word", "changing a function word",
      "A function word (article, preposition, auxiliary, conjunction) is among the "
      "changed words: «an» → «a», «is» → «are».",
      lambda e: e.touches(_in(STOPWORDS - NEGATIONS)))
_what("changes_adverb", "changing an adverb",
      "A word ending in -ly is among the changed words: «slowly» → «quickly».",
      lambda e: e.touches(lambda w: len(w) > 4 and w.lower().endswith("ly"),
                          added_text=True))
_what("punctuation_only", "changing punctuation only",
      "Only punctuation differs: «, however» → «; however».",
      lambda e: _letters(e.change.before) == _letters(e.change.after))
_what("case_only", "changing letter case only",
      "Only letter case differs: «Paris» → «paris».",
      lambda e: e.change.before != e.change.after
      and e.change.before.lower() == e.change.after.lower())
_what("inserted", "adding text",
      "Text was added and nothing removed.",
      lambda e: e.change.start == e.change.end and e.edited != e.gold)
_what("deleted", "removing text",
      "Text was removed and nothing added.",
      lambda e: len(e.edited) < len(e.gold) and
      e.edited == e.gold[:e.change.start] + e.gold[e.change.end:])
_what("replaced", "replacing text",
      "Text was replaced by other text (neither a pure addition nor a pure removal).",
      lambda e: e.change.start < e.change.end and
      e.edited != e.gold[:e.change.start] + e.gold[e.change.end:])
_what("small_change", "changing 1–5 characters",
      "At most five characters differ: «220» → «219».",
      lambda e: _size(e) <= 5)
_what("medium_change", "changing 6–40 characters",
      "Six to forty characters differ.",
      lambda e: 5 < _size(e) <= 40)
_what("large_change", "changing over 40 characters",
      "More than forty characters differ (a removed sentence, two swapped items).",
      lambda e: _size(e) > 40)
_what("one_word", "changing one word",
      "One word before and at most one after: «cooler» → «warmer».",
      lambda e: len(e.change.before.split()) <= 1 and len(e.change.after.split()) <= 1)
_what("several_changes", "in several places",
      "The edit changes two or more separate stretches (swapped items, several typos).",
      lambda e: e.change.stretches > 1)


def _letters(text: str) -> str:
    return re.sub(r"[^\w]", "", text)


def _size(edit: EditView) -> int:
    """Characters that differ: the longer of the removed and the inserted stretch."""
    change = edit.change
    return max(change.end - change.start,
               len(edit.edited) - len(edit.gold) + change.end - change.start)


def _entity_changed(edit: EditView) -> bool:
    change = edit.change
    before, after = change.before.split(), change.after.split()
    if not before or not after or len(before) > 8 or len(after) > 8:
        return False

    def names(words: list[str], text: str, start: int) -> list[str]:
        opening = not text[:start].rstrip() or text[:start].rstrip()[-1] in ".!?:\n#*-|"
        found = []
        for word in words:
            bare = word.strip(_EDGE_PUNCTUATION)
            if bare[:1].isupper() and not opening:
                found.append(bare)
            opening = word.endswith((".", "!", "?", ":"))
        return found

    return names(before, edit.gold, _word_start(edit.gold, change.start)) != \
        names(after, edit.edited, _word_start(edit.edited, change.start))


# ------------------------------------------------------------------ where

def _where(place: Place) -> Predicate:
    return Predicate(place.name, place.phrase, "where",
                     lambda e, name=place.name: e.starts_in(name), place.doc, place)


def where_predicates() -> list[Predicate]:
    """A predicate for every place (the user's included)."""
    return [_where(p) for p in PLACES.values()]


# ------------------------------------------------------------------ the answer

SHORT, LONG = 400, 1200  # answer length bands, characters


def _answer(name: str, phrase: str, doc: str, test: Callable[[EditView], bool]) -> None:
    PREDICATES[name] = Predicate(name, phrase, "answer", test, doc)


_answer("short_answer", f"in short answers (under {SHORT} characters)",
        f"The gold answer has fewer than {SHORT} characters.",
        lambda e: len(e.gold) < SHORT)
_answer("medium_answer", f"in medium answers ({SHORT}–{LONG - 1} characters)",
        f"The gold answer has {SHORT} to {LONG - 1} characters.",
        lambda e: SHORT <= len(e.gold) < LONG)
_answer("long_answer", f"in long answers ({LONG}+ characters)",
        f"The gold answer has {LONG} characters or more.", lambda e: len(e.gold) >= LONG)
_answer("answer_has_list", "in answers with a list", "The gold answer holds a list.",
        lambda e: bool(e.places["in_list_item"]))
_answer("answer_has_table", "in answers with a table", "The gold answer holds a table.",
        lambda e: bool(e.places["in_table_row"]))
_answer("answer_has_headings", "in answers with headings",
        "The gold answer holds a Markdown heading.", lambda e: bool(e.places["in_heading"]))
_answer("answer_has_code", "in answers with code",
        "The gold answer holds a code block or inline code.",
        lambda e: bool(e.places["in_code_block"] or e.places["in_inline_code"]))
_answer("plain_prose", "in plain-prose answers",
        "The gold answer has no list, table, heading, code or bold text.",
        lambda e: not any(e.places[p] for p in ("in_list_item", "in_table_row",
                                                 "in_heading", "in_code_block",
                                                 "in_inline_code", "in_bold")))
_ENGLISH = frozenset("the and of to is in that it for on with as are be this by".split())


def _not_english(edit: EditView) -> bool:
    words = re.findall(r"[^\W\d_]+", edit.gold.lower())
    if len(words) < 8:
        return False
    return sum(w in _ENGLISH for w in words) / len(words) < 0.04


_answer("not_english", "in answers not in English",
        "Fewer than 4% of the gold answer's words are common English words.", _not_english)
for _ability in ("factual", "instruction-following", "long-form", "reasoning"):
    _answer(f"ability:{_ability}", f"on {_ability} questions",
            f"The question tests {_ability}.", lambda e, a=_ability: e.ability == a)
_answer("asks_for_steps", "when the question asks for steps or a list",
        "The question asks for steps, a list, tips or ways.",
        lambda e: bool(re.search(r"\b(steps?|list|tips|ways|examples|outline|ideas)\b",
                                 e.question, re.IGNORECASE)))
_answer("asks_to_calculate", "when the question asks for a calculation",
        "The question holds a number and asks to compute something.",
        lambda e: bool(re.search(r"\d", e.question)) and bool(re.search(
            r"\b(calculate|compute|how (many|much|long|far)|what is|total|average|solve|"
            r"find)\b", e.question, re.IGNORECASE)))
_answer("asks_for_code", "when the question asks for code",
        "The question asks for code (a function, script, query or program).",
        lambda e: bool(re.search(r"\b(code|function|script|program|python|sql|query|"
                                 r"javascript|regex|class)\b", e.question, re.IGNORECASE)))


# ------------------------------------------------------------------ descriptions

def describe(predicates: list[Predicate]) -> str:
    """A description in words: "number-errors edits with padding added inside
    parentheses"; "edits changing digits, in the last tenth of the answer"."""
    how = [p for p in predicates if p.group == "how"]
    head = next((p for p in how if p.name.startswith(("sway:", "op:", "family:"))), None)
    words = [head.phrase if head else "edits"]
    words += [p.phrase for p in how if p is not head]
    rest = [p.phrase for p in predicates if p.group != "how"]
    return " ".join(words + rest[:1]) + "".join(f", {phrase}" for phrase in rest[1:])


def slug(description: str) -> str:
    """A short name for files and the ``hunt/NAME`` category."""
    name = re.sub(r"[^a-z0-9+]+", "-", description.lower()).strip("-")
    return name[:80].rstrip("-") or "edits"
