"""Aggregates of instance outcomes, with intervals. Pure and vectorised; no I/O.

* Per category: the undetected rate over parseable instances with a 95% Wilson score
  interval (good at small n and at rates near 0 or 1, where FBI's categories of 50–150
  items often sit).
* Per ability and overall: the same rate with the 95% percentile bootstrap over the
  pooled instances, computed exactly (`bootstrap_interval`). Where every instance
  has the same outcome (0% or 100%) the bootstrap collapses to a
  point that reads as certainty; there the interval is Wilson's on the pooled count
  (``ci_method`` ``wilson-pooled``), which keeps its width: 18/18 gives [82%, 100%].
* Score-invariant groups report the retained rate the same way (higher is better).
* ``worst_case_rate`` counts unparseable instances as undetected (or, for
  score-invariant, as penalised): the rate if every unreadable verdict went wrong.
* ``paper_rate`` is the FBI paper's own convention (§5 and Appendix B–D, Tables 6–17):
  single-answer and reference-guided counts are divided by every instance of the group
  (an unparseable reply counts as detected: it is in the denominator, not the
  numerator), pairwise counts by the parseable pairs (as ``rate``). Score-invariant rows
  follow the same rule with retained edits as the numerator.
* ``authors_rate`` is what the FBI authors' released script computes
  (``scripts/analyze_results.py``, single-answer only): pairs minus detected minus half
  the unreadable calls, over the pairs, so a pair with one unreadable call counts as
  half undetected and one with two as neither (``--convention authors``). The script
  analyses no other paradigm: for pairwise and reference-guided strategies it is the
  paper's printed convention.
* Coverage: ``instances`` counts the group's instances in the run's dataset, ``judged``
  those with a usable judgment (``n`` those with any judgment). An instance without a
  judgment (its calls never made, or a log line unreadable) is ``missing``: it is in no
  rate, and the report says so.
* Every interval is a function of the counts alone: the same judgments give the same
  intervals whatever the order of the log.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from fbi.attack_texts import MASTER_KEY_PREFIX
from fbi.metrics._bootstrap import bootstrap_interval
from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._results import (
    GroupRate,
    JudgeStabilityRow,
    PairwiseBreakdown,
    ReferenceHistogram,
)
from fbi.records import Judgment
from fbi.taxonomy import SCORE_INVARIANT, Ability, get_category

Z_95 = 1.959963984540054


@lru_cache(maxsize=8192)  # a report asks for the same counts in many groups
def wilson_interval(hits: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval for hits/n (scipy's ``binomtest(...).proportion_ci(method=
    "wilson")``, as statsmodels' ``proportion_confint(method="wilson")``); None when n
    is 0. ``z``: the normal quantile of the two-sided level (1.96: 95%)."""
    if n == 0:
        return None
    from scipy.stats import binomtest, norm

    interval = binomtest(hits, n).proportion_ci(confidence_level=2 * norm.cdf(z) - 1,
                                               method="wilson")
    return max(0.0, float(interval.low)), min(1.0, float(interval.high))


def group_rate(outcomes: Sequence[InstanceOutcome], level: str, group: str,
               judge: str, strategy: str, paradigm: str) -> GroupRate:
    """The rate row of one group of outcomes: fbi's rate with its interval (Wilson per
    category, bootstrap above), the worst-case rate and the paper's rate (see Outcomes
    and rate conventions)."""
    counts = Counter(o.outcome for o in outcomes)
    score_invariant = level == "score-invariant"
    hits = counts["retained"] if score_invariant else counts["undetected"]
    misses = counts["penalised"] if score_invariant else counts["detected"]
    unparseable, missing = counts["unparseable"], counts["missing"]
    parseable = hits + misses
    answered = parseable + unparseable
    if level == "category":
        interval, method = wilson_interval(hits, parseable), "wilson"
    else:
        if 0 < hits < parseable:
            interval, method = bootstrap_interval(hits, parseable), "bootstrap"
        else:  # all alike: a degenerate bootstrap; Wilson keeps the interval honest
            interval, method = wilson_interval(hits, parseable), "wilson-pooled"
    # Worst case: unreadable verdicts count against the judge.
    worst_hits = hits if score_invariant else hits + unparseable
    worst = worst_hits / answered if answered else None
    # The paper's convention: pairwise over parseable pairs, the rest over all instances.
    paper_denominator = parseable if paradigm == "pairwise" else len(outcomes)
    paper = hits / paper_denominator if paper_denominator else None
    authors = paper
    if paradigm == "single":  # analyze_results.py: len/2 − changed − errors/2, over len/2
        unreadable_calls = sum(o.unreadable_calls for o in outcomes)
        authors = (answered - misses - unreadable_calls / 2) / answered if answered else None
    return GroupRate(
        judge=judge, strategy=strategy, paradigm=paradigm, level=level, group=group,
        instances=len(outcomes), judged=parseable, n=answered, detected=misses,
        undetected=hits, unparseable=unparseable, missing=missing,
        rate=hits / parseable if parseable else None,
        ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
        ci_method=method, worst_case_rate=worst,
        paper_rate=paper, authors_rate=authors,
    )


