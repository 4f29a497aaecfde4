"""The verdict a comparison of judges opens with: which judge misses fewer planted errors.

From the paired tests in ``summary.comparisons`` (exact McNemar on the instances both
judges judged readably, Holm-adjusted over each pair's family of groups; see
`fbi.metrics._compare`): per pair of judges and strategy, both overall rates with
their Wilson 95% intervals, the difference, both p-values and one plain sentence; then
the same per ability. The intervals and rates here are over the instances both judged,
so they can differ from a judge's own table, which counts every instance it judged.
"""

from __future__ import annotations

from fbi.errors import InputError
from fbi.metrics import SIGNIFICANCE, wilson_interval
from fbi.report._schema import Summary
from fbi.taxonomy import Ability, did_you_mean, strategy_order

#: The paper's column order (LF, F, IF, R).
ABILITY_ORDER = (Ability.LONG_FORM, Ability.FACTUAL, Ability.INSTRUCTION_FOLLOWING,
                 Ability.REASONING)

#: Marks a rate that differs significantly from the reference judge's. No strategy name
#: holds it (``*`` is part of Vanilla* and Pairwise*).
DIFFERS_MARK = "†"


def named_pairs(texts: list[str] | tuple[str, ...],
                sides: set[tuple[str, str]]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The pairs a user named (``fbi report --compare``), each ``A,B`` where a side is
    ``LABEL:STRATEGY`` (the label a report gives a run; split at the last ``:``, as a
    label such as ``ollama/llama3:8b`` can hold one) or just ``STRATEGY`` when the runs
    have one label. ``sides`` are the (label, strategy) pairs the runs hold."""
    labels = sorted({label for label, _ in sides})
    known = sorted(f"{label}:{strategy}" for label, strategy in sides)
    pairs = []
    for text in texts:
        parts = [part.strip() for part in text.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"--compare '{text}': expected two sides, LABEL:STRATEGY,"
                             "LABEL:STRATEGY (e.g. gpt-4o:vanilla,gpt-4o:rules)")
        pair = tuple(_side(part, labels, sides, known) for part in parts)
        if pair[0] == pair[1]:
            raise InputError(f"--compare '{text}' names one run and strategy twice. Fix: "
                             "name two different sides")
        pairs.append(pair)
    return pairs


def _side(text: str, labels: list[str], sides: set[tuple[str, str]],
          known: list[str]) -> tuple[str, str]:
    label, _, strategy = text.rpartition(":")
    if not label and len(labels) == 1:
        label = labels[0]
    if (label, strategy) not in sides:
        # the closer miss first: a label the runs hold with a mistyped strategy, or a label
        hint = did_you_mean(strategy, sorted(s for name, s in sides if name == label)) \
            if label in labels else did_you_mean(label, labels)
        raise InputError(f"--compare: no run here holds '{text}'.{hint} The runs hold: "
                         f"{', '.join(known)}")
    return label, strategy


def comparison_rows(summary: Summary) -> list[dict]:
    """Overall and per-ability rows of every comparison, strategies in the paper's order,
    each with its intervals, the difference (A − B) and a sentence for the overall rows."""
    names = summary.display_names
    chosen = [c for c in summary.comparisons if c.level in ("overall", "ability")]
    groups = ["all", *(a.short for a in ABILITY_ORDER)]
    order = strategy_order({s for c in chosen for s in (c.strategy, c.strategy_b)})
    chosen.sort(key=lambda c: (c.named, c.judge_a, c.judge_b,
                               order.index(c.strategy), order.index(c.strategy_b),
                               groups.index(c.group) if c.group in groups else 99))
    rows = []
    for c in chosen:
        name_a, name_b = (names.get(s, s) for s in (c.strategy, c.strategy_b))
        row = c.model_dump()  # a comparison row, plus what the verdict shows of it
        row.update(strategy_name=name_a if name_a == name_b else f"{name_a} / {name_b}",
                   sides=_sides(row, name_a, name_b), ci_a=wilson_interval(c.missed_a, c.n),
                   ci_b=wilson_interval(c.missed_b, c.n), difference=c.rate_a - c.rate_b)
        row["sentence"] = comparison_sentence(row) if c.level == "overall" else ""
        rows.append(row)
    return rows


def _sides(row: dict, name_a: str, name_b: str) -> tuple[str, str]:
    """How the sentence and titles name each side: the judge, and for a named pair of
    strategies the strategy too ("gpt-4o under Vanilla")."""
    if row["strategy"] == row["strategy_b"]:
        return row["judge_a"], row["judge_b"]
    return f"{row['judge_a']} under {name_a}", f"{row['judge_b']} under {name_b}"


def comparison_sentence(row: dict) -> str:
    """The verdict on one overall comparison, in words: which side misses fewer planted
    errors after Holm's correction, or that no difference is significant. ``row``: a
    `ComparisonRow`'s fields with ``sides`` (how to name each) and ``strategy_name``."""
    a, b = row["sides"]
    where = (f"under {row['strategy_name']}, " if row["strategy"] == row["strategy_b"]
             else "") + f"{row['n']} instances both judged"
    rate_a, rate_b = (f"{100 * row[key]:.1f}%" for key in ("rate_a", "rate_b"))
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


def verdict_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
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


def verdict_pair_tables(summary: Summary) -> list[tuple[str, list[str], list[list[str]]]]:
    """The comparison for a terminal (80 columns): one table per pair of judges, titled
    with both, rows of strategy and group with both rates and the Holm-adjusted p."""
    tables: dict[tuple[str, str], list[list[str]]] = {}
    for row in comparison_rows(summary):
        mark = f" {DIFFERS_MARK}" if row["significant"] else ""
        tables.setdefault(row["sides"], []).append(
            [row["strategy_name"], row["group"], interval_text(row["rate_a"], row["ci_a"]),
             interval_text(row["rate_b"], row["ci_b"]), format_p(row["p_adjusted"]) + mark])
    return [(f"A {a} vs B {b}: % undetected on the instances both judged [95%]",
             ["strategy", "group", "A", "B", "p (Holm)"], rows)
            for (a, b), rows in tables.items()]


def verdict_sentences(summary: Summary) -> list[str]:
    """The verdict's one sentence per pair of judges (or named sides) and strategy."""
    return [row["sentence"] for row in comparison_rows(summary) if row["sentence"]]


VERDICT_LEGEND = (f"{DIFFERS_MARK} Holm-adjusted p < {SIGNIFICANCE:g}: exact McNemar test on "
                  "the instances both sides judged readably, corrected over each pair's "
                  "categories, abilities and overall (a pair: two judges under one "
                  "strategy, or two sides named with --compare). Rates here are "
                  "over those shared instances; intervals are Wilson 95%.")
