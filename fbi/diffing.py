"""Word-level differences between a gold and a perturbed answer: the one word diff, as
segments for people to read (TUI, report, viewer) and as character ranges for the
pre-screen.

The diff is near-linear in the answers' length (issue 50): answers of up to
``DIFFLIB_TOKENS`` tokens are diffed by ``difflib`` (exact longest matching blocks, as
always); longer ones lose their common first and last words, and what is left, when
small, is diffed by ``difflib``; when large, it is split at *anchors* — words that occur
exactly once in each side, the longest increasing run of them (the "patience diff" of
Bram Cohen, as in git's ``--patience``), found in O(n log n) — and each stretch between
anchors is diffed the same way. A stretch too large for ``difflib`` with no anchor in it is one
replacement. ``difflib`` over two 8,000-word answers took 18 s; this takes milliseconds.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter
from collections.abc import Sequence

from fbi.trajectories import step_changes

#: Stretches up to this many tokens a side are diffed by difflib (quadratic, exact).
DIFFLIB_TOKENS = 1500

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """difflib-style opcodes (equal / replace / delete / insert) turning ``a`` into ``b``,
    in near-linear time (see the module docstring)."""
    found: list[Opcode] = []
    if max(len(a), len(b)) <= DIFFLIB_TOKENS:  # an answer of ordinary length: difflib's
        _difflib(a, b, 0, len(a), 0, len(b), found)  # own diff, as it always was
    else:
        _diff(a, b, 0, len(a), 0, len(b), found)
    merged: list[list] = []  # neighbouring equal stretches, and neighbouring changes, joined
    for op, i1, i2, j1, j2 in found:
        if i1 == i2 and j1 == j2:
            continue
        kind = "equal" if op == "equal" else "change"
        if merged and merged[-1][0] == kind:
            merged[-1][2], merged[-1][4] = i2, j2
        else:
            merged.append([kind, i1, i2, j1, j2])
    return [("equal" if kind == "equal" else "replace" if i2 > i1 and j2 > j1
             else "delete" if i2 > i1 else "insert", i1, i2, j1, j2)
            for kind, i1, i2, j1, j2 in merged]


def _diff(a: Sequence[str], b: Sequence[str], a0: int, a1: int, b0: int, b1: int,
          out: list[Opcode]) -> None:
    start = 0
    while a0 + start < a1 and b0 + start < b1 and a[a0 + start] == b[b0 + start]:
        start += 1
    end = 0
    while a1 - end > a0 + start and b1 - end > b0 + start and a[a1 - end - 1] == \
            b[b1 - end - 1]:
        end += 1
    if start:
        out.append(("equal", a0, a0 + start, b0, b0 + start))
    i0, i1, j0, j1 = a0 + start, a1 - end, b0 + start, b1 - end
    if i0 < i1 or j0 < j1:
        if max(i1 - i0, j1 - j0) <= DIFFLIB_TOKENS or i0 == i1 or j0 == j1:
            _difflib(a, b, i0, i1, j0, j1, out)
        else:
            _anchored(a, b, i0, i1, j0, j1, out)
    if end:
        out.append(("equal", a1 - end, a1, b1 - end, b1))


def _difflib(a: Sequence[str], b: Sequence[str], i0: int, i1: int, j0: int, j1: int,
             out: list[Opcode]) -> None:
    if i0 == i1 or j0 == j1 or max(i1 - i0, j1 - j0) <= DIFFLIB_TOKENS:
        matcher = difflib.SequenceMatcher(None, a[i0:i1], b[j0:j1], autojunk=False)
        out += [(op, i0 + x1, i0 + x2, j0 + y1, j0 + y2)
                for op, x1, x2, y1, y2 in matcher.get_opcodes()]
    else:  # too large to diff exactly, and nothing to anchor it by: one replacement
        out.append(("replace", i0, i1, j0, j1))


def _anchored(a: Sequence[str], b: Sequence[str], i0: int, i1: int, j0: int, j1: int,
              out: list[Opcode]) -> None:
    """Split at the longest increasing run of words unique in both stretches."""
    count_a, count_b = Counter(a[i0:i1]), Counter(b[j0:j1])
    where_b = {b[j]: j for j in range(j0, j1) if count_b[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(i0, i1)
             if count_a[a[i]] == 1 and a[i] in where_b]
    anchors = _longest_increasing(pairs)
    if not anchors:
        _difflib(a, b, i0, i1, j0, j1, out)
        return
    previous_i, previous_j = i0, j0
    for i, j in anchors:
        _diff(a, b, previous_i, i, previous_j, j, out)
        out.append(("equal", i, i + 1, j, j + 1))
        previous_i, previous_j = i + 1, j + 1
    _diff(a, b, previous_i, i1, previous_j, j1, out)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (increasing in the first item) whose second items
    increase too: patience sorting, O(n log n)."""
    tails: list[int] = []  # the second item ending the best run of each length
    ends: list[int] = []  # the index in pairs of that ending
    back: list[int] = []
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[length], ends[length] = j, index
        back.append(ends[length - 1] if length else -1)
    run, index = [], ends[-1] if ends else -1
    while index != -1:
        run.append(pairs[index])
        index = back[index]
    return run[::-1]


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Segments (op, text), op in equal / delete / insert, over words and whitespace.

    A lone space between two changed words joins them, so "Jane Austen" → "Charlotte
    Bronte" reads as one replacement rather than two.
    """
    a, b = re.findall(r"\s+|[^\s]+", before), re.findall(r"\s+|[^\s]+", after)
    merged: list[list] = []
    found = opcodes(a, b)
    for index, (op, i1, i2, j1, j2) in enumerate(found):
        between_changes = 0 < index < len(found) - 1 and op == "equal" and \
            "".join(a[i1:i2]).isspace() and merged and merged[-1][0] != "equal"
        if between_changes:
            op = "replace"
        if merged and op != "equal" and merged[-1][0] != "equal":
            merged[-1][2], merged[-1][4] = i2, j2  # extend the running change
        else:
            merged.append([op, i1, i2, j1, j2])
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in merged:
        if op == "equal":
            segments.append(("equal", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("delete", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(("insert", "".join(b[j1:j2])))
    return segments


def changed_regions(gold: str, perturbed: str) -> tuple[list[tuple[int, int]],
                                                        list[tuple[int, int]]]:
    """Character ranges of the word-level diff: removed in gold, inserted in perturbed."""
    a = [m.span() for m in re.finditer(r"\S+", gold)]
    b = [m.span() for m in re.finditer(r"\S+", perturbed)]
    words_a = [gold[s:e] for s, e in a]
    words_b = [perturbed[s:e] for s, e in b]
    removed, inserted = [], []
    for op, i1, i2, j1, j2 in opcodes(words_a, words_b):
        if op == "equal":
            continue
        if i2 > i1:
            removed.append((a[i1][0], a[i2 - 1][1]))
        elif a:  # a pure insertion sits between two gold words
            position = a[i1][0] if i1 < len(a) else a[-1][1]
            removed.append((position, position))
        if j2 > j1:
            inserted.append((b[j1][0], b[j2 - 1][1]))
    return removed, inserted


def answer_diff(gold: str, perturbed: str) -> list[tuple[str, str]]:
    """`word_diff`, or for an agent's trajectories the steps aligned by their text
    (`fbi.trajectories.step_changes`): a removed step as one deletion, an added one as
    one insertion, a changed one with its word diff — not every later step's new number
    shown as a change."""
    changes = step_changes(gold, perturbed)
    if changes is None:
        return word_diff(gold, perturbed)
    segments: list[tuple[str, str]] = []
    for change in changes:
        if change.after is None:
            segments.append(("delete", f"(removed) {change.before}\n"))
        elif change.before is None:
            segments.append(("insert", f"Step {change.number} · {change.after}\n"))
        else:
            segments += [("equal", f"Step {change.number} · "),
                         *word_diff(change.before, change.after), ("equal", "\n")]
    return segments
