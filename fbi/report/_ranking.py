"""The report's ranking-stability table: whether two judges, or one judge's two
strategies, agree on which planted errors are hardest (Kendall's τ-b between their
rankings of the categories; `fbi.metrics._ranking`)."""

from __future__ import annotations

from fbi.report._schema import Summary

RANKING_NOTE = (
    "Each judge under each strategy ranks the categories by its undetected rate (over its "
    "readable verdicts, as its table shows); Kendall's τ-b between two rankings (1: the "
    "same order of difficulty, 0: unrelated, −1: reversed) over the categories both "
    "judged, with a 95% bootstrap interval over instances (resampled within each "
    "category, the same draw for both; none when a category holds fewer than 5). "
    "Score-invariant edits are left out.")


def ranking_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """One row per pair: judges under one strategy first, then each judge's strategies."""
    names = summary.display_names
    rows = []
    for row in summary.ranking_stability:
        if row.kind == "judges":
            sides = [row.judge_a, row.judge_b, names.get(row.strategy_a,
                                                               row.strategy_a)]
        else:
            sides = [names.get(row.strategy_a, row.strategy_a),
                     names.get(row.strategy_b, row.strategy_b), row.judge_a]
        tau = "–" if row.tau is None else f"{row.tau:+.2f}" + (
            f" [{row.ci_low:+.2f}, {row.ci_high:+.2f}]" if row.ci_low is not None
            else f" (no interval: {row.fewest_per_category} instance(s) in a category)")
        rows.append([row.kind, *sides, str(row.categories), str(row.instances), tau])
    return ["pair of", "A", "B", "under (the same)", "categories", "instances",
            "Kendall's τ-b [95%]"], rows
