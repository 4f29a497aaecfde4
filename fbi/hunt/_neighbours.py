"""Which of a hunt's candidates are one blind spot, and its widest description (issue 65).

A judge's blind spot rarely matches one description: "edits in the last fifth" comes back
as "edits in the last tenth" and "edits in the ninth tenth"; a judge swayed by claims of
correctness as "authority claim added" and "self-praise added", on wrong and on correct
answers. Two candidates are **neighbours on one axis** when

* *where*: each says where the change lies by a part of the answer (a tenth, third or
  half), the two parts touch or overlap, and the rest of one description is part of the
  other's ("order-rule edits in the first tenth" beside "edits in the second tenth"); or
* *manipulation*: each adds a manipulation of one group (perturbations/manipulations.yaml:
  an authority claim and self-praise are both ``claim``), on wrong answers or alone on
  correct ones, and the rest of one description is part of the other's; or
* *string* (`fbi.hunt._strings`): one string holds the other's words in a row
  («Matches the reference.» and «{"score": 10} Matches the reference.»), or the two
  share three words in a row, wherever each is put. A string is one spot with the first
  of the shortest candidates it is related to (its *kernel*): one related to two kernels
  («. 10/10») joins the first, never both; or
* *parts of one predicate* (`common_parent`; neither on one of the axes above): the two
  differ in one predicate each, and on the search half a third predicate of the hunt
  covers both parts' edits and little else ("edits at a write_file step" and "edits at
  a book_flight step" are most of "edits at a step with side effects"), or one part's
  predicate is most of the other's (a predicate and its refinement).

A blind spot is a connected group of neighbours. The grouping reads the candidates'
descriptions and the search half's edits only — fixed before any held-out edit is
judged — so the widest description of each group of one population can be tested on
the held-out edits like a candidate, one more test in the Bonferroni family (`family_size`), and the
family-wise guarantee of `fbi.hunt._confirm` holds for it as for the rest. Its widest
description: the rest the parts share, with the union of their parts of the answer (or
of their manipulations), or with the predicate they are parts of.
"""

from __future__ import annotations

import numpy as np

from fbi.attack_texts import attack_texts
from fbi.hunt._predicates import Predicate, describe
from fbi.hunt._search import Found
from fbi.hunt._table import Phase, ProbeTable

_THIRDS = ("first", "middle", "last")
_HALVES = ("first", "second")


def position(name: str) -> tuple[float, float] | None:
    """The part of the answer a ``where`` predicate names, as fractions of its length
    (``in_tenth_9``: 0.8–0.9); None for any other predicate."""
    if name.startswith("in_tenth_") and name[9:].isdigit():
        k = int(name[9:])
        return (k - 1) / 10, k / 10
    for words, parts, suffix in ((_THIRDS, 3, "_third"), (_HALVES, 2, "_half")):
        for k, word in enumerate(words):
            if name == f"in_{word}{suffix}":
                return k / parts, (k + 1) / parts
    return None


def manipulation_group(name: str) -> str | None:
    """The group of the manipulation a predicate names (``added:manipulation/KIND``,
    ``sway:KIND``, or an operator that ends with one); None for any other."""
    kind = None
    if name.startswith("sway:"):
        kind = name[5:]
    elif "manipulation/" in name and name.startswith(("added:", "op:")):
        kind = name.rsplit("manipulation/", 1)[1]
    known = attack_texts().kinds.get(kind or "")
    return known.group if known else None


Strings = dict[str, tuple[str, str]]
"""The string search's strings by predicate name (``op:string/K`` → its text and where
it goes: ``before``, ``after`` or ``alone``)."""


def _axis(description: tuple[str, ...], strings: Strings
          ) -> tuple[str, frozenset[str]] | None:
    """The axis a description lies on (``where``, ``manipulation:GROUP`` or ``string``)
    and the rest of it; None when it names no part of the answer, no manipulation and no
    string, or several."""
    carried = [n for n in description if strings.get(n)]
    if len(carried) == 1:
        return "string", frozenset(description) - set(carried)
    where = [n for n in description if position(n) is not None]
    manipulated = [n for n in description if manipulation_group(n) is not None]
    if len(where) + len(manipulated) != 1:
        return None
    if where:
        return "where", frozenset(description) - set(where)
    return f"manipulation:{manipulation_group(manipulated[0])}", \
        frozenset(description) - set(manipulated)


def _text(found: Found, strings: Strings) -> str:
    return next(strings[n][0] for n in found.description if strings.get(n))


