"""Blind-spot reports from stored runs: summary.json, report.md, report.csv, report.html.

Everything here is computed from what a run folder holds (``run.json``,
``judgments.jsonl``, ``instances.jsonl`` and, if present, ``explanation_checks.jsonl``)
through `fbi.metrics._outcomes` and `fbi.metrics._rates`; no model is called. Several run
folders (other judges, other strategies) make one comparison report.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from fbi.errors import InputError
from fbi.findings import HuntResult
from fbi.metrics import (
    InstanceOutcome,
    aggregate,
    best_of_n,
    human_agreement,
    instance_outcomes,
    judge_stability,
    leaderboard,
    length_bias,
    manipulation_effects,
    master_key_rates,
    missing_outcomes,
    paired_comparisons,
    pairwise_breakdowns,
    ranking_stability,
    reference_histograms,
    repeatability,
    self_preference,
    step_localisation,
    trail_rates,
    turn_rates,
    weighted_rates,
)
from fbi.records import ExplanationCheck
from fbi.report._schema import (
    SUMMARY_SCHEMA_VERSION,
    BestOfN,
    Bias,
    CoverageRow,
    ExplanationCheckRow,
    RobustnessEntry,
    RunEntry,
    Summary,
)
from fbi.report._verdict import (
    named_pairs,
)
from fbi.runs import Run, label_runs
from fbi.taxonomy import (
    Ability,
    get_category,
)
from fbi.trust import HumanSource, TrustSettings, certificates, read_human_labels

ABILITY_COLUMNS = [a.short for a in (Ability.LONG_FORM, Ability.FACTUAL,
                                     Ability.INSTRUCTION_FOLLOWING, Ability.REASONING)]


CONVENTIONS = ("fbi", "paper", "authors")
#: The rate each convention's tables show (both are always in summary.json).
RATE_KEY = {"fbi": "rate", "paper": "paper_rate", "authors": "authors_rate"}


def coverage(runs: list[Run], outcomes: list[InstanceOutcome]) -> tuple[
        list[InstanceOutcome], list[CoverageRow]]:
    """Outcomes ``missing`` for instances of each run's dataset without a judgment, and
    one coverage row per run × strategy that lacks any (with the first call ids)."""
    missing_all: list[InstanceOutcome] = []
    rows: list[CoverageRow] = []
    for run in runs:
        strategies = sorted({(j.strategy, j.paradigm) for j in run.judgments})
        missing = missing_outcomes(outcomes, run.instances.values(), run.label, strategies)
        missing_all += missing
        by_strategy: dict[str, list[InstanceOutcome]] = defaultdict(list)
        for outcome in missing:
            by_strategy[outcome.strategy].append(outcome)
        for strategy, items in sorted(by_strategy.items()):
            roles = {"single": "gold", "pairwise": "gold-first", "reference": "perturbed",
                     "step": "perturbed"}
            rows.append(CoverageRow(
                folder=str(run.folder), label=run.label, strategy=strategy,
                instances=len(run.instances), missing=len(items),
                first_call_ids=[f"{o.instance_id}|{strategy}|{roles[o.paradigm]}"
                                for o in items[:3]]))
    return missing_all, rows


def _twins(instances: dict) -> dict[str, str]:
    """Each manipulated instance's twin: the id of the instance it was made from."""
    return {i: instance.provenance.original_id for i, instance in instances.items()
            if get_category(instance.category).family == "manipulation"}


