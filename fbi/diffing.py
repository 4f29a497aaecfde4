"""Word-level differences between a gold and a perturbed answer: the one word diff, as
segments for people to read (TUI, report) and as character ranges for the pre-screen."""

from __future__ import annotations

import difflib
import re


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Segments (op, text), op in equal / delete / insert, over words and whitespace.

    A lone space between two changed words joins them, so "Jane Austen" → "Charlotte
    Bronte" reads as one replacement rather than two.
    """
    a, b = re.findall(r"\s+|[^\s]+", before), re.findall(r"\s+|[^\s]+", after)
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    merged: list[list] = []
    for index, (op, i1, i2, j1, j2) in enumerate(opcodes):
        between_changes = 0 < index < len(opcodes) - 1 and op == "equal" and \
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
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
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