def aggregate(outcomes: Iterable[InstanceOutcome]) -> list[GroupRate]:
    """Rates per category, ability, overall and score-invariant, per judge × strategy."""
    by_run: dict[tuple[str, str, str], list[InstanceOutcome]] = defaultdict(list)
    for outcome in outcomes:
        if get_category(outcome.category).extra:
            continue
        by_run[(outcome.judge, outcome.strategy, outcome.paradigm)].append(outcome)
    rows: list[GroupRate] = []
    for (judge, strategy, paradigm), items in sorted(by_run.items()):
        errors = [o for o in items if not o.is_score_invariant]
        by_category: dict[str, list[InstanceOutcome]] = defaultdict(list)
        by_ability: dict[Ability, list[InstanceOutcome]] = defaultdict(list)
        for outcome in errors:
            by_category[outcome.category].append(outcome)
            by_ability[outcome.ability].append(outcome)
        for category, group in by_category.items():
            rows.append(group_rate(group, "category", category, judge, strategy, paradigm))
        for ability in Ability:
            if by_ability[ability]:
                rows.append(group_rate(by_ability[ability], "ability", ability.short, judge,
                                       strategy, paradigm))
        if errors:
            rows.append(group_rate(errors, "overall", "all", judge, strategy, paradigm))
        invariant = [o for o in items if o.is_score_invariant]
        if invariant:
            rows.append(group_rate(invariant, "score-invariant", "SI", judge, strategy,
                                   paradigm))
    return rows


