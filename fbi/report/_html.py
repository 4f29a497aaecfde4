"""The self-contained HTML report: inline CSS and SVG, nothing fetched when viewed.

The page layout lives in ``fbi/data/report.html.jinja``; this module prepares what it
shows (heatmap colours, interval bars, word diffs of missed examples) from the summary.
"""

from __future__ import annotations

from importlib import resources

from fbi.diffing import answer_diff
from fbi.report._human import human_chart
from fbi.report._markdown import (
    convention_note,
    coverage_warning,
)
from fbi.report._robustness import robustness_tables
from fbi.report._schema import Summary
from fbi.report._sections import present
from fbi.report._summary import (
    RATE_KEY,
    Run,
)
from fbi.report._tables import (
    ability_columns,
    category_table,
    judge_strategies,
    pooled_table,
    table_3,
    table_4,
)
from fbi.report._verdict import DIFFERS_MARK, VERDICT_LEGEND, verdict_sentences, verdict_table
from fbi.taxonomy import category_order, get_category

EXAMPLES_PER_RUN = 12


def heat_colour(rate: float | None) -> str:
    """Green at 0% undetected, through yellow, to red at 100%."""
    if rate is None:
        return "#eeeeee"
    hue = 120 * (1 - rate)
    return f"hsl({hue:.0f}, 70%, 72%)"


def heatmap(summary: Summary) -> dict:
    """Rows: categories; columns: judge × strategy; cells: rate and colour."""
    columns = judge_strategies(summary)
    key = RATE_KEY[summary.convention]
    rates = {(r.judge, r.strategy, r.group): r for r in summary.rates
             if r.level == "category"}
    rows = []
    for category in map(get_category, category_order({g for _, _, g in rates})):
        cells = [rates.get((judge, strategy, category.name)) for judge, strategy in columns]
        if any(cells):
            rows.append({"name": category.display_name, "ability": category.ability.short,
                         "cells": [{"rate": getattr(c, key) if c else None, "n": c.n if c else 0,
                                    "colour": heat_colour(getattr(c, key) if c else None)}
                                   for c in cells]})
    names = summary.display_names
    multi_judge = len({judge for judge, _ in columns}) > 1
    return {"columns": [(f"{judge} · " if multi_judge else "") + names.get(s, s)
                        for judge, s in columns], "rows": rows}


def ability_bars(summary: Summary) -> list[dict]:
    """One bar chart per judge × strategy: LF/F/IF/R undetected rate with its interval."""
    charts = []
    names = summary.display_names
    for judge, strategy in judge_strategies(summary):
        bars = []
        for column in [c for c in ability_columns(summary) if c != "SI"]:
            row = next((r for r in summary.rates if r.judge == judge and
                        r.strategy == strategy and r.level == "ability" and
                        r.group == column), None)
            if row and row.rate is not None:
                bars.append({"label": column, "rate": row.rate, "low": row.ci_low,
                             "high": row.ci_high, "n": row.n - row.unparseable})
        if bars:
            charts.append({"title": f"{judge} · {names.get(strategy, strategy)}", "bars": bars})
    return charts


def missed_examples(runs: list[Run]) -> list[dict]:
    """Instances a judge missed, with the word diff and the judge's explanation: the first
    `EXAMPLES_PER_RUN` of each run (outcomes worked out only until they are found)."""
    from fbi.metrics import judgments_by_instance, outcome_of

    examples = []
    diffs: dict[str, list] = {}  # instance id → its word diff: judges often miss the same
    for run in runs:
        groups = judgments_by_instance(run.judgments)
        by_key = {(j.strategy, j.instance_id, j.role): j
                  for roles in groups.values() for j in roles.values()}
        shown = 0
        for roles in groups.values():
            if shown >= EXAMPLES_PER_RUN:
                break
            outcome = outcome_of(roles)
            instance = run.instances.get(outcome.instance_id)
            if outcome.outcome != "undetected" or instance is None:
                continue
            role = "gold-first" if outcome.paradigm == "pairwise" else "perturbed"
            judgment = roles.get(role)
            examples.append({
                "judge": outcome.judge, "strategy": outcome.strategy,
                "category": instance.category, "instruction": instance.question,
                "diff": diffs.get(instance.id) or diffs.setdefault(
                    instance.id, answer_diff(instance.gold_answer, instance.perturbed_answer)),
                "rationale": instance.rationale,
                "explanation": judgment.explanation if judgment else None,
                "verdict": _verdict_line(outcome, by_key),
            })
            shown += 1
    return examples


def _verdict_line(outcome, by_key) -> str:
    """What the judge said of both answers: the gold's score beside the perturbed one's,
    or the verdict in each slot order; reference-guided scores the perturbed answer only."""
    def get(role):
        return by_key.get((outcome.strategy, outcome.instance_id, role))

    if outcome.paradigm == "pairwise":
        first, second = get("gold-first"), get("perturbed-first")
        return (f"gold shown first: {first.verdict if first else '–'}; perturbed shown "
                f"first: {second.verdict if second else '–'}")
    perturbed = get("perturbed")
    score = perturbed.score if perturbed else None
    if outcome.paradigm == "reference":
        return f"perturbed answer scored {score} against the gold as reference"
    if outcome.paradigm == "step":
        return f"first wrong step named: {score} (0: none)"
    gold = get("gold")
    return f"gold scored {gold.score if gold else '–'}, perturbed scored {score}"


def render_html(summary: Summary, runs: list[Run]) -> str:
    """`report.html`: the self-contained page (inline CSS and SVG) for a summary and the runs
    it was built from."""
    import jinja2

    template_text = resources.files("fbi.data").joinpath("report.html.jinja").read_text(
        encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True)
    template = environment.from_string(template_text)
    judges = sorted({r.judge for r in summary.rates})
    pairwise = [r for r in summary.pairwise if r.group == "all"]
    return template.render(
        summary=summary,
        table3={judge: table_3(summary, judge) for judge in judges},
        table4=table_4(summary) if len(judge_strategies(summary)) > 1 else None,
        pooled=pooled_table(summary), note=convention_note(summary),
        sections=[(section, tables, section.sentences(summary))
                  for section, tables in present(summary)],
        human_chart=human_chart(summary),
        warnings=summary.problems + [coverage_warning(r) for r in summary.coverage],
        heatmap=heatmap(summary), bars=ability_bars(summary), pairwise=pairwise,
        per_category=[(judge, summary.display_names.get(s, s),
                       category_table(summary, judge, s)) for judge, s in
                      judge_strategies(summary)],
        examples=missed_examples(runs),
        checks=[r for r in summary.explanation_check if r.group == "all"],
        names=summary.display_names,
        robustness_tables=robustness_tables(summary),
        noise_charts=noise_charts(summary),
        verdict={"sentences": verdict_sentences(summary), "table": verdict_table(summary),
                 "legend": VERDICT_LEGEND} if summary.comparisons else None,
        differs_mark=DIFFERS_MARK,
    )


def noise_charts(summary: Summary) -> list[dict]:
    """Per robustness run, Cohen's h of each noise kind with its interval (for a bar
    chart around zero; h lies in [−π, π])."""
    charts = []
    for run in summary.robustness:
        by_noise = run.suites.noise.by_noise if run.suites.noise is not None else {}
        bars = [{"label": kind, "h": m.cohens_h, "low": m.h_ci_low, "high": m.h_ci_high}
                for kind, m in by_noise.items()]
        if bars:
            charts.append({"title": f"{run.model} · {run.dataset}", "bars": bars})
    return charts