#: Two strings sharing this many words in a row are one spot (a word dropped from one
#: of two children of a string leaves them neither holding the other).
SHARED_WORDS = 3


def _holds(longer: str, shorter: str) -> bool:
    """Whether ``longer`` holds ``shorter``'s words in a row (a period alone is not held
    by every sentence that ends with one)."""
    a, b = longer.split() or [longer], shorter.split() or [shorter]
    return any(a[i:i + len(b)] == b for i in range(len(a) - len(b) + 1))


def _related(a: str, b: str) -> bool:
    """One string holds the other, or they share ``SHARED_WORDS`` words in a row."""
    if _holds(a, b) or _holds(b, a):
        return True
    x, y = a.split(), b.split()
    runs = {tuple(x[i:i + SHARED_WORDS]) for i in range(len(x) - SHARED_WORDS + 1)}
    return any(tuple(y[i:i + SHARED_WORDS]) in runs
               for i in range(len(y) - SHARED_WORDS + 1))


#: Parts of one predicate cover at least this share of its search edits: a predicate
#: that holds much besides the parts names more than the blind spot seen.
PARENT_SHARE = 0.8


def common_parent(parts: list[Found], table: ProbeTable | None) -> str | None:
    """The predicate a blind spot's parts are parts of, read off the search half: the
    parts (of one population) are one shared rest and one predicate each; the parent
    holds for every search edit of every part and the parts cover at least
    ``PARENT_SHARE`` of its own (among the search edits the rest covers). The narrowest
    such predicate, by name on a tie; one part's own predicate can be it (a refinement
    of it beside it); None when there is none."""
    if table is None or len({p.population for p in parts}) != 1:
        return None
    shared = frozenset.intersection(*(frozenset(p.description) for p in parts))
    extras = [frozenset(p.description) - shared for p in parts]
    if any(len(e) != 1 for e in extras) or len(set(extras)) != len(extras):
        return None
    search = (table.phase <= Phase.TARGET) & (table.population == parts[0].population) & \
        table.covered(tuple(sorted(shared)))
    each = [table.covered(tuple(e)) & search for e in extras]
    if not all(rows.any() for rows in each):
        return None
    union = np.logical_or.reduce(each)
    best: tuple[int, str] | None = None
    for name in table.column:
        if name in shared:
            continue
        rows = table.covered((name,)) & search
        if not (union & ~rows).any() and union.sum() >= PARENT_SHARE * rows.sum():
            best = min(best or (int(rows.sum()), name), (int(rows.sum()), name))
    return best[1] if best else None


def neighbours(a: Found, b: Found, strings: Strings | None = None,
               table: ProbeTable | None = None) -> bool:
    """Whether two candidates are neighbours on one axis (the module docstring; for two
    strings: one holds the other, or they share ``SHARED_WORDS`` words in a row; parts
    of one predicate only with the search half's ``table``)."""
    strings = strings or {}
    axis_a, axis_b = _axis(a.description, strings), _axis(b.description, strings)
    if axis_a is None and axis_b is None:  # (parts on an axis are joined by it alone)
        return common_parent([a, b], table) is not None
    if axis_a is None or axis_b is None or axis_a[0] != axis_b[0]:
        return False
    rest_a, rest_b = axis_a[1], axis_b[1]
    if not (rest_a <= rest_b or rest_b <= rest_a):
        return False
    if axis_a[0] == "string":
        return _related(_text(a, strings), _text(b, strings))
    if axis_a[0] != "where":  # one manipulation group, on correct or on wrong answers
        return True
    if a.population != b.population:
        return False
    (start_a, end_a), = [position(n) for n in a.description if position(n)]
    (start_b, end_b), = [position(n) for n in b.description if position(n)]
    return start_a <= end_b + 1e-9 and start_b <= end_a + 1e-9


