"""Blind-spot reports from stored runs: summary.json, report.md, report.csv, report.html.

Everything here is computed from what a run folder holds (``run.json``,
``judgments.jsonl``, ``instances.jsonl`` and, if present, ``explanation_checks.jsonl``)
through :mod:`fbi.metrics._outcomes` and :mod:`fbi.metrics._rates`; no model is called. Several run
folders (other judges, other strategies) make one comparison report.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections import defaultdict
from pathlib import Path

from fbi.errors import InputError
from fbi.escaping import csv_cell
from fbi.escaping import markdown_text as md
from fbi.metrics import (
    BandRate,
    InstanceOutcome,
    WeightedRow,
    aggregate,
    human_agreement,
    instance_outcomes,
    judge_stability,
    leaderboard,
    length_bias,
    manipulation_effects,
    missing_outcomes,
    paired_comparisons,
    pairwise_breakdowns,
    ranking_stability,
    reference_histograms,
    repeatability,
    self_preference,
    weighted_rates,
)
from fbi.records import ExplanationCheck
from fbi.report._cells import markdown_table, percent, plain
from fbi.report._human import HUMAN_NOTE, human_tables, read_human_labels
from fbi.report._labels import label_runs
from fbi.report._manipulation import MANIPULATION_NOTE, manipulation_table
from fbi.report._ranking import RANKING_NOTE, ranking_table
from fbi.report._robustness import robustness_markdown
from fbi.report._schema import (
    SUMMARY_SCHEMA_VERSION,
    Bias,
    CoverageRow,
    ExplanationCheckRow,
    RateRow,
    RobustnessEntry,
    RunEntry,
    Summary,
)
from fbi.report._verdict import (
    DIFFERS_MARK,
    VERDICT_LEGEND,
    named_pairs,
    verdict_sentences,
    verdict_table,
)
from fbi.runs import Run
from fbi.taxonomy import (
    Ability,
    category_order,
    get_category,
    strategy_order,
)

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
            roles = {"single": "gold", "pairwise": "gold-first", "reference": "perturbed"}
            rows.append(CoverageRow(
                folder=str(run.folder), label=run.label, strategy=strategy,
                instances=len(run.instances), missing=len(items),
                first_call_ids=[f"{o.instance_id}|{strategy}|{roles[o.paradigm]}"
                                for o in items[:3]]))
    return missing_all, rows


def build_summary(runs: list[Run], robustness: list[RobustnessEntry] | None = None,
                  convention: str = "fbi", compare: tuple[str, ...] = (),
                  human: str | Path | None = None) -> Summary:
    """The machine-readable summary (docs/reference/report-files.md). ``compare``: pairs of
    ``LABEL:STRATEGY`` sides to test beside every pair of judges (``fbi report
    --compare``; see :func:`fbi.report._verdict.named_pairs`). ``human``: a file of
    human labels (``fbi report --human``; see :mod:`fbi.report._human`)."""
    from fbi import __version__

    if convention not in CONVENTIONS:
        raise InputError(f"unknown convention '{convention}'. Fix: use one of "
                         f"{', '.join(CONVENTIONS)}")
    runs = label_runs(runs)
    judgments = [j for run in runs for j in run.judgments]
    named = named_pairs(compare, {(j.judge, j.strategy) for j in judgments})
    outcomes = instance_outcomes(judgments)
    missing, coverage_rows = coverage(runs, outcomes)
    rates = aggregate(outcomes + missing)
    instances = {i: instance for run in runs for i, instance in run.instances.items()}
    labels, human_warnings = read_human_labels(human, instances) if human else ([], [])
    pairwise = pairwise_breakdowns(outcomes, judgments)
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
                       strategies=run.spec.strategies, dataset=run.spec.dataset,
                       protocol=run.spec.parameters.get("protocol") or "fbi",
                       judgments=len(run.judgments)) for run in runs],
        rates=rates,
        comparisons=paired_comparisons(outcomes, named),
        ranking_stability=ranking_stability(outcomes),
        manipulation=manipulation_effects(outcomes, {
            i: instance.provenance.original_id for i, instance in instances.items()
            if get_category(instance.category).family == "manipulation"}),
        human_agreement=human_agreement(judgments, labels) if labels else None,
        leaderboard=leaderboard(rates, pairwise, judgments),
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
    )


def _display_names(runs: list[Run]) -> dict[str, str]:
    return {name: meta.get("display_name", name) for run in runs
            for name, meta in run.spec.strategies.items()}


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


# ------------------------------------------------------------------ tables


def _interval(row: RateRow) -> str:
    if row.ci_low is None:
        return ""
    return f" [{100 * row.ci_low:.0f}–{100 * row.ci_high:.0f}]"


def _cell(summary: Summary, row: RateRow, worst_beside: bool = True) -> str:
    """A rate as the summary's convention shows it: fbi's with its interval, or the
    paper's bare, as the paper prints it. Where unparseable verdicts make the worst case
    differ, it stands beside fbi's rate (issue 38: no unreadable reply lowers a rate
    unannounced), unless the table has a worst-case column of its own."""
    if summary.convention != "fbi":
        return percent(getattr(row, RATE_KEY[summary.convention]))
    worst = ""
    if worst_beside and row.unparseable and row.worst_case_rate is not None and \
            row.worst_case_rate != row.rate:
        worst = f" (worst {percent(row.worst_case_rate)})"
    return percent(row.rate) + _interval(row) + worst


def ability_columns(summary: Summary) -> list[str]:
    """The ability columns of the rate tables: the paper's LF/F/IF/R and SI when the runs
    hold FBI instances, and Pref when they hold preference pairs (issue 24: beside them,
    never pooled with them)."""
    present = {r.group for r in summary.rates if r.level in ("ability",
                                                                      "score-invariant")}
    fbi = [*ABILITY_COLUMNS, "SI"] if present - {PREFERENCE} or not present else []
    return fbi + ([PREFERENCE] if PREFERENCE in present else [])


#: The column of preference pairs, and what its rate is.
PREFERENCE = Ability.PREFERENCE.short
PREFERENCE_NOTE = ("Pref: the pairs of a preference set (chosen plays gold, rejected "
                   "perturbed); its rate is the judge's error rate, 1 − accuracy: how often "
                   "it did not rank the chosen answer above the rejected one.")


def _heading(column: str) -> str:
    return "SI retained" if column == "SI" else column


def table_3(summary: Summary, judge: str) -> tuple[list[str], list[list[str]]]:
    """Paper Table 3, for one judge: strategies × LF/F/IF/R (% undetected) and SI
    (% retained)."""
    cells: dict[str, dict[str, str]] = defaultdict(dict)
    for row in summary.rates:
        if row.judge == judge and row.level in ("ability", "score-invariant"):
            cells[row.strategy][row.group] = _cell(summary, row)
    columns = ability_columns(summary)
    header = ["strategy", *map(_heading, columns)]
    names = summary.display_names
    return header, [[names.get(s, s), *(cells[s].get(c, "–") for c in columns)]
                    for s in strategy_order(cells)]


def table_4(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Paper Table 4: judges × strategies, with LF/F/IF/R (% undetected) and SI
    (% retained) — rows grouped by strategy, as the paper lays it out. `` †`` marks a
    rate that differs from the first judge's (by name) on the same instances: exact
    McNemar, Holm-adjusted p < 0.05 (``summary.comparisons``)."""
    cells: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    reference = min((r.judge for r in summary.rates), default=None)
    differs = {(c.judge_b, c.strategy, c.group) for c in summary.comparisons
               if c.significant and c.judge_a == reference and c.level == "ability"
               and not c.named}
    for row in summary.rates:
        if row.level in ("ability", "score-invariant"):
            marker = f" {DIFFERS_MARK}" if (row.judge, row.strategy, row.group) \
                in differs else ""
            cells[(row.strategy, row.judge)][row.group] = _cell(summary, row) + marker
    names = summary.display_names
    order = strategy_order({strategy for strategy, _ in cells})
    keys = sorted(cells, key=lambda k: (order.index(k[0]), k[1]))
    columns = ability_columns(summary)
    return (["strategy", "judge", *map(_heading, columns)],
            [[names.get(s, s), judge, *(cells[(s, judge)].get(c, "–") for c in columns)]
             for s, judge in keys])


