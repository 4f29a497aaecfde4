"""`fbi trust` and the certificate of `fbi report --human`: from judge runs and human
labels to a decision — when a judge's verdict can be taken without a person, what a
metric computed with the judge is worth, and how many labels would settle it. The
statistics are `_calibration` (fixed-sequence testing, cascades) and `_ppi` (PPI++, the
plug-in correction); this module turns runs into their items and their results into
`trust.json` (`_models`).

An item is an instance under a strategy. Its judge verdict and confidence come from
``--confidence``: ``samples`` (a run with ``--samples K``: the majority verdict of the K
askings and the share giving it), ``logprob`` (``--logprobs``, single-answer strategies:
the most probable verdict under the two score distributions and its probability) or
``jury`` (several runs of different judges: their majority verdict and the share giving
it). Its human verdict is the strict majority of the people's verdicts on the instance.
Labelled instances are split at random (seeded) into calibration and test: the
threshold is chosen on the calibration part; the test part checks it.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import InputError
from fbi.metrics import (
    HumanLabel,
    judge_verdict,
    judgments_by_instance,
    wilson_interval,
)
from fbi.runs import Run, label_runs
from fbi.taxonomy import strategy_order
from fbi.trust._calibration import (
    MIN_ITEMS,
    Calibration,
    TrustItem,
    assign,
    binomial_upper,
    calibrate,
    cascade,
    human_majority,
    majority,
    verdict_probabilities,
)
from fbi.trust._labels import read_human_labels
from fbi.trust._models import (
    CorrectedEstimate,
    Interval,
    PlanRow,
    Stage,
    Step,
    TrustReport,
    TrustResult,
)
from fbi.trust._ppi import classical_mean, effective_labels, plug_in_correction, ppi_mean

CONFIDENCES = ("auto", "samples", "logprob", "jury")


@dataclass(frozen=True)
class TrustSettings:
    """What `fbi trust` is asked: one settings object, checked when made."""

    target: float = 0.8
    """The human agreement to guarantee."""
    delta: float = 0.1
    """The guarantee holds with probability at least 1 − delta."""
    confidence: str = "auto"
    """``samples``, ``logprob``, ``jury`` or ``auto`` (jury for several runs, else samples
    when the run has them, else logprob)."""
    test_share: float = 0.5
    """Share of the labelled instances held out to check the threshold."""
    seed: int = 0
    """Seeds the calibration / test split."""
    min_items: int = MIN_ITEMS
    """Thresholds with fewer calibration items at or above them are not tried."""
    width: float = 0.1
    """The planner's target interval width."""

    def __post_init__(self) -> None:
        for name in ("target", "delta"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise InputError(f"--{name} {value}: must lie strictly between 0 and 1 "
                                 f"(e.g. --target 0.8 --delta 0.1)")
        if not 0 <= self.test_share < 1:
            raise InputError(f"--test-share {self.test_share}: must be in [0, 1)")
        if self.confidence not in CONFIDENCES:
            raise InputError(f"--confidence {self.confidence}: one of "
                             f"{', '.join(CONFIDENCES)}")
        if self.min_items < 1 or not 0 < self.width < 1:
            raise InputError("--min-items must be at least 1 and --width in (0, 1)")


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


def _cost_per_item(items: Sequence[TrustItem]) -> float | None:
    if not items or any(i.cost is None for i in items):
        return None
    return sum(i.cost for i in items) / len(items)  # type: ignore[misc]


def _steps(calibration: Calibration) -> list[Step]:
    return [Step(threshold=s.threshold, n=s.n, errors=s.errors, risk_upper=s.risk_upper,
                 passed=s.passed) for s in calibration.steps]


def trust_result(judge: str, strategy: str, kind: str, items: Sequence[TrustItem],
                 settings: TrustSettings, calibration_ids: set[str], test_ids: set[str]
                 ) -> TrustResult:
    """Selective judging for one judge (or jury) under one strategy."""
    calibration_items = [i for i in items if i.key[0] in calibration_ids]
    found = calibrate(calibration_items, settings.target, settings.delta, settings.min_items)
    test = [i for i in items if i.key[0] in test_ids and i.human is not None]
    result = TrustResult(
        judge=judge, strategy=strategy, confidence=kind,  # type: ignore[arg-type]
        target=settings.target, delta=settings.delta, certified=found.certified,
        threshold=found.threshold, coverage=None,
        agreement_lower_bound=found.agreement_lower_bound,
        n_calibration=found.n_calibration, n_test=len(test), test_agreement=None,
        test_coverage=None, failure=found.failure, steps=_steps(found),
        cost_per_item=_cost_per_item(items))
    if found.certified and items:
        taken = [i for i in items if i.confidence >= found.threshold]
        result.coverage = len(taken) / len(items)
        tested = [i for i in test if i.confidence >= found.threshold]
        result.test_coverage = len(tested) / len(test) if test else None
        result.test_agreement = (sum(i.verdict == i.human for i in tested) / len(tested)
                                 if tested else None)
    result.sentence = sentence(result)
    return result


def cascade_result(judges: Sequence[tuple[str, Sequence[TrustItem]]], strategy: str,
                   kind: str, settings: TrustSettings, calibration_ids: set[str],
                   test_ids: set[str]) -> TrustResult:
    """A cascade of judges, cheapest first (`_calibration.cascade`)."""
    shared = set.intersection(*({i.key for i in items} for _, items in judges))
    judges = [(name, [i for i in items if i.key in shared]) for name, items in judges]
    calibration_judges = [(name, [i for i in items if i.key[0] in calibration_ids])
                          for name, items in judges]
    stages = cascade(calibration_judges, settings.target, settings.delta,
                     settings.min_items)
    taken = assign(judges, stages)
    by_judge = [{i.key: i for i in items} for _, items in judges]
    total = len(taken) or 1
    stage_rows = []
    for index, ((name, items), stage) in enumerate(zip(judges, stages, strict=True)):
        calibration = stage.calibration
        stage_rows.append(Stage(
            judge=name, certified=calibration.certified, threshold=calibration.threshold,
            agreement_lower_bound=calibration.agreement_lower_bound,
            share=sum(v == index for v in taken.values()) / total,
            cost_per_item=_cost_per_item(items)))
    certified = [s for s in stages if s.calibration.certified]
    test = [k for k in taken if k[0] in test_ids and by_judge[0][k].human is not None]
    tested = [k for k in test if taken[k] is not None]
    agree = sum(by_judge[taken[k]][k].verdict == by_judge[0][k].human  # type: ignore[index]
                for k in tested)
    consulted_cost = _cascade_cost(judges, taken)
    strongest = stage_rows[-1].cost_per_item
    result = TrustResult(
        judge="cascade: " + " → ".join(name for name, _ in judges), strategy=strategy,
        confidence=kind, target=settings.target, delta=settings.delta,  # type: ignore[arg-type]
        certified=bool(certified), threshold=stages[0].calibration.threshold,
        coverage=sum(v is not None for v in taken.values()) / total,
        agreement_lower_bound=min((s.calibration.agreement_lower_bound for s in certified),
                                  default=None),
        n_calibration=stages[0].calibration.n_calibration, n_test=len(test),
        test_agreement=agree / len(tested) if tested else None,
        test_coverage=len(tested) / len(test) if test else None,
        failure="" if certified else "no judge of the cascade certified a threshold: " +
        "; ".join(f"{name}: {s.calibration.failure}" for (name, _), s in
                  zip(judges, stages, strict=True)),
        steps=_steps(stages[0].calibration), stages=stage_rows,
        cost_per_item=consulted_cost, strongest_cost_per_item=strongest,
        cost_saved=(1 - consulted_cost / strongest) if consulted_cost is not None and
        strongest else None)
    result.sentence = sentence(result)
    return result


def _cascade_cost(judges, taken) -> float | None:
    """Mean cost per item when each item goes through the judges up to the one that
    takes it (all of them when people do)."""
    by_judge = [{i.key: i for i in items} for _, items in judges]
    total = 0.0
    for key, index in taken.items():
        last = len(judges) - 1 if index is None else index
        for consulted in range(last + 1):
            cost = by_judge[consulted][key].cost
            if cost is None:
                return None
            total += cost
    return total / len(taken) if taken else None


def sentence(result: TrustResult) -> str:
    """What a trust result allows, in words; no claim it does not support."""
    who = result.judge
    if not result.certified:
        return (f"{who} under {result.strategy} cannot be certified at "
                f"{100 * result.target:.0f}% agreement with people (δ = {result.delta:g}): "
                f"{result.failure}. Every item still needs a person.")
    coverage = f"{100 * result.coverage:.0f}%" if result.coverage is not None else "some"
    where = (f"at threshold {result.threshold:.2f}, " if not result.stages else
             "escalating from judge to judge at their thresholds, ")
    saved = (f" It costs {100 * result.cost_saved:.0f}% less than the strongest judge "
             "alone." if result.cost_saved is not None else "")
    return (f"Under {result.strategy}, {where}{who} may be used without review on "
            f"{coverage} of items with ≥ {100 * result.target:.0f}% agreement with people "
            f"(δ = {result.delta:g}); the rest go to people.{saved}")


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


def _interval(estimate) -> Interval:
    return Interval(value=estimate.value, low=estimate.low, high=estimate.high,
                    n=estimate.n, note=estimate.note)


def _share_interval(values: list[float]) -> Interval:
    if not values:
        return Interval(value=None, note="no item")
    hits = round(sum(values))
    low, high = wilson_interval(hits, len(values))  # type: ignore[misc]
    return Interval(value=hits / len(values), low=low, high=high, n=len(values))


def _estimate(judge: str, strategy: str, quantity: str, human: list[float],
              judge_labelled: list[float], judge_unlabelled: list[float],
              binary: bool = False) -> CorrectedEstimate:
    human_only = classical_mean(human)
    corrected, lam = ppi_mean(human, judge_labelled, judge_unlabelled)
    judge_all = [*judge_labelled, *judge_unlabelled]
    shown = [_interval(classical_mean(values)) for values in (human, judge_all)]
    if binary:  # a share: Wilson's interval, honest at 0 and 1 where the normal one is not
        shown = [_share_interval(values) for values in (human, judge_all)]
    ppi = _interval(corrected)
    if corrected.value is not None and lam == 0:  # said, not left to look like a gain
        ppi.note = ("λ = 0: the judge's labels get no weight, since over the labelled "
                    "items they do not vary with the people's (e.g. every human label "
                    "alike); this is the people's estimate alone")
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
            row.plug_in = _interval(plug_in_correction(
                sum(test) / len(test), row.specificity, row.sensitivity, len(test),
                len(false), len(true)))
        else:
            row.plug_in = Interval(value=None, note="needs labelled items of both kinds")
    return row


def plan(result: TrustResult, items: Sequence[TrustItem], settings: TrustSettings,
         categories: dict[str, str]) -> list[PlanRow]:
    """How many more labels: per category, for the agreement interval to reach the
    target width (Wilson, at the category's current agreement); per confidence band
    (the items at or above each quartile of confidence), to certify the target if the
    band's disagreement rate holds."""
    rows = []
    labelled = [i for i in items if i.human is not None]
    by_category: dict[str, list[TrustItem]] = defaultdict(list)
    for item in labelled:
        by_category[categories.get(item.key[0], "?")].append(item)
    goal = f"agreement interval ≤ {settings.width:g} wide ({result.judge}, {result.strategy})"
    for category, members in sorted(by_category.items()):
        agree = sum(i.verdict == i.human for i in members)
        needed = _labels_for_width(agree / len(members), settings.width)
        rows.append(PlanRow(goal=goal, where=f"category {category}", labelled=len(members),
                            needed=needed, more=max(0, needed - len(members))))
    confidences = sorted(i.confidence for i in labelled)
    bands = sorted({confidences[min(len(confidences) - 1, int(q * len(confidences)))]
                    for q in (0.75, 0.5, 0.25)} if labelled else set(), reverse=True)
    for threshold in bands:
        band = [i for i in labelled if i.confidence >= threshold]
        rate = sum(i.verdict != i.human for i in band) / len(band)
        needed = _labels_to_certify(rate, settings.target, settings.delta)
        rows.append(PlanRow(
            goal=f"certify {100 * settings.target:.0f}% agreement at δ = "
                 f"{settings.delta:g} ({result.judge}, {result.strategy})",
            where=f"confidence ≥ {threshold:.2f} ({100 * len(band) / len(labelled):.0f}% "
                  f"of the labelled items, {100 * rate:.0f}% disagreement)",
            labelled=len(band), needed=needed,
            more=None if needed is None else max(0, needed - len(band))))
    return rows


def _labels_for_width(agreement: float, width: float) -> int:
    """The smallest n whose Wilson interval at this agreement is at most ``width`` wide."""
    n = 1
    while n < 1_000_000:
        low, high = wilson_interval(round(agreement * n), n) or (0.0, 1.0)
        if high - low <= width:
            return n
        n = max(n + 1, int(n * 1.2))
    return n


def _labels_to_certify(rate: float, target: float, delta: float) -> int | None:
    """The smallest n whose exact bound at this disagreement rate certifies the target;
    None when the rate itself is above 1 − target."""
    alpha = 1 - target
    if rate >= alpha:
        return None
    low, high = 1, 1
    while binomial_upper(math.floor(rate * high), high, delta) > alpha:
        low, high = high, high * 2
        if high > 10_000_000:
            return None
    while low < high:
        middle = (low + high) // 2
        if binomial_upper(math.floor(rate * middle), middle, delta) <= alpha:
            high = middle
        else:
            low = middle + 1
    return high


def _strategy_result(runs: Sequence[Run], cascade_runs: Sequence[Run], strategy: str,
                     kind: str, votes: dict[str, list], settings: TrustSettings,
                     split_ids: tuple[set[str], set[str]]
                     ) -> tuple[TrustResult | None, list[TrustItem], str]:
    """One strategy's result (one judge, a jury or a cascade), its items, or why none."""
    if cascade_runs:
        stage_items = [(run.label, run_items(run, strategy, kind, votes))
                       for run in cascade_runs]
        if any(not items for _, items in stage_items):
            return None, [], (f"{strategy}: some judge of the cascade has no {kind} "
                              "confidence under it; left out")
        return cascade_result(stage_items, strategy, kind, settings, *split_ids), [], ""
    if kind == "jury":
        items = jury_items(runs, strategy, votes)
        name = "jury: " + ", ".join(run.label for run in runs)
    else:
        items = run_items(runs[0], strategy, kind, votes)
        name = runs[0].label
    if not items:
        return None, [], (f"{strategy}: no {kind} confidence under it (a pairwise or "
                          "reference-guided strategy has no score distributions); left out")
    return trust_result(name, strategy, kind, items, settings, *split_ids), items, ""


def scores_of(labels: Sequence[HumanLabel]) -> dict[tuple[str, str], list[float]]:
    """(instance, answer) → the people's scores of it."""
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    for label in labels:
        if label.score is not None:
            scores[(label.instance_id, label.answer)].append(label.score)
    return scores


def _check_enough(results: list[TrustResult], kind: str, settings: TrustSettings,
                  human: str | Path, labelled: int) -> None:
    """Refuse what cannot certify anything: no strategy with the signal, or fewer
    calibration labels than --min-items under every strategy."""
    if not results:
        raise InputError("no strategy of these runs has the confidence signal "
                         f"'{kind}'. Fix: see `fbi trust --help` for the signals")
    if all(r.n_calibration < settings.min_items for r in results):
        wanted = math.ceil(settings.min_items / (1 - settings.test_share))
        raise InputError(
            f"{human}: too few labels — {max(r.n_calibration for r in results)} labelled "
            f"instance(s) of these runs calibrate (with --test-share "
            f"{settings.test_share:g}), fewer than --min-items {settings.min_items}, so "
            f"nothing can be certified. Fix: label at least {max(1, wanted - labelled)} "
            "more instances, or lower --min-items or --test-share")


def check_judges(runs: Sequence[object], cascade_runs: Sequence[object]) -> None:
    """One judge, a jury (several ``runs``) or a cascade (two or more ``cascade_runs``,
    cheapest first) — never both, never none: what `fbi trust` and its Python callers are
    refused alike."""
    if not runs and not cascade_runs:
        raise InputError("which runs? Give RUN (one judge), RUN1 RUN2 … (a jury) or "
                         "--judge RUN repeated (a cascade, cheapest first)")
    if runs and cascade_runs:
        raise InputError("give either runs (one judge or a jury) or --judge runs (a "
                         "cascade), not both")
    if len(cascade_runs) == 1:
        raise InputError("a cascade needs at least two --judge runs, cheapest first")


def trust_runs(runs: Sequence[Run], human: str | Path, settings: TrustSettings,
               cascade_runs: Sequence[Run] = ()) -> TrustReport:
    """`fbi trust`: selective judging, corrected estimates and the planner (see the
    module docstring). ``runs``: one judge, or several as a jury; ``cascade_runs``: the
    judges of a cascade, cheapest first."""
    from fbi import __version__

    check_judges(runs, cascade_runs)
    named = label_runs([*runs, *cascade_runs])  # distinct labels for the same model
    runs, cascade_runs = named[:len(runs)], named[len(runs):]
    every = [*runs, *cascade_runs]
    instances = {i: inst for run in every for i, inst in run.instances.items()}
    labels, notes = read_human_labels(human, instances)
    votes = votes_of(labels)
    if not votes:
        raise InputError(f"{human}: no verdict labels (a, b, tie) of the runs' instances. "
                         "Fix: label instances with a verdict column")
    scores = scores_of(labels)
    labelled_ids = [i for i, v in votes.items() if human_majority(v) is not None]
    calibration_ids, test_ids = split(labelled_ids, settings.test_share, settings.seed)
    categories = {i: inst.category for i, inst in instances.items()}
    judges = list(cascade_runs) or list(runs)
    kind = confidence_kind(judges if cascade_runs else runs,
                           "samples" if cascade_runs and settings.confidence in
                           ("auto", "jury") else settings.confidence)
    strategies = strategy_order(set.intersection(
        *({j.strategy for j in run.judgments} for run in judges)))
    results, plan_rows = [], []
    for strategy in strategies:
        result, items, note = _strategy_result(runs, cascade_runs, strategy, kind, votes,
                                               settings, (calibration_ids, test_ids))
        if result is None:
            notes.append(note)
            continue
        results.append(result)
        if not cascade_runs:
            plan_rows += plan(result, items, settings, categories)
    _check_enough(results, kind, settings, human, len(labelled_ids))
    estimates = [e for run in judges for s in strategies
                 for e in corrected_estimates(run, s, votes, scores)]
    share = f"{100 * (1 - settings.test_share):.0f}%"
    return TrustReport(
        fbi_version=__version__, human=str(human),
        split=(f"{len(labelled_ids)} labelled instances: {len(calibration_ids)} ({share}) "
               f"calibrate the threshold, {len(test_ids)} are held out to check it "
               f"(random, seed {settings.seed})"),
        results=results, estimates=estimates, plan=plan_rows, notes=notes)
