"""The one word diff (issue 50): an exact edit script whatever the texts, difflib's own
result on short answers, and compact on long ones (two 20,000-word answers with two
changes come out as two changes; its speed is in benchmarks/RESULTS.md)."""

from __future__ import annotations

import difflib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from fbi.diffing import DIFFLIB_TOKENS, changed_regions, opcodes, word_diff


def rebuilt(a: list[str], b: list[str], script) -> list[str]:
    out: list[str] = []
    position = 0
    for op, i1, i2, j1, j2 in script:
        assert i1 == position  # the script walks a from start to end, in order
        if op == "equal":
            assert a[i1:i2] == b[j1:j2]
            out += a[i1:i2]
        else:
            assert op == ("replace" if i2 > i1 and j2 > j1 else
                          "delete" if i2 > i1 else "insert")
            out += b[j1:j2]
        position = i2
    assert position == len(a)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("a b c d e f".split()), max_size=80),
       st.lists(st.sampled_from("a b c x y".split()), max_size=80))
def test_the_script_rebuilds_the_edited_text_from_the_gold(a, b):
    assert rebuilt(a, b, opcodes(a, b)) == b


def test_short_answers_get_difflib_s_own_diff():
    rng = random.Random(2)
    for _ in range(200):
        a = [rng.choice("abcdefgh") for _ in range(rng.randint(0, 40))]
        b = list(a)
        for _ in range(3):
            if b:
                b[rng.randrange(len(b))] = rng.choice("xyz")
        assert opcodes(a, b) == difflib.SequenceMatcher(None, a, b, autojunk=False) \
            .get_opcodes()


def test_long_answers_are_anchored_on_their_unique_words():
    rng = random.Random(0)
    words = [f"w{rng.randrange(3000)}" for _ in range(20 * DIFFLIB_TOKENS)]
    edited = list(words)
    edited[5000] = "CHANGED"
    del edited[12000:12010]
    changes = [op for op in opcodes(words, edited) if op[0] != "equal"]
    assert changes == [("replace", 5000, 5001, 5000, 5001), ("delete", 12000, 12010,
                                                                12000, 12000)]
    assert rebuilt(words, edited, opcodes(words, edited)) == edited
    # nothing in common and nothing unique: one replacement, not a quadratic search
    repeated = ["a", "b"] * (2 * DIFFLIB_TOKENS)
    other = ["c", "d"] * (2 * DIFFLIB_TOKENS)
    assert opcodes(repeated, other) == [("replace", 0, len(repeated), 0, len(other))]


def test_the_diffs_people_read_are_unchanged():
    assert word_diff("by Jane Austen in 1813", "by Charlotte Bronte in 1813") == [
        ("equal", "by "), ("delete", "Jane Austen"), ("insert", "Charlotte Bronte"),
        ("equal", " in 1813")]
    gold, edited = "It moved in 1887 to the river.", "It moved in 1878 to the river."
    assert changed_regions(gold, edited) == ([(12, 16)], [(12, 16)])