def pooled_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """fbi's own table (not in the paper): judges × strategies, % undetected over all 22
    categories pooled."""
    cells: dict[str, dict[str, str]] = defaultdict(dict)
    for row in summary.rates:
        if row.level == "overall":
            cells[row.judge][row.strategy] = _cell(summary, row)
    strategies = strategy_order({s for judge in cells.values() for s in judge})
    names = summary.display_names
    return (["judge", *(names.get(s, s) for s in strategies)],
            [[judge, *(cells[judge].get(s, "–") for s in strategies)]
             for judge in sorted(cells)])


def leaderboard_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Judge × strategy pairs ranked by the overall undetected rate (lower is better)."""
    names = summary.display_names

    def money(value):
        return "–" if value is None else f"${value:.2f}"

    def seconds(value):
        return "–" if value is None else f"{value:,.0f}"

    rows = []
    for row in summary.leaderboard:
        interval = "" if row.ci_low is None else \
            f" [{100 * row.ci_low:.0f}–{100 * row.ci_high:.0f}]"
        rows.append([str(row.rank or "–"), row.judge,
                     names.get(row.strategy, row.strategy),
                     percent(row.rate) + (interval if row.rate is not None else ""),
                     *(percent(getattr(row, c if c != "SI" else "SI_retained"))
                       for c in ability_columns(summary)),
                     percent(row.unparseable_share), percent(row.flip_rate),
                     money(row.cost_per_1000), seconds(row.seconds_per_1000)])
    return (["rank", "judge", "strategy", "% undetected",
             *map(_heading, ability_columns(summary)),
             "% unparseable", "% flips", "cost / 1k", "model s / 1k"], rows)


def repeatability_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    names = summary.display_names
    return (["judge", "strategy", "samples", "instances", "% changed", "Fleiss' κ",
             "% undetected mean [min–max]"],
            [[r.judge, names.get(r.strategy, r.strategy), str(r.samples),
              str(r.instances), percent(r.changed_share), plain(r.fleiss_kappa),
              "–" if r.rate_mean is None else
              f"{100 * r.rate_mean:.1f} [{100 * r.rate_min:.1f}–"
              f"{100 * r.rate_max:.1f}]"] for r in summary.repeatability])


def weighted_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Undetected % under the sampled and the probability-weighted score (--logprobs)."""
    names = summary.display_names

    def rate(row: WeightedRow, kind: str) -> str:
        rate, low, high = (getattr(row, f"{kind}_{name}") for name in ("rate", "ci_low",
                                                                       "ci_high"))
        return "–" if rate is None else f"{percent(rate)} [{100 * low:.0f}–{100 * high:.0f}]"

    return (["judge", "strategy", "n", "sampled", "weighted", "ties s/w", "SI s/w",
             "no logprobs"],
            [[r.judge, names.get(r.strategy, r.strategy), str(r.instances),
              rate(r, "sampled"), rate(r, "expected"),
              f"{r.sampled_ties}/{r.expected_ties}",
              f"{percent(r.sampled_si_retained)}/{percent(r.expected_si_retained)}",
              str(r.without_weights)] for r in summary.weighted_scores])


