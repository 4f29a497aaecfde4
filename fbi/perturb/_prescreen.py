"""Automatic pre-screening of perturbation candidates.

Each check attaches a flag; flagged candidates stay in the vetting queue for a person to
judge (validity is decided by people, not here). The checks target the failure modes of
LLM-made perturbations the FBI paper reports (§3.4) and the slips of rules:

* ``identical-to-gold`` — nothing was changed;
* ``rationale-not-in-answer`` — the rationale quotes text that is in neither answer: it
  describes an error the answer does not contain (the paper's failure mode iii);
* ``change-not-where-rationale-says`` — the quoted text exists but lies outside every
  changed region of the diff;
* ``numbers-changed`` / ``entities-changed`` — numbers or names changed in a category
  that must leave them alone (spelling, grammar, ordering, score-invariant, ...);
* ``formatting-lost`` — lists, headings or line breaks of the gold answer disappeared in
  a category that is not about format;
* ``length-drift`` — the length changed by more than the threshold;
* ``leaked-meta-text`` — the answer talks about the perturbation ("Here is the perturbed
  answer", "(error introduced)").
"""

from __future__ import annotations

import re
from collections import Counter

from fbi.diffing import changed_regions
from fbi.text import LIST_ITEM, NUMBER

IDENTICAL = "identical-to-gold"
RATIONALE_NOT_IN_ANSWER = "rationale-not-in-answer"
CHANGE_ELSEWHERE = "change-not-where-rationale-says"
NUMBERS_CHANGED = "numbers-changed"
ENTITIES_CHANGED = "entities-changed"
FORMATTING_LOST = "formatting-lost"
LENGTH_DRIFT = "length-drift"
META_TEXT = "leaked-meta-text"

KEEP_NUMBERS = frozenset({"grammar", "spelling", "chronology", "coherence", "sequence-errors",
                          "ignore-format", "entity", "score-invariant"})
KEEP_ENTITIES = frozenset({"grammar", "spelling", "chronology", "coherence", "sequence-errors",
                           "number-errors", "calculations", "copying-numbers", "final-errors",
                           "incorrect-units", "score-invariant"})
ABOUT_FORMAT = frozenset({"ignore-format", "score-invariant", "do-less"})
CHANGES_LENGTH = frozenset({"do-less", "do-more", "remove-fact", "comprehensiveness",
                            "ignore-format", "assumptions"})
DEFAULT_LENGTH_THRESHOLD = 0.3  # relative change in characters
LENGTH_CHANGING_THRESHOLD = 0.75  # for categories whose point is to add or remove text

# A quotation: no line break inside, and no space just inside the quote marks (so the
# text between two quotations, as in '"a" → "b"', is never read as one).
_QUOTED = re.compile(r'"([^"\s](?:[^"\n]{0,398}[^"\s])?)"'
                     r"|“([^”\n]{1,400})”|«([^»\n]{1,400})»")
_ENTITY = re.compile(r"(?<![.!?:]\s)(?<!^)(?<!\n)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*")
_META = re.compile(
    r"here is (?:the|a|your) (?:perturbed|modified|rewritten|altered|new)|perturbed answer"
    r"|\((?:error|mistake)[^)]{0,30}\)|\[(?:error|mistake)[^\]]{0,30}\]|error introduced"
    r"|I (?:have|'ve) (?:introduced|inserted|added|changed|modified)|as an AI\b"
    r"|^(?:note|explanation|rationale)\s*:", re.IGNORECASE | re.MULTILINE)


_CONTEXT = 15  # characters either side that place a quotation


def _at_a_change(text: str, other: str, quote: str, regions: list[tuple[int, int]]) -> bool:
    """True if an occurrence of ``quote`` in ``text`` lies in a changed region, or sits in
    a context the other answer lacks (it moved, or something changed right beside it)."""
    for match in re.finditer(re.escape(quote), text):
        if any(match.start() <= end and start <= match.end() for start, end in regions):
            return True
        before = text[max(0, match.start() - _CONTEXT):match.start()]
        after = text[match.end():match.end() + _CONTEXT]
        if before + quote not in other or quote + after not in other:
            return True
    return False


_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+", re.MULTILINE)


def _without_list_markers(text: str) -> str:
    """List numbering is structure, not a quantity; item text starts like a sentence."""
    return _LIST_MARKER.sub("", text)


def _entities_changed(gold: str, perturbed: str) -> bool:
    """Names are capitalised words seen away from a sentence start in either answer; their
    counts anywhere in each answer must match (moving a sentence moves no name)."""
    names = {m.group(0) for text in (gold, perturbed) for m in _ENTITY.finditer(text)}
    return any(len(re.findall(rf"\b{re.escape(n)}\b", gold)) !=
               len(re.findall(rf"\b{re.escape(n)}\b", perturbed)) for n in names)


def _format_signature(text: str) -> dict[str, int]:
    return {"list items": len(LIST_ITEM.findall(text)),
            "headings": len(re.findall(r"^#{1,6} ", text, re.MULTILINE)),
            "bold": text.count("**") // 2,
            "line breaks": text.count("\n")}


def prescreen(category: str, gold: str, perturbed: str, rationale: str | None,
              length_threshold: float = DEFAULT_LENGTH_THRESHOLD) -> list[str]:
    """The flags of one candidate; an empty list means nothing looked wrong."""
    if perturbed.strip() == gold.strip():
        return [IDENTICAL]
    flags = []
    removed, inserted = changed_regions(gold, perturbed)
    quotes = [q for pair in _QUOTED.findall(rationale or "") for q in pair if q.strip()]
    if not removed and not inserted:
        quotes = []  # only whitespace changed: there is no word to locate a quotation by
    for quote in quotes:
        in_gold, in_perturbed = quote in gold, quote in perturbed
        if not in_gold and not in_perturbed:
            flags.append(RATIONALE_NOT_IN_ANSWER)
        elif not (_at_a_change(gold, perturbed, quote, removed)
                  or _at_a_change(perturbed, gold, quote, inserted)):
            flags.append(CHANGE_ELSEWHERE)
    plain_gold, plain_perturbed = _without_list_markers(gold), _without_list_markers(perturbed)
    if category in KEEP_NUMBERS and Counter(NUMBER.findall(plain_gold)) != Counter(
            NUMBER.findall(plain_perturbed)):
        flags.append(NUMBERS_CHANGED)
    if category in KEEP_ENTITIES and _entities_changed(plain_gold, plain_perturbed):
        flags.append(ENTITIES_CHANGED)
    if category not in ABOUT_FORMAT:
        before, after = _format_signature(gold), _format_signature(perturbed)
        if any(before[k] >= 1 and after[k] == 0 for k in before if k != "line breaks") or \
                (before["line breaks"] >= 2 and after["line breaks"] == 0):
            flags.append(FORMATTING_LOST)
    threshold = max(length_threshold, LENGTH_CHANGING_THRESHOLD) \
        if category in CHANGES_LENGTH else length_threshold
    if abs(len(perturbed) - len(gold)) / max(1, len(gold)) > threshold:
        flags.append(LENGTH_DRIFT)
    if _META.search(perturbed) and not _META.search(gold):
        flags.append(META_TEXT)
    return sorted(set(flags))
