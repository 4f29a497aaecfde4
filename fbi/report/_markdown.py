"""``report.md`` and ``report.csv``: the summary's tables rendered as Markdown and CSV,
every cell escaped."""

from __future__ import annotations

import csv
import io

from fbi.escaping import csv_cell
from fbi.escaping import markdown_text as md
from fbi.report._cells import markdown_table, percent
from fbi.report._robustness import robustness_markdown
from fbi.report._schema import (
    CoverageRow,
    RateRow,
    Summary,
)
from fbi.report._sections import present
from fbi.report._tables import (
    ability_columns,
    category_table,
    column_notes,
    judge_strategies,
    pooled_table,
    table_3,
    table_4,
)
from fbi.report._verdict import (
    DIFFERS_MARK,
    VERDICT_LEGEND,
    verdict_sentences,
    verdict_table,
)


def convention_note(summary: Summary) -> str:
    """What the rates in the tables are, in one paragraph (and what Pref's rate is, when
    the runs hold preference pairs)."""
    return " ".join([_convention_note(summary), *column_notes(ability_columns(summary))])


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
             *_markdown_paper_tables(summary), *_markdown_sections(summary),
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
             f"{md(run.protocol)} protocol), dataset {md(run.dataset.spec)} "
             f"({run.dataset.instances} instances), {run.judgments} judgments"
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
        # the mark and its Verdict exist only where there are paired tests (several runs)
        legend = ["", f"{DIFFERS_MARK} differs from {md(min(judges))} on the same instances "
                  "(exact McNemar test per ability, Holm-adjusted p < 0.05 across each "
                  "comparison's categories, abilities and overall; every test is in "
                  "`summary.json` `comparisons`; the Verdict above lists them)."] \
            if summary.comparisons else []
        parts += ["", "## Judges × strategies × abilities (paper Table 4)", "",
                  markdown_table(*table_4(summary)), *legend,
                  "", "## Judges × strategies, all 22 categories pooled (fbi's table, not "
                  "in the paper)", "", markdown_table(*pooled_table(summary))]
    return parts


def _markdown_sections(summary: Summary) -> list[str]:
    """fbi's diagnostics, each section as declared (`fbi.report._sections`): a heading
    (one per titled table), its note once, its tables, its sentences."""
    parts = []
    for section, tables in present(summary):
        for number, table in enumerate(tables):
            if number == 0 or table.title:
                heading = section.table_prefix + table.title if table.title else \
                    section.title
                parts += ["", f"## {md(heading)}"]
            if number == 0 and section.note:
                parts += ["", md(section.note)]
            parts += ["", markdown_table(table.header, table.rows)]
        sentences = section.sentences(summary)
        if sentences:
            parts += ["", *(f"- {md(sentence)}" for sentence in sentences)]
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
