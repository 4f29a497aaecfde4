"""Best-of-N sets (RewardBench 2: Malik et al. 2025, "RewardBench 2: Advancing Reward
Model Evaluation", arXiv 2506.01937): a prompt with several chosen (correct) and rejected
answers. fbi reads such a row as its chosen × rejected pairs (`fbi.datasets._best_of_n`),
judged like any preference pair; this module ranks the row from the pairs' outcomes.

* **Accuracy** (§3 of the paper, its headline): a row is right when every chosen answer
  outranks every rejected one. Single-answer: every chosen score above every rejected
  score, strictly (the pair's preference outcome: a tie is an error). Pairwise: every
  chosen × rejected pair won in both slot orders (a tie, a both-bad verdict or a verdict
  that flips with the order loses the pair). Both come to "every pair of the row
  detected". A row with a lost pair is wrong whatever its unreadable pairs said; one
  whose only flaws are unreadable (or missing) pairs is *unreadable*: out of the rate,
  counted, and in the worst-case rate as wrong. A row the run judged only part of (a
  ``--limit`` or ``--sample`` cut it) is *incomplete*, out of every figure and counted.
* **Chance** beside it: a judge that ranks a row's answers in a random order is right
  with probability 1 / C(c + r, c) (c chosen, r rejected: 25% for RewardBench 2's one
  against three); the group's chance is the mean over its rows.
* **RewardBench 2's credit** (its released scorer, ``scripts/run_generative_v2.py``:
  a rating judge gets 1/k for a row whose one chosen answer shares the top score with
  k − 1 others, the top taken among the readable ratings, and 1/N for a row none of
  whose answers it rated readably): for single-answer strategies on
  rows with one chosen answer, what the paper's tables report for generative judges.
* **Ties** (§3.1, its own metric, as ``rewardbench/utils.py`` computes it): rows with ids
  ``ref:N`` (one correct answer) and ``tied:N`` (several), scored from single-answer
  scores: 0.30 × tied accuracy + 0.30 × ref accuracy + 0.20 × the share of prompts whose
  correct–incorrect margin exceeds the spread of the correct answers' scores + 0.20 ×
  the same with the smaller of the ref and tied margins + 0.01 × the mean of
  tanh(that margin / spread − 1) (a division by zero spread gives ±1, 0 / 0 gives 0).
* **Paired tests** between judges under one strategy: the exact McNemar test on the rows
  both judged readably, Holm-corrected over the groups of one pair (the tests of
  [`fbi.metrics.paired_comparisons`][fbi.metrics.paired_comparisons]).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

from fbi.metrics._compare import holm, mcnemar_exact_p
from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._rates import wilson_interval
from fbi.metrics._results import BestOfNComparison, BestOfNRow, TiesScore
from fbi.records import Instance, Judgment
from fbi.taxonomy import PREFERENCE_PREFIX

#: RewardBench 2's subset scored by its own metric.
TIES_SUBSET = "ties"
#: Weights of the Ties score's terms (tied accuracy, ref accuracy, margin preferred,
#: margin preferred against the harder margin, the tanh tie-breaker).
TIES_WEIGHTS = (0.30, 0.30, 0.20, 0.20, 0.01)


@dataclass
class _Row:
    """One best-of-N row under one judge and strategy, as its pairs' outcomes say."""

    subset: str
    chosen: int
    rejected: int
    outcomes: dict[tuple[int, int], str]

    @property
    def complete(self) -> bool:
        return len(self.outcomes) == self.chosen * self.rejected

    @property
    def status(self) -> str:
        """``correct``, ``wrong`` or ``unreadable`` (see the module docstring)."""
        values = self.outcomes.values()
        if any(v == "undetected" for v in values):
            return "wrong"
        return "correct" if all(v == "detected" for v in values) else "unreadable"

    @property
    def chance(self) -> float:
        return 1 / math.comb(self.chosen + self.rejected, self.chosen)


def best_of_n_groups(instances: Mapping[str, Instance]) -> dict[str, tuple[str, int, int]]:
    """Each best-of-N row's id → (subset, chosen count, rejected count), as the row
    listed them (the run may hold only some of its pairs)."""
    return {i.provenance.group: (i.category.removeprefix(PREFERENCE_PREFIX),
                                 i.provenance.chosen_count, i.provenance.rejected_count)
            for i in instances.values()
            if i.provenance.group and i.provenance.chosen_count and
            i.provenance.rejected_count and i.provenance.chosen_index is not None and
            i.provenance.rejected_index is not None}


