"""The verdict a comparison of judges opens with: which judge misses fewer planted errors.

From the paired tests in ``summary["comparisons"]`` (exact McNemar on the instances both
judges judged readably, Holm-adjusted over each pair's family of groups; see
:mod:`fbi.metrics._compare`): per pair of judges and strategy, both overall rates with
their Wilson 95% intervals, the difference, both p-values and one plain sentence; then
the same per ability. The intervals and rates here are over the instances both judged,
so they can differ from a judge's own table, which counts every instance it judged.
"""

from __future__ import annotations

from fbi.metrics import SIGNIFICANCE, wilson_interval
from fbi.taxonomy import Ability, strategy_order

#: The paper's column order (LF, F, IF, R).
ABILITY_ORDER = (Ability.LONG_FORM, Ability.FACTUAL, Ability.INSTRUCTION_FOLLOWING,
                 Ability.REASONING)

#: Marks a rate that differs significantly from the reference judge's. No strategy name
#: holds it (``*`` is part of Vanilla* and Pairwise*).
DIFFERS_MARK = "†"


def comparison_rows(summary: dict) -> list[dict]:
    """Overall and per-ability rows of every comparison, strategies in the paper's order,
    each with its intervals, the difference (A − B) and a sentence for the overall rows."""
    names = summary["display_names"]
    chosen = [c for c in summary.get("comparisons", []) if c["level"] in ("overall", "ability")]
    order = strategy_order({c["strategy"] for c in chosen})
    groups = ["all", *(a.short for a in ABILITY_ORDER)]
    chosen.sort(key=lambda c: (c["judge_a"], c["judge_b"], order.index(c["strategy"]),
                               groups.index(c["group"]) if c["group"] in groups else 99))
    rows = []
    for c in chosen:
        row = {**c, "strategy_name": names.get(c["strategy"], c["strategy"]),
               "ci_a": wilson_interval(c["missed_a"], c["n"]),
               "ci_b": wilson_interval(c["missed_b"], c["n"]),
               "difference": c["rate_a"] - c["rate_b"]}
        row["sentence"] = _sentence(row) if c["level"] == "overall" else ""
        rows.append(row)
    return rows


def _sentence(row: dict) -> str:
    a, b = row["judge_a"], row["judge_b"]
    rate_a, rate_b = (f"{100 * row[key]:.1f}%" for key in ("rate_a", "rate_b"))
    where = f"under {row['strategy_name']}, {row['n']} instances both judged"
    p = f"p = {format_p(row['p_adjusted'])} after Holm"
    if row["p_adjusted"] < SIGNIFICANCE and row["rate_a"] != row["rate_b"]:
        better, low, worse, high = (a, rate_a, b, rate_b) if row["rate_a"] < row["rate_b"] \
            else (b, rate_b, a, rate_a)
        return (f"{better} misses fewer planted errors than {worse}: {low} vs {high}, "
                f"{p} ({where}).")
    return (f"No significant difference between {a} and {b}: {rate_a} vs {rate_b}, {p} "
            f"({where}).")


def format_p(p: float) -> str:
    """Two significant digits, as a p-value is read ("0.0004", "0.031", "1")."""
    return "1" if p >= 1 else f"{p:.2g}"


def interval_text(rate: float, interval: tuple[float, float] | None) -> str:
    text = f"{100 * rate:.1f}"
    if interval is None:
        return text
    return f"{text} [{100 * interval[0]:.1f}–{100 * interval[1]:.1f}]"


def verdict_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The comparison as a table: one row per pair, strategy and group (overall first,
    then each ability); ``†`` marks a Holm-adjusted p below 0.05."""
    header = ["judge A", "judge B", "strategy", "group", "% undetected A [95%]",
              "% undetected B [95%]", "A − B (points)", "missed by A only",
              "missed by B only", "p", "p (Holm)"]
    rows = []
    for row in comparison_rows(summary):
        mark = f" {DIFFERS_MARK}" if row["significant"] else ""
        rows.append([row["judge_a"], row["judge_b"], row["strategy_name"], row["group"],
                     interval_text(row["rate_a"], row["ci_a"]),
                     interval_text(row["rate_b"], row["ci_b"]),
                     f"{100 * row['difference']:+.1f}", str(row["missed_by_a_only"]),
                     str(row["missed_by_b_only"]), format_p(row["p"]),
                     format_p(row["p_adjusted"]) + mark])
    return header, rows


def verdict_pair_tables(summary: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """The comparison for a terminal (80 columns): one table per pair of judges, titled
    with both, rows of strategy and group with both rates and the Holm-adjusted p."""
    tables: dict[tuple[str, str], list[list[str]]] = {}
    for row in comparison_rows(summary):
        mark = f" {DIFFERS_MARK}" if row["significant"] else ""
        tables.setdefault((row["judge_a"], row["judge_b"]), []).append(
            [row["strategy_name"], row["group"], interval_text(row["rate_a"], row["ci_a"]),
             interval_text(row["rate_b"], row["ci_b"]), format_p(row["p_adjusted"]) + mark])
    return [(f"A {a} vs B {b}: % undetected on the instances both judged [95%]",
             ["strategy", "group", "A", "B", "p (Holm)"], rows)
            for (a, b), rows in tables.items()]


def verdict_sentences(summary: dict) -> list[str]:
    return [row["sentence"] for row in comparison_rows(summary) if row["sentence"]]


VERDICT_LEGEND = (f"{DIFFERS_MARK} Holm-adjusted p < {SIGNIFICANCE:g}: exact McNemar test on "
                  "the instances both judges judged readably, corrected over each pair's "
                  "categories, abilities and overall under one strategy. Rates here are "
                  "over those shared instances; intervals are Wilson 95%.")
