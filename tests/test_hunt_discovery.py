"""`fbi hunt`'s parts without a judge (issue 49): the margin test against statsmodels and a
numerical maximum of the likelihood, the discovery's tests against scipy and its top slice
against sliceline's, explaining away on planted tables, the predicates on hand-made
edits, placement, a user's own place and predicate, and the log read only past what a
round already read."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import optimize, stats

from fbi.hunt import PLACES, PREDICATES, Operator, cover, margin_test, place, score_all
from fbi.hunt._discovery import generalize
from fbi.hunt._predicates import Change, EditView, common_prefix, describe
from fbi.hunt._space import EditSpace, predicates_for
from fbi.perturb.rules import Declined, GoldItem

# ------------------------------------------------------------------ the margin test


@pytest.mark.parametrize("counts", [(12, 50, 30, 300), (20, 40, 20, 200), (0, 10, 5, 10),
                                    (30, 30, 2, 200)])
def test_the_margin_test_at_margin_zero_is_statsmodels_score_test(counts):
    from statsmodels.stats.proportion import test_proportions_2indep

    expected = test_proportions_2indep(*counts, value=0, method="score", compare="diff",
                                       alternative="larger", correction=False).pvalue
    assert margin_test(*counts, 0.0) == pytest.approx(expected, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("counts, margin", [((20, 40, 20, 200), 0.1), ((9, 10, 1, 10), 0.2),
                                            ((5, 40, 20, 200), 0.1), ((50, 80, 9, 90), 0.3)])
def test_the_margin_test_uses_the_constrained_maximum_likelihood(counts, margin):
    """Farrington–Manning: the variance at the maximum of the likelihood under
    p1 − p2 = margin, found here numerically (statsmodels' closed form has a wrong
    coefficient for a non-zero margin, its issue #10269)."""
    x1, n1, x2, n2 = counts

    def minus_log_likelihood(p2: float) -> float:
        p1 = p2 + margin
        return -(x1 * math.log(p1) + (n1 - x1) * math.log(1 - p1) + x2 * math.log(p2)
                 + (n2 - x2) * math.log(1 - p2))

    best = optimize.minimize_scalar(minus_log_likelihood, bounds=(1e-12, 1 - margin - 1e-12),
                                    method="bounded", options={"xatol": 1e-12})
    r2 = best.x
    r1 = r2 + margin
    z = (x1 / n1 - x2 / n2 - margin) / math.sqrt(r1 * (1 - r1) / n1 + r2 * (1 - r2) / n2)
    assert margin_test(*counts, margin) == pytest.approx(stats.norm.sf(z), rel=1e-5)


def test_a_handful_of_held_out_edits_confirms_nothing():
    from fbi.hunt._confirm import MIN_HELD_OUT, confirmation_test

    # one edit, missed, against 20 of 226: the score test alone would say p = 0.02
    assert margin_test(1, 1, 20, 226, 0.1) < 0.05
    assert confirmation_test(1, 1, 20, 226, 0.1) == 1.0
    # from MIN_HELD_OUT edits on, the larger of the two tests (Fisher's exact p of 10 of
    # 10 against 20 of 226 is C(226, 10)... a hypergeometric tail, from scipy)
    n = MIN_HELD_OUT
    fisher = stats.fisher_exact([[n, 0], [20, 206]], alternative="greater").pvalue
    assert confirmation_test(n, n, 20, 226, 0.1) == pytest.approx(
        max(fisher, margin_test(n, n, 20, 226, 0.1)))


def test_the_margin_test_by_hand():
    # 30 of 40 missed inside, 20 of 200 outside, margin 0 (pooled 50/240):
    # z = (0.75 − 0.1) / sqrt(50/240 · 190/240 · (1/40 + 1/200)) = 0.65 / 0.07022 = 9.257
    assert margin_test(30, 40, 20, 200, 0.0) == pytest.approx(stats.norm.sf(9.2566), rel=1e-3)
    assert margin_test(3, 0, 1, 10, 0.1) == 1.0 and margin_test(3, 10, 0, 0, 0.1) == 1.0
    # a larger margin asks for more
    assert margin_test(20, 40, 20, 200, 0.3) > margin_test(20, 40, 20, 200, 0.1)


@pytest.mark.parametrize("rate, base", [(0.5, 0.2), (0.7, 0.15), (0.4, 0.3)])
def test_the_held_out_size_at_margin_zero_is_statsmodels(rate, base):
    from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail

    from fbi.hunt._confirm import probes_needed

    expected = samplesize_proportions_2indep_onetail(rate - base, base, 0.9, 1, 0.01,
                                                     alternative="larger")
    assert probes_needed(rate, base, 0.0, 0.01) == max(20, math.ceil(expected))


@pytest.mark.parametrize("rate, base", [(0.55, 0.15), (0.7, 0.2), (0.45, 0.1)])
def test_the_held_out_size_gives_the_margin_test_its_power(rate, base):
    """Simulated: held-out edits and baseline edits of that size, drawn 4,000 times at
    those rates, are confirmed (margin 10 points, level 0.01) about 90% of the time."""
    from fbi.hunt._confirm import probes_needed

    n = probes_needed(rate, base, 0.1, 0.01)
    rng = np.random.default_rng(0)
    inside, outside = rng.binomial(n, rate, 4000), rng.binomial(n, base, 4000)
    power = np.mean([margin_test(int(a), n, int(b), n, 0.1) < 0.01
                     for a, b in zip(inside, outside, strict=True)])
    assert 0.87 <= power <= 0.94
    assert probes_needed(base + 0.1, base, 0.1, 0.01) is None  # no effect beyond the margin


def test_a_candidate_is_sized_for_the_rates_its_search_evidence_bounds():
    # one-sided 95% Wilson bounds (z = 1.645), from statsmodels
    from statsmodels.stats.proportion import proportion_confint

    from fbi.hunt._confirm import planned_rates

    low, high = planned_rates(30, 40, 50, 400)
    assert low == pytest.approx(proportion_confint(30, 40, 0.1, "wilson")[0])
    assert high == pytest.approx(proportion_confint(50, 400, 0.1, "wilson")[1])


# ------------------------------------------------------------------ discovery


def planted_table(rows: int = 3000, seed: int = 0):
    """Columns: 0 loud (30% of rows, missed 90%), 1 quiet (6%, missed 70%), 2 and 3
    proxies of the loud one (true of 80% of its rows and 10% of the rest), 4–9 noise;
    every row missed 10% of the time besides."""
    rng = np.random.default_rng(seed)
    X = np.zeros((rows, 10), dtype=bool)
    X[:, 0] = rng.random(rows) < 0.3
    X[:, 1] = rng.random(rows) < 0.06
    for proxy in (2, 3):
        X[:, proxy] = np.where(X[:, 0], rng.random(rows) < 0.8, rng.random(rows) < 0.1)
    X[:, 4:] = rng.random((rows, 6)) < 0.2
    missed = rng.random(rows) < 0.1
    missed |= X[:, 0] & (rng.random(rows) < 0.9)
    missed |= X[:, 1] & (rng.random(rows) < 0.7)
    return X, missed


def test_every_description_is_scored_by_fisher_s_exact_test():
    X, missed = planted_table(400)
    scored = {s.description: s for s in score_all(X, missed, min_n=5)}
    for description in [(0,), (1,), (0, 4), (2, 3), (1, 5, 6)]:
        if description not in scored:
            continue
        s = scored[description]
        inside = np.logical_and.reduce([X[:, c] for c in description])
        table = [[int(missed[inside].sum()), int((~missed[inside]).sum())],
                 [int(missed[~inside].sum()), int((~missed[~inside]).sum())]]
        assert s.n == inside.sum() and s.misses == table[0][0]
        assert s.p_value == pytest.approx(stats.fisher_exact(table, "greater").pvalue,
                                          rel=1e-9)


def test_covering_names_the_loud_and_the_quiet_spot_once_each():
    X, missed = planted_table()
    found = cover(X, missed, max_found=5, p_threshold=1e-4, min_effect=0.15)
    assert [s.description for s in found[:2]] == [(0,), (1,)]
    # the proxies of the loud spot are explained by it: no echo
    assert all(2 not in s.description and 3 not in s.description for s in found)
    # without explaining away, the proxies stand out on their own
    alone = {s.description: s for s in score_all(X, missed)}
    assert alone[(2,)].p_value < 1e-50


def mixed_table(seed: int, rows: int = 1500):
    """Columns: 0 loud (25% of rows, missed 90%); 1 broad (35%), holding 2 and 3, two
    quiet spots (each about 4% of rows, missed 70%), its other rows ordinary; 4–11
    noise; every row missed 10% of the time besides."""
    rng = np.random.default_rng(seed)
    X = np.zeros((rows, 12), dtype=bool)
    X[:, 0] = rng.random(rows) < 0.25
    X[:, 1] = rng.random(rows) < 0.35
    X[:, 2] = X[:, 1] & (rng.random(rows) < 0.12)
    X[:, 3] = X[:, 1] & ~X[:, 2] & (rng.random(rows) < 0.12)
    X[:, 4:] = rng.random((rows, 8)) < 0.2
    missed = rng.random(rows) < 0.1
    missed |= X[:, 0] & (rng.random(rows) < 0.9)
    missed |= (X[:, 2] | X[:, 3]) & (rng.random(rows) < 0.7)
    return X, missed


@pytest.mark.parametrize("seed", range(8))
def test_a_broad_description_missed_for_two_quiet_spots_inside_it_is_neither(seed):
    """The broad column has the stronger Fisher evidence of the three (it holds both
    spots' misses), yet it is a mix of two blind spots and ordinary edits: the covering
    names each spot, never the mix (before, seeds 0 and 6 named the broad column and
    neither spot)."""
    X, missed = mixed_table(seed)
    found = [s.description for s in cover(X, missed, max_found=6, p_threshold=0.01,
                                          min_effect=0.15)]
    assert found[:3] in ([(0,), (2,), (3,)], [(0,), (3,), (2,)])
    assert not any(1 in description for description in found)


def late_table(seed: int, rows: int = 600):
    """Short trajectories: column 1 the final answers (20% of rows, missed 95%), 2 the
    steps with side effects (20%, missed 70%), 0 the last third — every final answer,
    80% of the side-effect steps and nothing else; 3–9 noise; every row missed 10% of
    the time besides."""
    rng = np.random.default_rng(seed)
    X = np.zeros((rows, 10), dtype=bool)
    kind = rng.choice(3, size=rows, p=[0.2, 0.2, 0.6])
    X[:, 1], X[:, 2] = kind == 0, kind == 1
    X[:, 0] = X[:, 1] | (X[:, 2] & (rng.random(rows) < 0.8))
    X[:, 3:] = rng.random((rows, 7)) < 0.2
    missed = rng.random(rows) < 0.1
    missed |= X[:, 1] & (rng.random(rows) < 0.95)
    missed |= X[:, 2] & (rng.random(rows) < 0.7)
    return X, missed


@pytest.mark.parametrize("seed", range(6))
def test_a_description_found_first_is_named_without_the_spots_found_after_it(seed):
    """The last third is the best description of all the rows (it holds both spots'
    misses and no ordinary row, so it is no mix), so the covering takes it first; the
    side-effect steps are found next, and without them the last third is the final
    answers: the covering names the two spots, never the last third."""
    from fbi.hunt._discovery import best

    X, missed = late_table(seed)
    assert best(score_all(X, missed, min_effect=0.15), 0.15).description == (0,)
    found = [s.description for s in cover(X, missed, max_found=6, p_threshold=0.01,
                                          min_effect=0.15, rename=True)]
    assert found[:2] == [(1,), (2,)]
    assert not any(0 in description for description in found)
    # round by round (the suspicions) the covering keeps its first description
    assert cover(X, missed, max_found=6, p_threshold=0.01,
                 min_effect=0.15)[0].description == (0,)


def test_a_blind_spot_missed_less_where_it_is_larger_stays_one():
    """A spot with a louder part and a remainder still above the rest is one spot: the
    mix test leaves it whole."""
    rng = np.random.default_rng(3)
    rows = 2000
    X = rng.random((rows, 8)) < 0.2
    X[:, 0] = rng.random(rows) < 0.2
    X[:, 1] = X[:, 0] & (rng.random(rows) < 0.5)
    missed = (rng.random(rows) < 0.1) | (X[:, 1] & (rng.random(rows) < 0.9)) | \
        (X[:, 0] & ~X[:, 1] & (rng.random(rows) < 0.5))
    found = cover(X, missed, max_found=3, p_threshold=0.01, min_effect=0.15)
    assert found[0].description == (0,)


def test_a_description_is_as_broad_as_its_evidence():
    X, missed = planted_table()
    narrow = next(s for s in score_all(X, missed) if s.description == (0, 5))
    assert generalize(X, missed, narrow, 0.15).description == (0,)
    # a conjunction that holds the misses keeps its parts: 6 and 7 together are missed,
    # either alone is caught
    rng = np.random.default_rng(1)
    X[:, 6], X[:, 7] = rng.random(len(X)) < 0.3, rng.random(len(X)) < 0.3
    both = X[:, 6] & X[:, 7]
    missed = (rng.random(len(X)) < 0.1) | (both & (rng.random(len(X)) < 0.9))
    pair = next(s for s in score_all(X, missed) if s.description == (6, 7))
    assert generalize(X, missed, pair, 0.15).description == (6, 7)


@pytest.mark.slow
def test_the_enumeration_finds_sliceline_s_top_slice():
    """sliceline (a kept slice-finding library) and this module's enumeration agree on the
    best slice under sliceline's own score."""
    from sliceline.slicefinder import Slicefinder

    X, missed = planted_table(2000, seed=3)
    X = X[:, [0, 1, 4, 5, 6]]
    alpha, min_sup = 0.95, 20
    finder = Slicefinder(alpha=alpha, k=1, max_l=2, min_sup=min_sup, verbose=False)
    finder.fit(X.astype(int) + 1, missed.astype(float))  # values 1 (false) and 2 (true)
    (top,) = finder.top_slices_
    rows, mean = len(X), missed.mean()

    def sliceline_score(n: int, m: int) -> float:
        return alpha * (m / n / mean - 1) - (1 - alpha) * (rows / n - 1)

    ours = max(score_all(X, missed, min_n=min_sup, max_terms=2),
               key=lambda s: sliceline_score(s.n, s.misses))
    expected = tuple(i for i, value in enumerate(top) if value == 2)
    assert ours.description == expected


# ------------------------------------------------------------------ predicates


GOLD = ("## Plan for the trip\n"
        "We leave at 9 am (about 40 km away). The guide said \"it is quite far\" and it "
        "**always** starts on time.\n\n"
        "1. Pack water.\n2. Walk for 3 hours.\n\n"
        "| day | km |\n| 1 | 12 |\n\n"
        "```\nroute = 7\n```\n"
        "Call `maps` first. We love Paris in May. You should rest.")


def view(edited: str, shown: str | None = None, manipulation: str | None = None,
         gold: str = GOLD) -> EditView:
    return EditView("Plan a trip.", gold, edited, shown or edited, "long-form", "x",
                    ("x",), manipulation)


def holds(edited: str, **kwargs) -> set[str]:
    v = view(edited, **kwargs)
    where = {p.name for p in predicates_for(EditSpace(), ["vanilla"], False)
             if p.group == "where" and p.test(v)}
    return where | {name for name, p in PREDICATES.items() if p.test(v)}


@pytest.mark.parametrize("old, new, expected, absent", [
    ("40 km", "45 km", {"in_parentheses", "changes_digits", "replaced", "small_change",
                        "in_first_paragraph", "in_first_half"},
     {"in_quotes", "changes_unit", "in_list_item"}),
    ("40 km", "40 miles", {"in_parentheses", "changes_unit", "one_word"}, {"changes_digits"}),
    ("it is quite far", "it is not quite far", {"in_quotes", "changes_negation", "inserted"},
     {"in_parentheses", "deleted"}),
    ("**always**", "**never**", {"in_bold", "changes_quantifier"}, {"in_quotes"}),
    ("## Plan", "## Plans", {"in_heading", "in_first_sentence", "inserted"}, {"in_bold"}),
    ("Walk for 3", "Walk for 4", {"in_list_item", "changes_digits"}, {"in_table_row"}),
    ("| 1 | 12 |", "| 1 | 21 |", {"in_table_row", "changes_digits"}, {"in_list_item"}),
    ("route = 7", "route = 9", {"in_code_block"}, {"in_inline_code"}),
    ("`maps`", "`mapz`", {"in_inline_code"}, {"in_code_block"}),
    ("love Paris", "love Lyon", {"changes_entity"}, set()),
    ("in May", "in June", {"changes_date"}, set()),
    ("should rest", "must rest", {"changes_modal", "in_last_sentence", "in_tenth_10",
                                  "in_last_third"}, {"in_first_half"}),
    ("on time.", "on time!", {"punctuation_only"}, {"case_only"}),
    ("Paris", "paris", {"case_only", "changes_entity"}, {"punctuation_only"}),
])
def test_each_predicate_holds_where_it_says(old, new, expected, absent):
    assert GOLD.count(old) == 1
    found = holds(GOLD.replace(old, new))
    assert expected <= found, expected - found
    assert not absent & found, absent & found


def test_what_a_manipulation_adds_counts_among_the_changed_words():
    edited = GOLD.replace("Walk", "Wlak")
    shown = edited + "\n\nRating: [[10]]"
    assert "changes_digits" in holds(edited, shown=shown, manipulation="fake-verdict")
    assert "changes_digits" not in holds(edited)


def test_the_change_is_found_in_linear_time_and_to_whole_words():
    gold = "a" * 100_000 + " old word " + "b" * 100_000
    change = Change.between(gold, gold.replace("old", "new"))
    assert (change.before, change.after) == ("old", "new")
    assert change.start == 100_001 and change.end == 100_004
    assert common_prefix("abc" * 1000, "abc" * 999 + "abd") == 2999


def test_descriptions_read_as_english():
    names = predicates_for(EditSpace(), ["vanilla", "pairwise"], True)
    by_name = {p.name: p for p in names}
    assert describe([by_name["in_parentheses"]]) == "edits inside parentheses"
    assert describe([by_name["op:number-errors"], by_name["in_last_third"]]) == \
        "number-errors edits in the last third of the answer"
    assert describe([by_name["added:manipulation/padding"], by_name["order:edit-first"]]) \
        == "edits with padding added with the edit shown first"
    assert describe([by_name["changes_digits"], by_name["in_list_item"]]) == \
        "edits changing digits, inside a list item"


# ------------------------------------------------------------------ placement


ITEM = GoldItem("g1", "factual", "Describe the town.", GOLD)


def change_start(edited: str) -> int:
    return Change.between(GOLD, edited).start


@pytest.mark.parametrize("operator, where", [("number-errors", "in_parentheses"),
                                             ("typo", "in_quotes"),
                                             ("negation", "in_quotes"),
                                             ("number-errors", "in_table_row"),
                                             ("typo", "in_heading")])
def test_an_operator_asked_for_a_place_edits_there(operator, where):
    spans = PLACES[where].find(GOLD)
    for seed in range(20):
        edit = Operator.parse(operator).apply(ITEM, seed, placement=where)
        start = change_start(edit.edited)
        assert any(s <= start < e for s, e in spans), (seed, edit.edited)


def test_an_operator_that_cannot_edit_a_place_declines():
    with pytest.raises(Declined):
        Operator.parse("incorrect-units").apply(ITEM, 0, placement="in_quotes")
    with pytest.raises(Declined):  # a manipulation alone has nothing to place
        Operator.parse("manipulation/padding").apply(ITEM, 0, placement="in_bold")


def test_two_edits_that_cancel_out_are_no_edit():
    gold = GoldItem("g2", "factual", "Q?", "The door is open and the light is on.")
    made = 0
    for seed in range(60):
        try:
            edit = Operator.parse("opposite-fact+negation").apply(gold, seed)
        except Declined:
            continue
        made += 1
        assert edit.edited != gold.gold_answer
    assert made


def test_a_user_s_place_and_predicate_are_searched_like_the_built_in_ones():
    import re

    from fbi.hunt import predicate

    @place("in_exclamation", "in an exclamation")
    def exclamations(text: str):
        """A sentence ending in '!'."""
        return [m.span() for m in re.finditer(r"[^.!?\n]*!", text)]

    @predicate("changes_rest", "changing the word rest")
    def changes_rest(edit: EditView) -> bool:
        """The word "rest" is among the changed words."""
        return edit.touches(lambda w: w.lower() == "rest")

    try:
        gold = GoldItem("g3", "long-form", "Cheer.", "Stay calm. What a great day! Rest.")
        edit = Operator.parse("typo").apply(gold, 1, placement="in_exclamation")
        by_name = {p.name: p for p in predicates_for(EditSpace(), ["vanilla"], False)}
        assert by_name["in_exclamation"].test(edit.view())
        assert by_name["in_exclamation"].place is not None
        assert by_name["changes_rest"].test(view("Stay calm. Sleep.", gold="Stay calm. Rest."))
    finally:
        PLACES.remove("in_exclamation")
        PREDICATES.remove("changes_rest")


def test_random_edits_reach_every_place_the_answers_have():
    from fbi.hunt._table import Population

    space, rng, counts = EditSpace(), random.Random(0), {}
    items = [ITEM, GoldItem("g4", "reasoning", "Add.", "Step 1: 2 + 2 = 4 (easy).")]
    for _ in range(400):
        drawn = space.random_edit(items, rng, set(), counts)
        if drawn is None or drawn[0].population != Population.ERROR:
            continue
        v = drawn[1].view()
        for name in PLACES:
            if v.starts_in(name):
                counts[name] = counts.get(name, 0) + 1
    present = {n for n, p in PLACES.items() if p.find(GOLD)}
    assert {"in_parentheses", "in_quotes", "in_heading", "in_table_row",
            "in_code_block", "in_inline_code", "in_bold"} <= {n for n in present
                                                               if counts.get(n)}


# ------------------------------------------------------------------ reading the log once


def test_an_append_log_given_its_state_reads_only_what_lies_past_it(tmp_path):
    from fbi.logs import AppendLog
    from fbi.records import Judgment

    def judgment(call_id: str) -> Judgment:
        return Judgment(call_id=call_id, prompt_hash="h", instance_id="i", ability="factual",
                        category="number-errors", strategy="vanilla", strategy_version="1",
                        paradigm="single", role="perturbed", judge="j", status="ok",
                        score=3, raw_output="{}")

    path = tmp_path / "judgments.jsonl"
    log = AppendLog(path, Judgment, keep_records=False)
    for i in range(3):
        log.append(judgment(f"c{i}"))
    state = log.state()
    log.close()
    seen: list[str] = []
    again = AppendLog(path, Judgment, keep_records=False, known=state,
                      visit=lambda r: seen.append(r.call_id),
                      on_append=lambda r: seen.append("+" + r.call_id))
    again.append(judgment("c3"))
    again.close()
    assert seen == ["+c3"]  # nothing before the state was read again
    assert again.finished == {"c0", "c1", "c2", "c3"}
    raw = path.read_bytes().replace(b'"c1"', b'"c1 ', 1)  # a line the state covers, broken
    path.write_bytes(raw)
    AppendLog(path, Judgment, keep_records=False, known=again.state()).close()  # not read
    from fbi.errors import InputError

    with pytest.raises(InputError, match="line 2"):  # read whole, it is found
        AppendLog(path, Judgment, keep_records=False)


def test_sliceline_alone_sees_the_loud_spot_several_ways():
    """What the covering adds: on the same table, sliceline's top three slices are the
    loud blind spot and its proxies; the covering names the loud one and the quiet one."""
    from sliceline.slicefinder import Slicefinder

    X, missed = planted_table(2000, seed=3)
    finder = Slicefinder(alpha=0.95, k=3, max_l=2, min_sup=20, verbose=False)
    finder.fit(X.astype(int) + 1, missed.astype(float))
    loud = {0, 2, 3}  # the loud spot and its two proxies
    for top in finder.top_slices_:
        assert loud & {i for i, value in enumerate(top) if value == 2}
    found = cover(X, missed, max_found=3, p_threshold=1e-4, min_effect=0.15)
    assert [s.description for s in found[:2]] == [(0,), (1,)]


def test_a_finding_s_examples_are_different_edits_that_share_least_with_other_findings():
    """Two confirmed findings, "changing a named entity" and "changing digits", and a
    third candidate, "changing a unit". Of the entity finding's missed held-out probes,
    one changes digits too (the digits finding explains it: not an example), one changes
    a unit besides (shared with the third candidate), and two are the same edit: the
    plain one comes first, and the same edit is shown once."""
    from fbi.findings import HuntExample
    from fbi.hunt._discovery import Scored
    from fbi.hunt._findings import Summary, _distinct
    from fbi.hunt._predicates import PREDICATES
    from fbi.hunt._search import Found
    from fbi.hunt._table import Phase, Population, ProbeTable, Row

    names = ["changes_entity", "changes_digits", "changes_unit"]
    table = ProbeTable([PREDICATES[n] for n in names])

    def add(values, missed, phase, offset):
        table.add(Row(np.array(values, dtype=bool), missed, Population.ERROR, phase, -1,
                      "entity-swap", offset, (f"c{offset}",), False, 3, 0, 0))

    add([1, 1, 0], True, Phase.BASELINE, 0)   # both findings: not an example
    add([1, 0, 1], True, Phase.BASELINE, 1)   # shares the unit candidate's predicate
    add([1, 0, 0], True, Phase.BASELINE, 2)   # plain
    add([1, 0, 0], True, Phase.BASELINE, 3)   # the same edit as row 2
    add([1, 0, 0], False, Phase.BASELINE, 4)  # caught
    add([0, 0, 0], False, Phase.BASELINE, 5)
    found = [Found((n,), Population.ERROR, Scored((i,), 10, 9, 10, 1, 1e-9))
             for i, n in enumerate(names)]
    summary = Summary(table, found, {n: PREDICATES[n] for n in names}, 0.05, 0.1)
    entity = summary.decisions[0]
    entity.status = summary.decisions[1].status = "confirmed"
    summary.decisions[2].status = "not confirmed"
    assert summary.examples(entity) == [2, 3, 1]

    def example_of(row: int):
        edited = "the same edit" if row in (2, 3) else f"edit {row}"
        return f"c{row}", HuntExample(instance_id=str(row), strategy="vanilla",
                                      held_out=True, question="q", gold_answer="a",
                                      edited_answer=edited)

    assert [call for call, _ in _distinct(example_of, [2, 3, 1])] == ["c2", "c1"]