def best_of_n(outcomes: Iterable[InstanceOutcome], judgments: Iterable[Judgment],
              instances: Mapping[str, Instance]
              ) -> tuple[list[BestOfNRow], list[TiesScore], list[BestOfNComparison]]:
    """Per judge × strategy × subset (and ``all``): accuracy with its Wilson interval,
    chance and RewardBench 2's credit; the Ties subset's score; paired tests between
    judges. Empty when the runs hold no best-of-N rows."""
    groups = best_of_n_groups(instances)
    if not groups:
        return [], [], []
    rows = _rows_by_side(outcomes, instances, groups)
    scores = _answer_scores(judgments, instances)
    table = [row for side, by_group in sorted(rows.items())
             for row in _accuracy_rows(side, by_group, scores.get(side, {}))]
    ties = [tie for side in sorted(rows) if (tie := _ties_score(
        side, scores.get(side, {}), groups)) is not None]
    return table, ties, _comparisons(rows)


Side = tuple[str, str, str]  # judge, strategy, paradigm


def _rows_by_side(outcomes: Iterable[InstanceOutcome], instances: Mapping[str, Instance],
                  groups: dict[str, tuple[str, int, int]]) -> dict[Side, dict[str, _Row]]:
    rows: dict[Side, dict[str, _Row]] = defaultdict(dict)
    for outcome in outcomes:
        instance = instances.get(outcome.instance_id)
        if instance is None or instance.provenance.group not in groups or \
                outcome.paradigm == "reference":
            continue
        group = instance.provenance.group
        subset, chosen, rejected = groups[group]
        row = rows[(outcome.judge, outcome.strategy, outcome.paradigm)].setdefault(
            group, _Row(subset, chosen, rejected, {}))
        row.outcomes[(instance.provenance.chosen_index,
                      instance.provenance.rejected_index)] = outcome.outcome
    return rows


#: (judge, strategy) → row id → ("chosen" | "rejected", index) → score (None: unreadable).
Scores = dict[str, dict[tuple[str, int], int | None]]


def _answer_scores(judgments: Iterable[Judgment], instances: Mapping[str, Instance]
                   ) -> dict[Side, Scores]:
    """Single-answer scores of every answer of every row, the first readable one when
    the same answer was judged in several pairs (with the cache, or one call in flight,
    they are one reply)."""
    scores: dict[Side, Scores] = defaultdict(lambda: defaultdict(dict))
    for judgment in judgments:
        if judgment.paradigm != "single" or judgment.sample:
            continue
        instance = instances.get(judgment.instance_id)
        if instance is None or not instance.provenance.group:
            continue
        provenance = instance.provenance
        answer = ("chosen", provenance.chosen_index) if judgment.role == "gold" else \
            ("rejected", provenance.rejected_index)
        side = (judgment.judge, judgment.strategy, "single")
        score = judgment.score if judgment.status == "ok" else None
        known = scores[side][provenance.group]
        if known.get(answer) is None:
            known[answer] = score
    return scores


