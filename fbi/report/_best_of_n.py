"""The best-of-N tables (RewardBench 2's layout) as renderer-neutral (title, header, rows):
accuracy with chance beside it, the Ties score, and paired tests between judges. The
terminal, Markdown and HTML reports draw the same tables."""

from __future__ import annotations

from fbi.report._cells import percent
from fbi.report._schema import Summary
from fbi.report._verdict import format_p

BEST_OF_N_NOTE = (
    "A row is right when every chosen answer outranks every rejected one: single-answer, "
    "every chosen score strictly above every rejected score; pairwise, every chosen × "
    "rejected pair won in both slot orders (a tie or a flip loses it). Unreadable rows "
    "(no lost pair, an unreadable one) are out of the accuracy and counted wrong in the "
    "worst case; chance is a judge ranking the answers at random (1 / C(n, chosen)); "
    "RB2 credit is RewardBench 2's scorer (1/k for a top score shared by k, 1/N for an "
    "unreadable row), for single-answer rows of one chosen answer.")


def best_of_n_tables(summary: Summary, terminal: bool = False
                     ) -> list[tuple[str, list[str], list[list[str]]]]:
    """The best-of-N tables a summary holds (none without best-of-N rows); ``terminal``:
    the accuracy table's columns that fit 80 characters (the worst case and incomplete
    rows are in the Markdown and HTML reports), and no paired tests."""
    result = summary.best_of_n
    if not result.accuracy:
        return []
    names = summary.display_names
    header = ["judge", "strategy", "subset", "rows", "% right", "% worst case", "% chance",
              "% RB2 credit", "unreadable", "incomplete"]
    rows = [[r.judge, names.get(r.strategy, r.strategy), r.group, str(r.rows),
             _interval(r.accuracy, r.ci_low, r.ci_high), percent(r.worst_case_accuracy),
             percent(r.chance), percent(r.rewardbench_credit), str(r.unreadable),
             str(r.incomplete)] for r in result.accuracy]
    if terminal:
        keep = [0, 1, 2, 3, 4, 6, 7, 8]
        header, rows = [header[i] for i in keep], [[row[i] for i in keep] for row in rows]
        header[-2:] = ["% RB2", "unread."]
    tables = [("Best-of-N: % of rows ranked right [95% interval], chance beside it",
               header, rows)]
    if result.ties and not terminal:
        tables.append((
            "RewardBench 2 Ties score (0.3 tied + 0.3 ref accuracy + 0.2 + 0.2 margin "
            "preferred + 0.01 margin)",
            ["judge", "strategy", "score", "% ref acc.", "% tied acc.", "% margin pref.",
             "% margin pref. (hard)", "prompts ref/tied/both", "left out"],
            [[t.judge, names.get(t.strategy, t.strategy),
              "–" if t.score is None else f"{t.score:.3f}", percent(t.ref_accuracy),
              percent(t.tied_accuracy), percent(t.correctness_preferred),
              percent(t.correctness_preferred_hard),
              f"{t.ref_prompts}/{t.tied_prompts}/{t.margin_prompts}",
              str(t.left_out + t.misnamed)] for t in result.ties]))
    if result.comparisons and not terminal:
        tables.append((
            "Best-of-N: paired tests between judges (exact McNemar, Holm over subsets)",
            ["judge A", "judge B", "strategy", "subset", "rows", "% right A", "% right B",
             "A only", "B only", "p", "p (Holm)"],
            [[c.judge_a, c.judge_b, names.get(c.strategy, c.strategy), c.group,
              str(c.rows), percent(c.accuracy_a), percent(c.accuracy_b), str(c.a_only),
              str(c.b_only), format_p(c.p_value), format_p(c.p_holm)]
             for c in result.comparisons]))
    return tables


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "–"
    if low is None or high is None:
        return percent(value)
    return f"{percent(value)} [{100 * low:.0f}–{100 * high:.0f}]"