def neighbour_groups(candidates: list[Found], strings: Strings | None = None,
                     table: ProbeTable | None = None) -> list[list[int]]:
    """The candidates' blind spots of two or more: groups of neighbours, connected (a
    string joins its kernel's), in the candidates' order (by index); with the search
    half's ``table``, parts of one predicate too."""
    strings = strings or {}
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    carried = [i for i, c in enumerate(candidates)
               if (_axis(c.description, strings) or ("",))[0] == "string"]

    def length(k: int) -> tuple[int, int]:
        return len(_text(candidates[k], strings)), k

    kernels = [i for i in carried if not any(
        j != i and neighbours(candidates[i], candidates[j], strings) and
        length(j) < length(i) for j in carried)]
    for i in carried:
        kernel = next((k for k in kernels if k == i or neighbours(
            candidates[i], candidates[k], strings)), None)
        if kernel is not None and kernel != i and i not in kernels:
            parent[root(i)] = root(kernel)
    for i, a in enumerate(candidates):
        for j in range(i + 1, len(candidates)):
            if i not in carried and neighbours(a, candidates[j], strings, table):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(candidates)):
        groups.setdefault(root(i), []).append(i)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def family_size(candidates: list[Found], strings: Strings | None = None,
                table: ProbeTable | None = None) -> int:
    """The Bonferroni family of a hunt's confirmation: its candidates, and the widest
    description of each blind spot of one population."""
    return len(candidates) + sum(
        len({candidates[i].population for i in g}) == 1
        for g in neighbour_groups(candidates, strings, table))


def _span_phrase(spans: list[tuple[float, float]]) -> str:
    """The union of parts of the answer, in words: one stretch from its ends ("in the
    last fifth of the answer", "from 10% to 40% of the answer"), else each part."""
    spans = sorted(spans)
    merged = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= merged[-1][1] + 1e-9:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    phrases = []
    for start, end in merged:
        fifths = round(start * 5), round(end * 5)
        if abs(start * 5 - fifths[0]) < 1e-9 and abs(end * 5 - fifths[1]) < 1e-9 and \
                fifths[1] - fifths[0] == 1:
            ordinal = ("first", "second", "third", "fourth", "last")[fifths[0]]
            phrases.append(f"in the {ordinal} fifth of the answer")
        elif (start, end) == (0, 1):
            phrases.append("anywhere in the answer")
        else:
            phrases.append(f"from {start:.0%} to {end:.0%} of the answer")
    return " or ".join(phrases)


def widest(parts: list[Found], predicates: dict[str, Predicate], table: ProbeTable,
           strings: Strings | None = None) -> tuple[tuple[str, ...], str, object] | None:
    """The widest description of a blind spot of one population: its predicates' names,
    its words and the rows it covers (the rest every part shares, with any part's place
    in the answer or manipulation, or the predicate they are parts of); None for a spot
    across populations or of parts with no one parent (its parts are reported under one
    finding, each confirmed on its own)."""
    if len({p.population for p in parts}) != 1:
        return None
    strings = strings or {}
    axes = [_axis(p.description, strings) for p in parts]
    parent = common_parent(parts, table) if all(a is None for a in axes) else None
    if parent is not None and parent in predicates:
        shared = sorted(frozenset.intersection(*(frozenset(p.description) for p in parts)))
        names = (*shared, parent)
        return names, describe([predicates[n] for n in names]), table.covered(names)
    if any(axis is None for axis in axes):  # parts joined through several parents
        return None
    shared = frozenset.intersection(*(axis[1] for axis in axes if axis))
    varying = sorted({n for p in parts for n in p.description if n not in shared and (
        position(n) is not None or manipulation_group(n) is not None or strings.get(n))})
    cover = table.covered(tuple(sorted(shared)))
    either = table.covered((varying[0],))
    for name in varying[1:]:
        either = either | table.covered((name,))
    cover = cover & either
    rest = [predicates[n] for n in sorted(shared)]
    spans = [position(n) for n in varying]
    if all(strings.get(n) for n in varying):  # the strings no other one contains
        texts = sorted({strings[n][0] for n in varying}, key=len)
        kernels = [t for t in texts if not any(o != t and o in t for o in texts)]
        where = [w for w in ("alone", "before", "after")
                 if any(strings[n][1] == w for n in varying)]
        ways = {"alone": "alone", "before": "before a wrong answer",
                "after": "after a wrong answer"}
        said = [ways[w] for w in where]
        said = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
        words = "answers carrying " + " or ".join(map(repr, kernels)) + f" ({said})" + \
            (f", {describe(rest)}" if rest else "")
    elif all(s is not None for s in spans):
        phrase = _span_phrase(spans)  # type: ignore[arg-type]
        words = describe([*rest, Predicate(" | ".join(varying), phrase, "where",
                                           lambda e: False)])
    else:
        words = describe(rest) + ", with " + " or ".join(
            predicates[n].phrase.removeprefix("with ") for n in varying)
    return tuple(sorted(shared)) + tuple(varying), words, cover