def build_summary(runs: list[Run], robustness: list[RobustnessEntry] | None = None,
                  convention: str = "fbi", compare: tuple[str, ...] = (),
                  human: str | Path | HumanSource | None = None, trust: TrustSettings | None = None,
                  hunts: tuple[HuntResult, ...] = ()) -> Summary:
    """The machine-readable summary (docs/reference/report-files.md). ``compare``: pairs of
    ``LABEL:STRATEGY`` sides to test (`fbi.report._verdict.named_pairs`). ``human``: human
    labels (`fbi.report._human`), with which each judge gets a certificate at ``trust``'s
    target (`fbi.report._certificate`), ``hunts``' confirmed findings among its blind spots."""
    from fbi import __version__

    if convention not in CONVENTIONS:
        raise InputError(f"unknown convention '{convention}'. Fix: use one of "
                         f"{', '.join(CONVENTIONS)}")
    runs = label_runs(runs)
    judgments = [j for run in runs for j in run.judgments]
    named = named_pairs(compare, {(j.judge, j.strategy) for j in judgments})
    outcomes = instance_outcomes(judgments)
    missing, coverage_rows = coverage(runs, outcomes)
    instances = {i: instance for run in runs for i, instance in run.instances.items()}
    rates = aggregate(outcomes + missing) + turn_rates(
        outcomes + missing, {i: instance.turn for i, instance in instances.items()})
    labels, human_warnings = read_human_labels(human, instances) if human else ([], [])
    pairwise = pairwise_breakdowns(outcomes, judgments)
    accuracy, ties, bon_tests = best_of_n(outcomes + missing, judgments, instances)
    return Summary(
        convention=convention,  # type: ignore[arg-type]
        coverage=coverage_rows,
        robustness=robustness or [],
        judge_stability=judge_stability(judgments),
        schema_version=SUMMARY_SCHEMA_VERSION,
        fbi_version=__version__,
        generated_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        problems=[p for run in runs for p in run.problems] + human_warnings,
        runs=[RunEntry(folder=str(run.folder), label=run.label, judge=run.spec.model,
                       strategies=run.spec.prompts, dataset=run.spec.dataset,
                       protocol=run.spec.parameters.protocol or "fbi",
                       judgments=len(run.judgments)) for run in runs],
        rates=rates,
        comparisons=paired_comparisons(outcomes, named),
        ranking_stability=ranking_stability(outcomes),
        manipulation=manipulation_effects(outcomes, _twins(instances)),
        master_keys=master_key_rates(outcomes + missing), trail=trail_rates(outcomes + missing),
        steps=step_localisation(outcomes, instances),
        human_agreement=human_agreement(judgments, labels) if labels else None,
        leaderboard=leaderboard(rates, pairwise, judgments,
                                [j for run in runs for j in run.repeats]),
        repeatability=repeatability([*judgments, *(j for run in runs for j in run.repeats)]),
        weighted_scores=weighted_rates(judgments),
        bias=Bias(length=length_bias(outcomes, instances),
                  self_preference=self_preference(
                      outcomes, instances, {run.label: run.spec.model for run in runs})),
        pairwise=pairwise,
        reference=reference_histograms(outcomes),
        explanation_check=explanation_check_rows(outcomes,
                                                 [c for r in runs for c in r.checks]),
        display_names=_display_names(runs),
        best_of_n=BestOfN(accuracy=accuracy, ties=ties, comparisons=bon_tests),
        certificates=certificates(runs, labels, rates, trust or TrustSettings(), hunts)
        if labels else [],
    )


def _display_names(runs: list[Run]) -> dict[str, str]:
    return {name: meta.display_name or name for run in runs
            for name, meta in run.spec.prompts.items()}


def explanation_check_rows(outcomes: list[InstanceOutcome],
                           checks: list[ExplanationCheck]) -> list[ExplanationCheckRow]:
    """Per judge × strategy × category: undetected instances whose explanation named the
    error anyway ("detected in the explanation only", paper §5.3)."""
    if not checks:
        return []
    verdicts = {(c.judge, c.strategy, c.instance_id): c for c in checks}
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for o in outcomes:
        check = verdicts.get((o.judge, o.strategy, o.instance_id))
        if o.outcome != "undetected" or check is None:
            continue
        for group in (o.category, "all"):
            row = counts[(o.judge, o.strategy, group)]
            row[0] += 1
            row[1] += check.status == "ok" and bool(check.points_out_error)
            row[2] += check.status != "ok"
    return [ExplanationCheckRow(judge=k[0], strategy=k[1], group=k[2], undetected_checked=v[0],
                                detected_in_explanation_only=v[1], unparseable=v[2],
                                share=v[1] / (v[0] - v[2]) if v[0] > v[2] else None)
            for k, v in sorted(counts.items())]
