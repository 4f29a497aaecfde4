"""Runs made into trust items (an item is an instance under a strategy): the judge's
verdict and confidence from ``--confidence`` (``samples``: the majority of K askings and
the share giving it; ``logprob``, single-answer strategies: the most probable verdict
under the two score distributions and its probability; ``jury``: several runs of
different judges, their majority verdict and the share giving it), the people's verdict
beside it (the strict majority of their verdicts on the instance), and the seeded
calibration / test split of the labelled instances."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from fbi.errors import InputError
from fbi.metrics import HumanLabel, judge_verdict, judgments_by_instance
from fbi.runs import Run
from fbi.trust._calibration import (
    TrustItem,
    human_majority,
    majority,
    verdict_probabilities,
)


def votes_of(labels: Sequence[HumanLabel]) -> dict[str, list]:
    """Instance → the people's verdicts on it."""
    votes: dict[str, list] = defaultdict(list)
    for label in labels:
        if label.verdict is not None:
            votes[label.instance_id].append(label.verdict)
    return votes


def confidence_kind(runs: Sequence[Run], asked: str) -> str:
    """The confidence signal to use, or an `InputError` saying how to get one."""
    has_samples = all(run.repeats for run in runs)
    if asked == "auto":
        asked = "jury" if len(runs) > 1 else "samples" if has_samples else "logprob"
    if asked == "jury" and len(runs) < 2:
        raise InputError("--confidence jury needs several runs of different judges over "
                         "the same instances: fbi trust RUN1 RUN2 RUN3 …")
    if asked == "samples" and not has_samples:
        raise InputError("no confidence signal: --confidence samples needs runs made with "
                         "`fbi evaluate --samples K` (K ≥ 2); or use --logprobs runs, or "
                         "several judges (jury)")
    if asked == "logprob" and not any(j.score_probabilities for run in runs
                                      for j in run.judgments):
        raise InputError("no confidence signal: these runs hold no log-probabilities. Fix: "
                         "judge with `fbi evaluate --samples K` (K ≥ 2) or `--logprobs` "
                         "(single-answer strategies), or give several judges' runs (jury)")
    return asked


def _call_costs(run: Run) -> dict[tuple[str, str], float | None]:
    costs: dict[tuple[str, str], float | None] = defaultdict(float)
    for judgment in [*run.judgments, *run.repeats]:
        key = (judgment.instance_id, judgment.strategy)
        if judgment.cost is None or costs[key] is None:
            costs[key] = None
        else:
            costs[key] += judgment.cost  # type: ignore[operator]
    return costs


def run_items(run: Run, strategy: str, kind: str, votes: dict[str, list]
              ) -> list[TrustItem]:
    """One run's items under ``strategy`` with ``kind``'s confidence (see the module
    docstring); instances without a verdict (unreadable, reference-guided) left out."""
    costs = _call_costs(run)
    mine = [j for j in [*run.judgments, *run.repeats] if j.strategy == strategy]
    items = []
    if kind == "samples":
        by_sample: dict[str, dict[int, dict]] = defaultdict(lambda: defaultdict(dict))
        for judgment in mine:
            by_sample[judgment.instance_id][judgment.sample][judgment.role] = judgment
        for instance_id, samples in by_sample.items():
            verdicts = [v for v in (judge_verdict(roles) for roles in samples.values()) if v]
            found = majority(verdicts) if len(verdicts) >= 2 else None
            if found:
                items.append(_item(instance_id, strategy, *found, votes, costs))
    else:  # logprob
        for (_, _, instance_id), roles in judgments_by_instance(
                [j for j in mine if j.sample == 0]).items():
            gold, perturbed = roles.get("gold"), roles.get("perturbed")
            if gold is None or perturbed is None or gold.status != "ok" or \
                    perturbed.status != "ok" or not gold.score_probabilities or \
                    not perturbed.score_probabilities:
                continue
            probabilities = verdict_probabilities(gold.score_probabilities,
                                                  perturbed.score_probabilities)
            verdict = max(probabilities, key=lambda v: probabilities[v])  # type: ignore[arg-type]
            items.append(_item(instance_id, strategy, verdict, probabilities[verdict],
                               votes, costs))
    return items


def jury_items(runs: Sequence[Run], strategy: str, votes: dict[str, list]
               ) -> list[TrustItem]:
    """Items of several judges together: their majority verdict and the share giving
    it, over the instances every judge gave a verdict on."""
    per_run = []
    for run in runs:
        verdicts = {}
        for (_, _, instance_id), roles in judgments_by_instance(
                [j for j in run.judgments if j.strategy == strategy]).items():
            verdict = judge_verdict(roles)
            if verdict:
                verdicts[instance_id] = verdict
        per_run.append(verdicts)
    shared = set.intersection(*(set(v) for v in per_run)) if per_run else set()
    costs = [_call_costs(run) for run in runs]
    items = []
    for instance_id in sorted(shared):
        verdict, share = majority([v[instance_id] for v in per_run])  # type: ignore[misc]
        parts = [c.get((instance_id, strategy)) for c in costs]
        cost = None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]
        items.append(TrustItem((instance_id, strategy), verdict, share,
                               human_majority(votes.get(instance_id, [])), cost))
    return items


def _item(instance_id, strategy, verdict, confidence, votes, costs) -> TrustItem:
    return TrustItem((instance_id, strategy), verdict, float(confidence),
                     human_majority(votes.get(instance_id, [])),
                     costs.get((instance_id, strategy)))


def split(instance_ids: Sequence[str], test_share: float, seed: int
          ) -> tuple[set[str], set[str]]:
    """Labelled instances into calibration and test, at random (seeded)."""
    ordered = sorted(instance_ids)
    random.Random(seed).shuffle(ordered)
    cut = len(ordered) - round(len(ordered) * test_share)
    return set(ordered[:cut]), set(ordered[cut:])


def one_sided(votes: dict[str, list], where: str) -> str | None:
    """One sentence when every labelled instance's human verdict is the same (on
    FBI-layout data almost every label is "a"): what the labels then cannot show, and
    what to label; None otherwise."""
    verdicts = {v for v in (human_majority(votes[i]) for i in votes) if v is not None}
    if len(verdicts) != 1:
        return None
    (verdict,) = verdicts
    return (f"{where}: every labelled instance's human verdict is {verdict!r}, so the "
            "labels can only say how often the judge agrees with that one verdict: the "
            "plug-in correction needs labels of both kinds, and PPI gives the judge no "
            "weight when the people never differ. Fix: label instances the people judge "
            "otherwise too (e.g. score-invariant rewrites, where a tie is right, or the "
            "perturbed answers that are not worse)")


def one_sided_labels(labels: Sequence[HumanLabel], where: str) -> str | None:
    """`one_sided` of labels as read (the report's certificate)."""
    return one_sided(votes_of(labels), where) if labels else None
