"""`fbi trust` and the certificate of `fbi report --human`: from judge runs and human
labels to a decision — when a judge's verdict can be taken without a person, what a
metric computed with the judge is worth, and how many labels would settle it. The
statistics are `_calibration` (fixed-sequence testing, cascades) and `_ppi` (PPI++, the
plug-in correction); runs become items in `_items`, estimates are corrected in
`_estimates`, the labels still needed are counted in `_plan`; this module makes each
judge's (and cascade's) result and `trust.json` (`_models`).

Labelled instances are split at random (seeded) into calibration and test: the
threshold is chosen on the calibration part; the test part checks it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from fbi.errors import InputError
from fbi.runs import Run, label_runs, load_run
from fbi.taxonomy import strategy_order
from fbi.trust._calibration import (
    TrustItem,
    assign,
    calibrate,
    cascade,
    human_majority,
)
from fbi.trust._estimates import corrected_estimates, scores_of
from fbi.trust._items import (
    confidence_kind,
    jury_items,
    run_items,
    split,
    votes_of,
)
from fbi.trust._labels import HumanSource, read_human_labels
from fbi.trust._models import (
    CascadeJudge,
    TrustReport,
    TrustResult,
)
from fbi.trust._plan import plan
from fbi.trust._settings import TrustSettings


def _cost_per_item(items: Sequence[TrustItem]) -> float | None:
    if not items or any(i.cost is None for i in items):
        return None
    return sum(i.cost for i in items) / len(items)  # type: ignore[misc]


def trust_result(judge: str, strategy: str, kind: str, items: Sequence[TrustItem],
                 settings: TrustSettings, calibration_ids: set[str], test_ids: set[str]
                 ) -> TrustResult:
    """Selective judging for one judge (or jury) under one strategy."""
    calibration_items = [i for i in items if i.key[0] in calibration_ids]
    found = calibrate(calibration_items, settings.target, settings.delta, settings.min_items,
                      settings.grid)
    test = [i for i in items if i.key[0] in test_ids and i.human is not None]
    result = TrustResult(
        judge=judge, strategy=strategy, confidence=kind,  # type: ignore[arg-type]
        target=settings.target, delta=settings.delta, certified=found.certified,
        threshold=found.threshold, coverage=None,
        agreement_lower_bound=found.agreement_lower_bound,
        n_calibration=found.n_calibration, n_test=len(test), test_agreement=None,
        test_coverage=None, failure=found.failure, steps=found.steps, grid=found.grid,
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
                     settings.min_items, settings.grid)
    taken = assign(judges, stages)
    by_judge = [{i.key: i for i in items} for _, items in judges]
    total = len(taken) or 1
    stage_rows = []
    for index, ((name, items), stage) in enumerate(zip(judges, stages, strict=True)):
        calibration = stage.calibration
        stage_rows.append(CascadeJudge(
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
        steps=stages[0].calibration.steps, grid=stages[0].calibration.grid, stages=stage_rows,
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


def _check_enough(results: list[TrustResult], kind: str, settings: TrustSettings,
                  human: object, labelled: int) -> None:
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


def trust_runs(runs: Sequence[Run], human: str | Path | HumanSource, settings: TrustSettings,
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


def trust(runs: Sequence[str | Path | Run], human: str | Path | HumanSource, *,
          settings: TrustSettings | None = None,
          cascade: Sequence[str | Path | Run] = ()) -> TrustReport:
    """When a judge can be used without review, with a guarantee (what ``fbi trust``
    does; reads stored runs only, no model call): the confidence threshold above which
    it agrees with the ``human`` labels at the target, the share it then judges alone,
    its estimates corrected by the labels, and how many more labels would settle it.
    ``runs``: folders (or loaded runs) of one judge, or several as a jury; ``cascade``:
    the judges of a cascade, cheapest first, in place of ``runs``."""
    check_judges(runs, cascade)  # (before any folder is read)

    def loaded(found: Sequence[str | Path | Run]) -> list[Run]:
        return [run if isinstance(run, Run) else load_run(run, full=False) for run in found]

    return trust_runs(loaded(runs), human, settings or TrustSettings(), loaded(cascade))
