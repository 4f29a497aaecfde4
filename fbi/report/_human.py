"""The report's tables of judge–human and human–human agreement (`fbi.metrics._human`);
the labels are read by `fbi.trust` (`read_human_labels`, where their format is)."""

from __future__ import annotations

from fbi.metrics import Agreement
from fbi.report._schema import Summary

HUMAN_NOTE = (
    "Judge–human agreement as MT-Bench counts it (Zheng et al. 2023, §4.2): each human "
    "vote (a: gold better, b: perturbed better, tie) against the judge's verdict on the "
    "same instance (single-answer: which answer it scored higher; pairwise: G → a, P → b, "
    "anything else a tie; reference-guided strategies give no verdict). Without ties "
    "leaves out each comparison where either said tie. Cohen's κ over the same vote "
    "pairs; Spearman's ρ and Kendall's τ-b between the judge's and the people's scores of "
    "the same answers. 95% bootstrap intervals over instances. The human–human row is "
    "the ceiling: people compared with each other the same way. Intervals: [95%].")


def _interval(row: Agreement, name: str, percent: bool, compact: bool = False) -> str:
    value = getattr(row, name)
    if value is None:
        return "–"
    low, high = getattr(row, f"{name}_ci_low"), getattr(row, f"{name}_ci_high")
    if percent:
        text = f"{100 * value:.1f}"
        if low is not None:
            text += f" [{100 * low:.0f}–{100 * high:.0f}]" if compact else \
                f" [{100 * low:.1f}, {100 * high:.1f}]"
        return text
    return f"{value:+.2f}" + ("" if low is None else f" [{low:+.2f}, {high:+.2f}]")


def human_tables(summary: Summary, terminal: bool = False
                 ) -> list[tuple[str, list[str], list[list[str]]]]:
    """The judge–human tables (verdicts, then scores) and the human–human ceiling, as
    (title, header, rows): overall, per ability and per category, or overall only for a
    terminal (80 columns; every group is in summary.json, report.md and report.html)."""
    human = summary.human_agreement
    if not human:
        return []
    names = summary.display_names
    levels = ("overall",) if terminal else ("overall", "ability", "category")
    chosen = [r for r in human.judge if r.level in levels]
    group = [] if terminal else ["group"]

    def sides(r: dict) -> list[str]:
        return [r.judge, names.get(r.strategy, r.strategy)] + \
            ([] if terminal else [r.group])

    tables = []
    verdicts = [[*sides(r), str(r.n_with_ties),
                 _interval(r, "agreement_with_ties", True, terminal),
                 _interval(r, "agreement_without_ties", True, terminal),
                 _interval(r, "kappa", False)] for r in chosen if r.n_with_ties]
    if verdicts:
        tables.append(("Judges against people: verdicts", [
            "judge", "strategy", *group, "votes", "% agree (ties)", "% agree (no ties)",
            "Cohen's κ"], verdicts))
    scores = [[*sides(r), str(r.n_scores), _interval(r, "spearman", False),
               _interval(r, "kendall", False)] for r in chosen if r.n_scores]
    if scores:
        tables.append(("Judges against people: scores", [
            "judge", "strategy", *group, "scores", "Spearman ρ", "Kendall τ-b"], scores))
    ceiling = [[r.group, str(r.n_with_ties),
                _interval(r, "agreement_with_ties", True, terminal),
                _interval(r, "agreement_without_ties", True, terminal)]
               for r in human.humans if r.level in levels]
    if ceiling:
        tables.append(("People against each other (the ceiling)",
                       ["group", "vote pairs", "% agree (ties)", "% agree (no ties)"],
                       ceiling))
    return tables


def human_chart(summary: Summary) -> dict | None:
    """Overall agreement with ties per judge × strategy (bars with intervals), and the
    people's own agreement as the ceiling line, for the HTML report."""
    human = summary.human_agreement
    if not human:
        return None
    names = summary.display_names
    bars = [{"label": f"{r.judge} · {names.get(r.strategy, r.strategy)}",
             "rate": r.agreement_with_ties, "low": r.agreement_with_ties_ci_low,
             "high": r.agreement_with_ties_ci_high, "n": r.n_with_ties}
            for r in human.judge
            if r.level == "overall" and r.agreement_with_ties is not None]
    ceiling = next((r.agreement_with_ties for r in human.humans
                    if r.level == "overall"), None)
    return {"bars": bars, "ceiling": ceiling} if bars else None