WEIGHTED_NOTE = ("% undetected on the same instances under the sampled score and under "
                 "the probability-weighted score (G-Eval: the expectation over the score "
                 "tokens' probabilities, from --logprobs), with 95% Wilson intervals; ties "
                 "(s/w) count as undetected; SI s/w is % retained under each; \"no "
                 "logprobs\" instances lack an expected score and are in neither rate.")


def bias_tables(summary: Summary) -> list[tuple[str, list[str], list[list[str]]]]:
    """The bias diagnostics as (title, header, rows): length bands, slot position, and
    self-preference where gold answers name their model."""
    names = summary.display_names
    bias = summary.bias

    def cell(row: BandRate | None) -> str:
        if row is None or row.rate is None:
            return "–"
        return (f"{100 * row.rate:.1f} [{100 * row.ci_low:.0f}–"
                f"{100 * row.ci_high:.0f}] ({row.n})")

    tables = []
    length = {(r.judge, r.strategy, r.band): r for r in bias.length}
    pairs = sorted({(judge, strategy) for judge, strategy, _ in length})
    if pairs:
        tables.append(("Undetected % by the perturbed answer's length beside the gold's "
                       "(shorter < 0.9×, longer > 1.1× in words), [95% Wilson] (n)",
                       ["judge", "strategy", "shorter", "about equal", "longer"],
                       [[judge, names.get(strategy, strategy),
                         *(cell(length.get((judge, strategy, band)))
                           for band in ("shorter", "about equal", "longer"))]
                        for judge, strategy in pairs]))
    slots = [r for r in summary.pairwise if r.group == "all" and r.slot_choices]
    if slots:
        tables.append(("Position: % of A/B verdicts that chose the first slot "
                       "(50 is unbiased), [95% Wilson] (n)",
                       ["judge", "strategy", "first slot"],
                       [[r.judge, names.get(r.strategy, r.strategy),
                         f"{100 * r.first_slot_share:.1f} [{100 * r.first_slot_ci_low:.0f}"
                         f"–{100 * r.first_slot_ci_high:.0f}] ({r.slot_choices})"]
                        for r in slots]))
    own = {(r.judge, r.strategy, r.same_family): r
           for r in bias.self_preference}
    pairs = sorted({(judge, strategy) for judge, strategy, _ in own})
    if pairs:
        tables.append(("Self-preference: undetected % on gold answers written by the "
                       "judge's own model family and by others, [95% Wilson] (n)",
                       ["judge", "strategy", "own family", "other models"],
                       [[judge, names.get(strategy, strategy), cell(own.get((judge, strategy,
                                                                              True))),
                         cell(own.get((judge, strategy, False)))] for judge, strategy in pairs]))
    return tables