def turn_rates(outcomes: Iterable[InstanceOutcome], turns: Mapping[str, int]
               ) -> list[GroupRate]:
    """Conversations: the rate per judge × strategy × turn (which user turn the judged
    answer replies to; ``turns``: instance id → turn), over the error categories as the
    overall rate; none when every instance is single-turn."""
    if not any(turn > 1 for turn in turns.values()):
        return []
    by_turn: dict[tuple[str, str, str, int], list[InstanceOutcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.is_score_invariant or get_category(outcome.category).extra:
            continue
        key = (outcome.judge, outcome.strategy, outcome.paradigm,
               turns.get(outcome.instance_id, 1))
        by_turn[key].append(outcome)
    return [group_rate(items, "turn", f"turn {turn}", judge, strategy, paradigm)
            for (judge, strategy, paradigm, turn), items in sorted(by_turn.items())]


def trail_rates(outcomes: Iterable[InstanceOutcome]) -> list[GroupRate]:
    """Agents' trajectories by TRAIL's taxonomy (Deshpande et al. 2025, §3;
    `fbi.taxonomy.TRAIL_CLASSES`): the undetected rate per judge × strategy × class, over
    the trajectory categories filed under it."""
    by_class: dict[tuple[str, str, str, str], list[InstanceOutcome]] = defaultdict(list)
    for outcome in outcomes:
        trail = get_category(outcome.category).trail
        if trail and not outcome.is_score_invariant:
            by_class[(outcome.judge, outcome.strategy, outcome.paradigm, trail)].append(
                outcome)
    return [group_rate(items, "category", trail, judge, strategy, paradigm).model_copy(
        update={"level": "trail"})
        for (judge, strategy, paradigm, trail), items in sorted(by_class.items())]


def master_key_rates(outcomes: Iterable[InstanceOutcome]) -> list[GroupRate]:
    """The master-key suite's rates (Zhao et al. 2025, §3), per judge × strategy × family
    (``master-key/FAMILY`` instances, ``prefixed`` among them): the share of answers that
    are only a key (or a wrong answer with a key before it) the judge did not grade below
    the reference — scored as high as the gold answer, given the top score against the
    reference, or preferred — the paper's false positives in the FBI protocol's terms,
    with Wilson intervals."""
    by_family: dict[tuple[str, str, str, str], list[InstanceOutcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.category.startswith(MASTER_KEY_PREFIX):
            key = (outcome.judge, outcome.strategy, outcome.paradigm,
                   outcome.category.removeprefix(MASTER_KEY_PREFIX))
            by_family[key].append(outcome)
    return [group_rate(items, "category", family, judge, strategy, paradigm).model_copy(
        update={"level": "master-key"})
        for (judge, strategy, paradigm, family), items in sorted(by_family.items())]


def _groups(category: str) -> tuple[str, ...]:
    """A category's own group, plus "all" for the 22 error categories (not score-invariant)."""
    return (category,) if category == SCORE_INVARIANT else (category, "all")




def pairwise_breakdowns(outcomes: Iterable[InstanceOutcome],
                        judgments: Iterable[Judgment]) -> list[PairwiseBreakdown]:
    """Per judge × pairwise strategy × group, the paper's pairwise classes over both orders (G,
    P, both good, both bad, inconsistent), the flip rate and the first-slot share with
    its Wilson interval."""
    pairs: dict[tuple[str, str, str], list[InstanceOutcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.paradigm == "pairwise" and not get_category(outcome.category).extra:
            for group in _groups(outcome.category):
                pairs[(outcome.judge, outcome.strategy, group)].append(outcome)
    slots: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    verdicts: dict[tuple[str, str, str], list[str | None]] = defaultdict(lambda: [None, None])
    for j in judgments:
        if j.paradigm != "pairwise" or j.status != "ok":
            continue
        for group in _groups(j.category):
            slots[(j.judge, j.strategy, group)][j.slot_verdict] += 1
        index = 0 if j.role == "gold-first" else 1
        verdicts[(j.judge, j.strategy, j.instance_id)][index] = j.verdict
    flips: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    categories = {(o.judge, o.strategy, o.instance_id): o.category
                  for items in pairs.values() for o in items}
    for key, (first, second) in verdicts.items():
        if first is None or second is None or key not in categories:
            continue
        for group in _groups(categories[key]):
            flips[(key[0], key[1], group)].append(int(first != second))
    rows = []
    for key, items in sorted(pairs.items()):
        classes = Counter(o.pairwise_class for o in items)
        slot_counts = slots[key]
        chosen = slot_counts["A"] + slot_counts["B"]
        interval = wilson_interval(slot_counts["A"], chosen)
        flip = flips.get(key, [])
        rows.append(PairwiseBreakdown(
            judge=key[0], strategy=key[1], group=key[2], G=classes["G"], P=classes["P"],
            both_good=classes["both-good"], both_bad=classes["both-bad"],
            inconsistent=classes["inconsistent"],
            unparseable=sum(o.outcome == "unparseable" for o in items),
            flip_rate=sum(flip) / len(flip) if flip else None,
            first_slot_share=slot_counts["A"] / chosen if chosen else None,
            slot_choices=chosen, first_slot_ci_low=interval[0] if interval else None,
            first_slot_ci_high=interval[1] if interval else None))
    return rows




def reference_histograms(outcomes: Iterable[InstanceOutcome]) -> list[ReferenceHistogram]:
    """Per judge × reference strategy × group, how many perturbed answers got the top score,
    top−1, top−2 or lower (paper Table 16)."""
    buckets: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for o in outcomes:
        if o.paradigm != "reference" or get_category(o.category).extra:
            continue
        if o.outcome == "unparseable" or o.perturbed_score is None or o.score_top is None:
            bucket = "unparseable"
        else:
            bucket = {0: "top", 1: "top_1", 2: "top_2"}.get(o.score_top - o.perturbed_score,
                                                            "lower")
        for group in _groups(o.category):
            buckets[(o.judge, o.strategy, group)][bucket] += 1
    return [ReferenceHistogram(judge=k[0], strategy=k[1], group=k[2], top=c["top"],
                               top_1=c["top_1"], top_2=c["top_2"], lower=c["lower"],
                               unparseable=c["unparseable"])
            for k, c in sorted(buckets.items())]


def judge_stability(judgments: list[Judgment]) -> list[JudgeStabilityRow]:
    """A judge's own stability, per judge × strategy.

    Single-answer strategies: Cohen's h between the judge's acceptance of gold answers
    and of score-invariant rewrites (accepted = a score at or above the middle of the
    range); a fair judge accepts both alike (h ≈ 0). Pairwise strategies: the
    position-swap test-retest, the share of pairs where the gold answer is chosen in both
    orders, against the share where it is chosen with gold shown first.
    """
    from fbi.metrics._qa import cohens_h, effect_size_label, retest_metrics

    rows: list[JudgeStabilityRow] = []
    by_run: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for j in judgments:
        if j.status == "ok":
            by_run[(j.judge, j.strategy)].append(j)
    for (judge, strategy), items in sorted(by_run.items()):
        paradigm = items[0].paradigm
        if paradigm == "single":
            gold = [_accepted(j) for j in items if j.role == "gold"]
            invariant = [_accepted(j) for j in items
                         if j.role == "perturbed" and j.category == SCORE_INVARIANT]
            if gold and invariant:
                p_gold, p_si = float(np.mean(gold)), float(np.mean(invariant))
                h = cohens_h(p_gold, p_si)
                rows.append(JudgeStabilityRow(
                    judge=judge, strategy=strategy, paradigm=paradigm, gold_accepted=p_gold,
                    si_accepted=p_si, n_gold=len(gold), n_si=len(invariant), cohens_h=h,
                    effect=effect_size_label(h)))
        elif paradigm == "pairwise":
            orders: dict[str, dict[str, bool]] = defaultdict(dict)
            for j in items:
                orders[j.instance_id][j.role] = j.verdict == "gold"
            both = [(o["gold-first"], o["perturbed-first"]) for o in orders.values()
                    if len(o) == 2]
            if both:
                first = np.array([a for a, _ in both])
                second = np.array([[b] for _, b in both])
                retest = retest_metrics(first, second)
                rows.append(JudgeStabilityRow(
                    judge=judge, strategy=strategy, paradigm=paradigm, pairs=len(both),
                    gold_chosen_gold_first=retest.accuracy,
                    gold_chosen_both_orders=retest.test_retest_accuracy,
                    percent_drop=retest.percent_drop))
    return rows


def _accepted(judgment: Judgment) -> bool:
    low, high = judgment.score_range or (0, 0)
    return judgment.score is not None and judgment.score >= (low + high) / 2
