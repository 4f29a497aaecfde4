"""The report's tables (paper Tables 3, 4 and 6–16, fbi's own beside them) as header and
rows of text, from a [`Summary`][fbi.report.Summary]: one function a table, shared
by the terminal, Markdown and HTML renderers."""

from __future__ import annotations

from collections import defaultdict

from fbi.metrics import (
    BandRate,
    WeightedRow,
)
from fbi.report._cells import percent, plain
from fbi.report._schema import (
    RateRow,
    Summary,
)
from fbi.report._summary import RATE_KEY
from fbi.report._verdict import (
    DIFFERS_MARK,
)
from fbi.taxonomy import (
    Ability,
    category_order,
    get_category,
    rate_columns,
    strategy_order,
)


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
    """The ability columns of the rate tables (`fbi.taxonomy.rate_columns`): the paper's
    LF/F/IF/R and SI when the runs hold FBI instances, Pref for preference pairs and Ag
    for agents' trajectories (issues 24 and 54: beside them, never pooled)."""
    present = {r.group for r in summary.rates if r.level in ("ability",
                                                                      "score-invariant")}
    return list(rate_columns(present))


#: The column of preference pairs, and what its rate is.
PREFERENCE = Ability.PREFERENCE.short
PREFERENCE_NOTE = ("Pref: the pairs of a preference set (chosen plays gold, rejected "
                   "perturbed); its rate is the judge's error rate, 1 − accuracy: how often "
                   "it did not rank the chosen answer above the rejected one.")


#: The column of agents' trajectories, and what its rate is (issue 54).
AGENT_NOTE = ("Ag: agents' trajectories, one error planted in a trajectory that did its "
              "task; its rate is the share of planted errors the judge missed, never pooled "
              "with the FBI columns.")


def rates_title(columns, shown: str) -> str:
    """What the rates of a table with these ability columns are."""
    parts = [f"% undetected ({shown})"] if {"LF", "Ag"} & set(columns) else []
    parts += ["SI: % retained"] if "SI" in columns else []
    parts += [f"Pref: % error, 1 − accuracy ({shown})"] if PREFERENCE in columns else []
    return "; ".join(parts)


def column_notes(columns) -> list[str]:
    """The notes under a rate table, for the columns beside the FBI taxonomy."""
    return [PREFERENCE_NOTE] * (PREFERENCE in columns) + [AGENT_NOTE] * ("Ag" in columns)


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


TURN_TITLE = ("By turn: % undetected of conversations' final answers, by the user turn "
              "they reply to")


def turn_table(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """Conversations: judge × strategy × turn, the rate as the summary's convention shows
    it; None when every instance is single-turn."""
    rows = [r for r in summary.rates if r.level == "turn"]
    if not rows:
        return None
    names = summary.display_names
    return (["judge", "strategy", "turn", "instances", "% undetected"],
            [[r.judge, names.get(r.strategy, r.strategy), r.group.removeprefix("turn "),
              str(r.n), _cell(summary, r)] for r in rows])


def leaderboard_table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Judge × strategy pairs ranked by the overall undetected rate (lower is better)."""
    names = summary.display_names

    def money(value):
        return "–" if value is None else f"${value:.2f}"

    def seconds(value):
        return "–" if value is None else f"{value:,.0f}"

    # reasoning judges' columns only where one reasoned: most tables have none
    reasoning = any(row.reasoning_tokens_per_judgment for row in summary.leaderboard)
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
                     money(row.cost_per_1000), seconds(row.seconds_per_1000),
                     *([seconds(row.reasoning_tokens_per_judgment),
                        money(row.reasoning_cost_per_1000)] if reasoning else [])])
    return (["rank", "judge", "strategy", "% undetected",
             *map(_heading, ability_columns(summary)),
             "% unparseable", "% flips", "cost / 1k", "model s / 1k",
             *(["reasoning tok / judgment", "reasoning cost / 1k"] if reasoning else [])],
            rows)


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