def category_table(summary: Summary, judge: str, strategy: str) -> tuple[list[str], list[list]]:
    """Paper Tables 6–16 for one judge and strategy, in the layout of its paradigm."""
    paradigm = next(r.paradigm for r in summary.rates
                    if r.judge == judge and r.strategy == strategy)
    rates = {r.group: r for r in summary.rates if r.judge == judge
             and r.strategy == strategy and r.level == "category"}
    order = category_order(rates)
    if paradigm == "pairwise":
        pairs = {r.group: r for r in summary.pairwise
                 if r.judge == judge and r.strategy == strategy}
        header = ["category", "total", "G", "P", "Both✓", "Both✗", "≠", "unparseable",
                  "% undetected", "% worst case"]
        return header, [[get_category(c).display_name, rates[c].n, pairs[c].G,
                         pairs[c].P, pairs[c].both_good, pairs[c].both_bad,
                         pairs[c].inconsistent, pairs[c].unparseable,
                         _cell(summary, rates[c], False), percent(rates[c].worst_case_rate)]
                        for c in order if c in pairs]
    rows = [[get_category(c).display_name, rates[c].n, rates[c].detected,
             rates[c].undetected, rates[c].unparseable,
             _cell(summary, rates[c], False), percent(rates[c].worst_case_rate)]
            for c in order]
    header = ["category", "total", "detected", "undetected", "unparseable", "% undetected",
              "% worst case"]
    if paradigm == "reference":
        histogram = {r.group: r for r in summary.reference
                     if r.judge == judge and r.strategy == strategy}
        header += ["top", "top−1", "top−2", "lower"]
        for row, c in zip(rows, order, strict=True):
            h = histogram.get(c)
            row += [getattr(h, name, 0) for name in ("top", "top_1", "top_2", "lower")]
    return header, rows


def judge_strategies(summary: Summary) -> list[tuple[str, str]]:
    """Every judge × strategy in the summary: judges by name, strategies in paper order."""
    pairs = {(r.judge, r.strategy) for r in summary.rates}
    order = strategy_order({strategy for _, strategy in pairs})
    return sorted(pairs, key=lambda p: (p[0], order.index(p[1])))


# ------------------------------------------------------------------ renderers


def convention_note(summary: Summary) -> str:
    """What the rates in the tables are, in one paragraph (and what Pref's rate is, when
    the runs hold preference pairs)."""
    note = _convention_note(summary)
    return f"{note} {PREFERENCE_NOTE}" if PREFERENCE in ability_columns(summary) else note


