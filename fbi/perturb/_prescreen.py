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
  answer", "(error introduced)");
* ``wrong-kind: …`` — the error is of another kind than its category (the paper's
  failure mode ii, "a grammar error filed under spelling"), for the categories whose
  kind a word diff shows: spelling (a word misspelt: the same letters, nearly), grammar
  (a function word or a word's inflection changed), number errors (a number changed)
  and entity errors (a name changed). The flag says what the change reads as, with the
  change itself.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter

from fbi.diffing import changed_regions, word_diff
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


#: Words whose change is a grammar error (agreement, tense, articles, pronouns, prepositions).
FUNCTION_WORDS = frozenset("""
a an the this that these those is are was were be been being am has have had do does did
he she it they we you i me him her them us his its their our your my who whom which
in on at by for from to of with into onto over under about as than then
can could will would shall should may might must not no
""".split())
#: Contractions and possessives of function words (it's, you're, their, here's): a change
#: among these is a grammar error (its/it's, your/you're), never a misspelling or a name.
_CONTRACTED = frozenset({"here", "there", "that", "what", "who", "let", "where", "how"})


def _function_word(word: str) -> bool:
    word = word.lower().replace("’", "'").strip(".,;:!?()*\"")
    if word in FUNCTION_WORDS or word in {"its", "your", "their", "whose", "theirs"}:
        return True
    head = word.split("'")[0]
    return "'" in word and (head in FUNCTION_WORDS or head in _CONTRACTED)


# What inflecting a word adds after the part it shares with its other form.
_INFLECTION_TAIL = re.compile(r"(?:s|es|ed|d|ing|er|est|ly|ies|ied|ier|iest)")
#: Numbers written as words, and the prefixes of sizes (gigabytes → petabytes).
_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|billion|trillion|dozen|"
    r"(?:kilo|mega|giga|tera|peta|milli|micro|nano)(?:bytes?|meters?|metres?|grams?|"
    r"seconds?|watts?|hertz|liters?|litres?))s?\b", re.IGNORECASE)
#: The kind of error each category plants, as a word diff can see it, and the kinds that,
#: seen without it, mean the error is of another kind. (A swapped entity often looks
#: like a respelling — solar → lunar, Marie → Maria — so it is never held against one.)
EXPECTED_KIND = {"spelling": "spelling", "grammar": "grammar", "number-errors": "number",
                 "entity": "entity"}
WRONG_KINDS = {"spelling": {"grammar", "number", "entity"},
               "grammar": {"spelling", "number", "entity"},
               "number-errors": {"spelling", "grammar", "entity"},
               "entity": {"grammar", "number"}}


def _inflections(a: str, b: str) -> bool:
    """Two forms of one word (receive/receives, happy/happier, run/running)."""
    short, long = sorted((a, b), key=len)
    common = next((i for i, (x, y) in enumerate(zip(short, long, strict=False)) if x != y),
                  len(short))
    tail = long[common:]
    if common >= 2 and tail[:1] == long[common - 1:common] and len(tail) > 2:
        tail = tail[1:]  # a doubled consonant: run → running
    if short.endswith("s") and long.endswith("s"):
        return False  # access → acces, heroes → heros: misspellings, not plurals
    rest = short[common:]  # what the short form has of its own: go → goes, happy → happier
    if rest not in ("", "e", "y") or (rest == "y" and not tail.startswith("i")):
        return False
    return a != b and common >= 2 and _INFLECTION_TAIL.fullmatch(tail) is not None


def change_kinds(gold: str, perturbed: str) -> list[tuple[str, str, str]]:
    """What each change of the word diff reads as — (kind, removed, inserted), kind one of
    number, entity, spelling, grammar or other."""
    segments = word_diff(gold, perturbed)
    changes, index = [], 0
    while index < len(segments):
        op, text = segments[index]
        if op == "equal":
            index += 1
            continue
        removed = text if op == "delete" else ""
        inserted = text if op == "insert" else ""
        if op == "delete" and index + 1 < len(segments) and segments[index + 1][0] == "insert":
            inserted = segments[index + 1][1]
            index += 1
        index += 1
        changes.append((removed.strip(), inserted.strip()))
    kinds = []
    for removed, inserted in changes:
        # words without the quote marks around them ("To" → 'To' changes no word)
        words_a = [w.strip("'") for w in re.findall(r"[\w'’-]+", removed.lower().replace(
            "’", "'")) if w.strip("'")]
        words_b = [w.strip("'") for w in re.findall(r"[\w'’-]+", inserted.lower().replace(
            "’", "'")) if w.strip("'")]
        names_a = {w for w in re.findall(r"[\w'’-]+", removed) if w[:1].isupper()
                   and not _function_word(w)}
        names_b = {w for w in re.findall(r"[\w'’-]+", inserted) if w[:1].isupper()
                   and not _function_word(w)}
        bare_a = [w.replace("'", "") for w in words_a]
        bare_b = [w.replace("'", "") for w in words_b]
        one_word = len(words_a) == len(words_b) == 1
        if words_a == words_b:
            kind = "other"  # only punctuation, quote marks or case changed
        elif any(re.search(r"\d", t) or _NUMBER_WORD.search(t) for t in (
                unicodedata.normalize("NFKC", removed), unicodedata.normalize("NFKC", inserted))):
            kind = "number"  # (NFKC: CaCl₂ → CaCl2; 18th → 19th)
        elif (words_a + words_b and all(_function_word(w) for w in words_a + words_b)) or (
                one_word and (bare_a == bare_b or _inflections(bare_a[0], bare_b[0]))):
            kind = "grammar"
        elif one_word and difflib.SequenceMatcher(None, words_a[0], words_b[0]).ratio() >= 0.6:
            kind = "spelling"  # a name misspelt is still a misspelling
        elif names_a != names_b and (names_a or names_b):
            kind = "entity"
        else:
            kind = "other"
        kinds.append((kind, removed, inserted))
    return kinds


def _wrong_kind(category: str, gold: str, perturbed: str) -> str | None:
    """The ``wrong-kind`` flag of a candidate whose changes show none of its category's
    kind but another checkable one; None when the kind fits or cannot be told."""
    expected = EXPECTED_KIND.get(category)
    if expected is None:
        return None
    kinds = change_kinds(gold, perturbed)
    if not kinds or any(kind == expected for kind, _, _ in kinds):
        return None
    seen = [(kind, a, b) for kind, a, b in kinds if kind in WRONG_KINDS[category]]
    if not seen:
        return None  # rewritten phrases: nothing here tells the kind
    kind, removed, inserted = seen[0]
    article = "an" if kind == "entity" else "a"
    return (f"wrong-kind: reads as {article} {kind} change ('{removed[:30]}' → "
            f"'{inserted[:30]}'), not {expected}")


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
    wrong_kind = _wrong_kind(category, gold, perturbed)
    if wrong_kind:
        flags.append(wrong_kind)
    return sorted(set(flags))