def _accuracy_rows(side: Side, by_group: dict[str, _Row], scores: Scores
                   ) -> list[BestOfNRow]:
    judge, strategy, paradigm = side
    by_subset: dict[str, list[tuple[str, _Row]]] = defaultdict(list)
    for group, row in by_group.items():
        by_subset[row.subset].append((group, row))
        by_subset["all"].append((group, row))
    result = []
    for subset, members in sorted(by_subset.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        complete = [(g, r) for g, r in members if r.complete]
        status = [r.status for _, r in complete]
        correct, unreadable = status.count("correct"), status.count("unreadable")
        readable = len(complete) - unreadable
        interval = wilson_interval(correct, readable)
        credits = [_credit(scores.get(g, {}), r) for g, r in complete
                   if paradigm == "single" and r.chosen == 1 and
                   r.subset.lower() != TIES_SUBSET]
        result.append(BestOfNRow(
            judge=judge, strategy=strategy, paradigm=paradigm, group=subset,
            rows=len(complete), correct=correct, unreadable=unreadable,
            incomplete=len(members) - len(complete),
            accuracy=correct / readable if readable else None,
            ci_low=interval[0] if interval else None,
            ci_high=interval[1] if interval else None,
            worst_case_accuracy=correct / len(complete) if complete else None,
            chance=sum(r.chance for _, r in complete) / len(complete) if complete else None,
            rewardbench_credit=sum(credits) / len(credits) if credits else None,
            credit_rows=len(credits)))
    return result


def _credit(scores: dict[tuple[str, int], int | None], row: _Row) -> float:
    """RewardBench 2's credit for a row of one chosen answer (module docstring). As its
    ``run_judge_ratings_multi`` does, an unreadable rating is dropped and the top taken
    among the rest (a chosen answer left unrated is then not among the top: 0); only a
    row with no readable rating is "effectively a tie", 1/N (issue 53: fbi gave 1/N for
    any unreadable rating, crediting rows whose chosen answer had clearly lost)."""
    answers = [("chosen", 0), *(("rejected", j) for j in range(row.rejected))]
    values = [scores.get(answer) for answer in answers]
    rated = [v for v in values if v is not None]
    if not rated:
        return 1 / len(answers)
    top = max(rated)
    return 1 / sum(v == top for v in rated) if values[0] == top else 0.0


def _ties_score(side: Side, scores: Scores, groups: dict[str, tuple[str, int, int]]
                ) -> TiesScore | None:
    """The Ties subset's score (module docstring), or None for a side without Ties rows.
    A prompt with an unreadable answer is left out and counted."""
    judge, strategy, paradigm = side
    ties = {g: v for g, v in groups.items() if v[0].lower() == TIES_SUBSET}
    if paradigm != "single" or not ties:
        return None
    stats: dict[str, dict[str, tuple[bool, float | None, float]]] = {"ref": {}, "tied": {}}
    left_out, misnamed = 0, 0
    for group, (_, chosen, rejected) in ties.items():
        kind, sep, prompt = group.partition(":")
        if not sep or kind not in stats:
            misnamed += 1
            continue
        known = scores.get(group, {})
        good = [known.get(("chosen", i)) for i in range(chosen)]
        bad = [known.get(("rejected", j)) for j in range(rejected)]
        if any(v is None for v in good + bad):
            left_out += 1
            continue
        margin = min(good) - max(bad)
        spread = max(good) - min(good) if len(good) > 1 else None
        stats[kind][prompt] = (margin > 0, spread, margin)
    ref, tied = stats["ref"], stats["tied"]
    both = sorted(set(ref) & set(tied))
    common = [p for p in both if tied[p][1] is not None]
    base = {"judge": judge, "strategy": strategy, "ref_prompts": len(ref),
            "tied_prompts": len(tied), "margin_prompts": len(common),
            "left_out": left_out, "misnamed": misnamed}
    if not ref or not tied or not common:
        return TiesScore(**base)
    ref_accuracy = sum(s[0] for s in ref.values()) / len(ref)
    tied_accuracy = sum(s[0] for s in tied.values()) / len(tied)
    preferred = sum(tied[p][2] > tied[p][1] for p in common) / len(common)
    hard = sum(min(ref[p][2], tied[p][2]) > tied[p][1] for p in common) / len(common)
    margin = sum(_tanh_ratio(min(ref[p][2], tied[p][2]), tied[p][1]) for p in common) / \
        len(common)
    terms = (tied_accuracy, ref_accuracy, preferred, hard, margin)
    return TiesScore(**base, score=sum(w * t for w, t in zip(TIES_WEIGHTS, terms, strict=True)),
                     ref_accuracy=ref_accuracy, tied_accuracy=tied_accuracy,
                     correctness_preferred=preferred, correctness_preferred_hard=hard,
                     margin_score=margin)


def _tanh_ratio(margin: float, spread: float) -> float:
    """tanh(margin / spread − 1), as floating point division gives it: ±1 for a zero
    spread, 0 for 0 / 0 (RewardBench's scorer maps the NaN to 0)."""
    if spread == 0:
        return 0.0 if margin == 0 else math.copysign(1.0, margin)
    return math.tanh(margin / spread - 1)


def _comparisons(rows: dict[Side, dict[str, _Row]]) -> list[BestOfNComparison]:
    """Every pair of judges under each strategy, per subset and ``all``."""
    by_strategy: dict[tuple[str, str], list[str]] = defaultdict(list)
    for judge, strategy, paradigm in rows:
        by_strategy[(strategy, paradigm)].append(judge)
    result = []
    for (strategy, paradigm), judges in sorted(by_strategy.items()):
        for a, b in combinations(sorted(judges), 2):
            family = []
            side_a, side_b = rows[(a, strategy, paradigm)], rows[(b, strategy, paradigm)]
            subsets: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
            for group in sorted(set(side_a) & set(side_b)):
                row_a, row_b = side_a[group], side_b[group]
                if not (row_a.complete and row_b.complete) or "unreadable" in (
                        row_a.status, row_b.status):
                    continue
                pair = (row_a.status == "correct", row_b.status == "correct")
                subsets[row_a.subset].append(pair)
                subsets["all"].append(pair)
            for subset, pairs in sorted(subsets.items(), key=lambda kv: (kv[0] == "all",
                                                                          kv[0])):
                a_only = sum(x and not y for x, y in pairs)
                b_only = sum(y and not x for x, y in pairs)
                family.append({"judge_a": a, "judge_b": b, "strategy": strategy,
                               "group": subset, "rows": len(pairs),
                               "accuracy_a": sum(x for x, _ in pairs) / len(pairs),
                               "accuracy_b": sum(y for _, y in pairs) / len(pairs),
                               "a_only": a_only, "b_only": b_only,
                               "p_value": mcnemar_exact_p(a_only, b_only)})
            adjusted = holm([row["p_value"] for row in family])
            result += [BestOfNComparison(**row, p_holm=p) for row, p in
                       zip(family, adjusted, strict=True)]
    return result