def _convention_note(summary: Summary) -> str:
    if summary.convention == "authors":
        return ("Rates in % as the FBI authors' released script computes them "
                "(scripts/analyze_results.py): for single-answer strategies, the pairs "
                "minus those detected minus half the unreadable calls, over the pairs (a "
                "pair with one unreadable call counts as half undetected); the script "
                "analyses no other paradigm, so pairwise and reference-guided rates are the "
                "paper's printed convention. No intervals; `summary.json` holds fbi's "
                "rates with them.")
    if summary.convention == "paper":
        return ("Rates in % as the FBI paper computes them (§5, Tables 3–17): single-answer "
                "and reference-guided counts divided by every instance of the group, an "
                "unparseable reply counting as detected; pairwise counts divided by the "
                "parseable pairs. Lower is better; SI retained (% of score-invariant edits "
                "not penalised) higher is better. No intervals, as in the paper; "
                "`summary.json` holds fbi's rates with them.")
    return ("Undetected-error rates in %, lower is better, over the instances with a "
            "readable verdict, with 95% intervals in brackets (Wilson per category; "
            "bootstrap over instances per ability and overall, Wilson on the pooled count "
            "where every outcome is the same, so 0% and 100% keep their width). SI "
            "retained: % of "
            "score-invariant edits not penalised, higher is better. Unparseable verdicts "
            "are left out of the rates and counted; where there are any, \"worst\" (and "
            "'% worst case') counts them against the judge (as undetected; for SI, as "
            "penalised). `--convention paper` shows the paper's rates instead.")


def coverage_warning(row: CoverageRow) -> str:
    """The warning for one run × strategy with missing judgments: how many, the first call ids,
    and how to make them."""
    return (f"{row.folder}: {row.missing} of {row.instances} instances have no "
            f"{row.strategy} judgment (first: {', '.join(row.first_call_ids)}); "
            "run the same `fbi evaluate` again to make them")


def render_markdown(summary: Summary) -> str:
    """`report.md`: every table of the summary, every cell escaped."""
    parts = ["# FBI blind-spot report", "", convention_note(summary), "",
             *_markdown_sources(summary), *_markdown_verdict(summary),
             *_markdown_paper_tables(summary), *_markdown_diagnostics(summary),
             *_markdown_pairwise(summary), *robustness_markdown(summary)]
    names = summary.display_names
    for judge, strategy in judge_strategies(summary):
        parts += ["", f"## Per category: {md(judge)}, {md(names.get(strategy, strategy))} "
                  "(paper Tables 6–16)", "",
                  markdown_table(*category_table(summary, judge, strategy))]
    return "\n".join(parts) + "\n"


def _markdown_sources(summary: Summary) -> list[str]:
    """The runs reported, and what could not be read or was not judged."""
    parts = [f"- {md(run.folder)}: {md(run.label)} (judge {md(run.judge)}, "
             f"{md(run.protocol)} protocol), dataset {md(run.dataset.get('spec'))} "
             f"({run.dataset.get('instances')} instances), {run.judgments} judgments"
             for run in summary.runs]
    parts += [f"- {md(run.folder)}: robustness of {md(run.model)} on {md(run.dataset)}, "
              f"{run.answers} answers" for run in summary.robustness]
    if summary.problems:
        parts += ["", "**Not everything could be read:**", ""]
        parts += [f"- {md(problem)}" for problem in summary.problems]
    if summary.coverage:
        parts += ["", "**Not every instance was judged** (these are in no rate):", ""]
        parts += [f"- {md(coverage_warning(row))}" for row in summary.coverage]
    return parts


def _markdown_verdict(summary: Summary) -> list[str]:
    """A comparison opens with its verdict."""
    if not summary.comparisons:
        return []
    return ["", "## Verdict", "",
            *(f"- {md(sentence)}" for sentence in verdict_sentences(summary)),
            "", markdown_table(*verdict_table(summary)), "", md(VERDICT_LEGEND)]


