"""A judge's estimates corrected by human labels (PPI++ and the plug-in correction,
`_ppi`), with the labels-only estimate beside them."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from fbi.metrics import HumanLabel, judge_verdict, judgments_by_instance, wilson_interval
from fbi.runs import Run
from fbi.trust._calibration import human_majority
from fbi.trust._models import CorrectedEstimate
from fbi.trust._ppi import (
    Estimate,
    classical_mean,
    effective_labels,
    plug_in_correction,
    ppi_mean,
)


def corrected_estimates(run: Run, strategy: str, votes: dict[str, list],
                        scores: dict[tuple[str, str], list[float]]) -> list[CorrectedEstimate]:
    """The preference rate (and the perturbed answer's mean score, where people scored
    it) over all the run's items, by the judge alone, the people alone, PPI++ and the
    plug-in correction."""
    first = [j for j in run.judgments if j.strategy == strategy]
    roles_by_instance = {i: roles for (_, _, i), roles in judgments_by_instance(first).items()}
    verdicts = {i: judge_verdict(roles) for i, roles in roles_by_instance.items()}
    verdicts = {i: v for i, v in verdicts.items() if v}
    if not verdicts:
        return []
    humans = {i: human_majority(votes.get(i, [])) for i in verdicts}
    labelled = [i for i in verdicts if humans[i] is not None]
    unlabelled = [i for i in verdicts if humans[i] is None]
    estimates = [_estimate(run.label, strategy, "preference rate",
                           [float(humans[i] == "a") for i in labelled],
                           [float(verdicts[i] == "a") for i in labelled],
                           [float(verdicts[i] == "a") for i in unlabelled], binary=True)]
    people = {i: sum(v) / len(v) for (i, answer), v in scores.items()
              if answer == "perturbed" and v}
    judged = {i: roles["perturbed"].score for i, roles in roles_by_instance.items()
              if "perturbed" in roles and roles["perturbed"].status == "ok"
              and roles["perturbed"].score is not None}
    scored = [i for i in judged if i in people]
    if scored:
        estimates.append(_estimate(run.label, strategy, "mean score of the perturbed answer",
                                   [people[i] for i in scored], [judged[i] for i in scored],
                                   [judged[i] for i in judged if i not in people]))
    return estimates


def _share_estimate(values: list[float]) -> Estimate:
    if not values:
        return Estimate(value=None, note="no item")
    hits = round(sum(values))
    low, high = wilson_interval(hits, len(values))  # type: ignore[misc]
    return Estimate(value=hits / len(values), low=low, high=high, n=len(values))


def _estimate(judge: str, strategy: str, quantity: str, human: list[float],
              judge_labelled: list[float], judge_unlabelled: list[float],
              binary: bool = False) -> CorrectedEstimate:
    human_only = classical_mean(human)
    corrected, lam = ppi_mean(human, judge_labelled, judge_unlabelled)
    judge_all = [*judge_labelled, *judge_unlabelled]
    shown = [classical_mean(values) for values in (human, judge_all)]
    if binary:  # a share: Wilson's interval, honest at 0 and 1 where the normal one is not
        shown = [_share_estimate(values) for values in (human, judge_all)]
    ppi = corrected
    if corrected.value is not None and lam == 0:  # said, not left to look like a gain
        ppi = dataclasses.replace(corrected, note=(
            "λ = 0: the judge's labels get no weight, since over the labelled items they "
            "do not vary with the people's (e.g. every human label alike); this is the "
            "people's estimate alone"))
    row = CorrectedEstimate(
        judge=judge, strategy=strategy, quantity=quantity, n_labelled=len(human),
        n_unlabelled=len(judge_unlabelled), judge_only=shown[1],
        human_only=shown[0], ppi=ppi,
        ppi_lambda=lam if corrected.value is not None else None,
        effective_labels=effective_labels(human_only, corrected, len(human)))
    if binary and human:
        true = [f for y, f in zip(human, judge_labelled, strict=True) if y == 1]
        false = [f for y, f in zip(human, judge_labelled, strict=True) if y == 0]
        test = judge_unlabelled or judge_labelled
        if true and false:
            row.sensitivity, row.specificity = sum(true) / len(true), \
                1 - sum(false) / len(false)
            row.plug_in = plug_in_correction(
                sum(test) / len(test), row.specificity, row.sensitivity, len(test),
                len(false), len(true))
        else:
            row.plug_in = Estimate(value=None, note="needs labelled items of both kinds")
    return row


def scores_of(labels: Sequence[HumanLabel]) -> dict[tuple[str, str], list[float]]:
    """(instance, answer) → the people's scores of it."""
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    for label in labels:
        if label.score is not None:
            scores[(label.instance_id, label.answer)].append(label.score)
    return scores