def _markdown_paper_tables(summary: Summary) -> list[str]:
    """Table 3 per judge; Table 4 and the pooled table when there is more than one row."""
    judges = sorted({r.judge for r in summary.rates})
    parts = []
    for judge in judges:
        parts += ["", f"## {md(judge)}: strategies × abilities (paper Table 3)", "",
                  markdown_table(*table_3(summary, judge))]
    if len(judges) > 1 or len(judge_strategies(summary)) > 1:
        parts += ["", "## Judges × strategies × abilities (paper Table 4)", "",
                  markdown_table(*table_4(summary)), "",
                  f"{DIFFERS_MARK} differs from {md(min(judges))} on the same instances "
                  "(exact McNemar test per ability, Holm-adjusted p < 0.05 across each "
                  "comparison's categories, abilities and overall; every test is in "
                  "`summary.json` `comparisons`; the Verdict above lists them).",
                  "", "## Judges × strategies, all 22 categories pooled (fbi's table, not "
                  "in the paper)", "", markdown_table(*pooled_table(summary))]
    return parts


def _markdown_diagnostics(summary: Summary) -> list[str]:
    """Repeatability, weighted scores, bias, manipulation, human labels, ranking
    stability and the leaderboard: each where the summary holds it."""
    parts = []
    if summary.repeatability:
        parts += ["", "## Repeatability (the same calls asked several times)", "",
                  "How often an instance's outcome changes between samples, Fleiss' κ of "
                  "the samples as raters, and the undetected rate's spread over samples "
                  "(the tables above read the first sample).", "",
                  markdown_table(*repeatability_table(summary))]
    if summary.weighted_scores:
        parts += ["", "## Probability-weighted scores", "", WEIGHTED_NOTE, "",
                  markdown_table(*weighted_table(summary))]
    for title, header, rows in bias_tables(summary):
        parts += ["", f"## Bias: {md(title)}", "", markdown_table(header, rows)]
    if summary.manipulation:
        parts += ["", "## Judges under manipulation", "", md(MANIPULATION_NOTE), "",
                  markdown_table(*manipulation_table(summary))]
    for title, header, rows in human_tables(summary):
        parts += ["", f"## {title}", "", md(HUMAN_NOTE), "", markdown_table(header, rows)]
    if summary.ranking_stability:
        parts += ["", "## Ranking stability: which errors are hardest", "",
                  md(RANKING_NOTE), "", markdown_table(*ranking_table(summary))]
    if summary.leaderboard:
        parts += ["", "## Leaderboard", "", "Judge × strategy pairs by overall undetected "
                  "rate (lower is better), with what they cost: % unparseable of the "
                  "judged instances, % flips (pairwise verdicts that change with the "
                  "slot order), cost and model time per 1,000 judgments from the stored "
                  "usage (replies from the cache count as free).", "",
                  markdown_table(*leaderboard_table(summary))]
    return parts


def _markdown_pairwise(summary: Summary) -> list[str]:
    """Pairwise position consistency and the explanation check (paper §5.3)."""
    names, order = summary.display_names, judge_strategies(summary)
    parts = []
    consistency = sorted((r for r in summary.pairwise if r.group == "all"),
                         key=lambda r: order.index((r.judge, r.strategy)))
    if consistency:
        parts += ["", "## Pairwise position consistency", "",
                  markdown_table(["judge", "strategy", "verdict flips with order (%)",
                                   "first slot chosen (%)"],
                                  [[r.judge, names.get(r.strategy, r.strategy),
                                    percent(r.flip_rate), percent(r.first_slot_share)]
                                   for r in consistency])]
    checks = [r for r in summary.explanation_check if r.group == "all"]
    if checks:
        parts += ["", "## Detected in the explanation only (paper §5.3)", "",
                  markdown_table(["judge", "strategy", "undetected checked",
                                   "explanation names the error", "%"],
                                  [[r.judge, names.get(r.strategy, r.strategy),
                                    r.undetected_checked, r.detected_in_explanation_only,
                                    percent(r.share)] for r in checks])]
    return parts


def render_csv(summary: Summary) -> str:
    """`report.csv`: the summary's rate rows, cells that would start a spreadsheet formula
    quoted."""
    out = io.StringIO()
    fields = list(RateRow.model_fields)
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    # a label or name starting with = + - @ must not be a live formula in a spreadsheet
    writer.writerows({key: csv_cell(value) for key, value in row.model_dump().items()}
                     for row in summary.rates)
    return out.getvalue()
