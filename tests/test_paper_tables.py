"""fbi's report reproduces the FBI paper's appendix (Tables 6–16) from the paper's own
counts, with ``--convention paper``.

The test reads the tables from the paper beside the checkout
(``../shared/papers/fbi-finding-blind-spots-in-evaluator-llms.md``; it skips without
it), turns each row's counts into instance outcomes, aggregates them with fbi's metrics,
and compares ``paper_rate`` with the printed percentage (two decimals). Expected values
are the paper's printed numbers, never fbi's output. Cells where the paper's own counts
cannot give its printed number are listed with the reason (its typos), and the test
checks that each of them is indeed off for that reason.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fbi.metrics import InstanceOutcome, aggregate
from fbi.taxonomy import get_category

PAPER = Path(__file__).resolve().parents[2] / "shared" / "papers" / \
    "fbi-finding-blind-spots-in-evaluator-llms.md"
PARADIGMS = {**dict.fromkeys(range(6, 11), "single"), **dict.fromkeys(range(11, 16), "pairwise"),
             16: "reference"}
NAMES = {"coherence": "coherence", "comprehensiveness": "comprehensiveness",
         "consistency": "consistency", "grammar": "grammar", "chronology": "chronology",
         "spelling": "spelling", "contextual": "contextual", "entity": "entity",
         "incorrect fact": "incorrect-fact", "number errors": "number-errors",
         "number errorss": "number-errors", "opposite fact": "opposite-fact",
         "remove fact": "remove-fact", "assumptions": "assumptions", "do less": "do-less",
         "do more": "do-more", "ignore format": "ignore-format",
         "sequence errors": "sequence-errors", "calculations": "calculations",
         "copying numbers": "copying-numbers", "final errors": "final-errors",
         "incorrect units": "incorrect-units", "wrong formula": "wrong-formula"}


def paper_tables() -> dict[int, list[tuple[str, list[int], float]]]:
    """Table number → rows (category, counts, printed share), TOTAL rows as 'TOTAL:<k>'."""
    if not PAPER.is_file():
        pytest.skip(f"the FBI paper is not at {PAPER} (../shared/papers beside the checkout)")
    lines = PAPER.read_text(encoding="utf-8").splitlines()
    tables: dict[int, list] = {}
    for index, line in enumerate(lines):
        caption = re.match(r"Table (\d+):", line)
        if not caption or int(caption.group(1)) not in PARADIGMS:
            continue
        rows, start = [], index - 1
        while start >= 0 and not lines[start].startswith("|"):
            start -= 1
        while start >= 0 and lines[start].startswith("|"):
            start -= 1
        totals = 0
        for row in lines[start + 1:index]:
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) < 4 or not re.fullmatch(r"\d+", cells[2] or "x"):
                continue
            name = cells[1].lower()
            numbers = [int(c) for c in cells[2:-1]]
            share = float(cells[-1])
            if name == "total":
                totals += 1
                name = f"TOTAL:{totals}"
            else:
                name = NAMES[name]
            rows.append((name, numbers, share))
        tables[int(caption.group(1))] = rows
    return tables


def outcomes_of(paradigm: str, category: str, numbers: list[int]) -> list[InstanceOutcome]:
    """Instance outcomes with exactly a row's counts; what the counts leave of the total
    is unparseable."""
    total = numbers[0]
    if paradigm == "single":
        detected, undetected = numbers[1], numbers[2]
    elif paradigm == "pairwise":
        detected, undetected = numbers[1], sum(numbers[2:6])  # G; P, both ✓, both ✗, ≠
    else:
        detected, undetected = sum(numbers[2:5]), numbers[1]  # 9, 8, <8; top score 10
    ability = get_category(category).ability
    labels = ["detected"] * detected + ["undetected"] * undetected + \
        ["unparseable"] * (total - detected - undetected)
    return [InstanceOutcome(f"{category}:{n}", "paper", "s", paradigm, ability, category, label)
            for n, label in enumerate(labels)]


# The paper's own typos: cells its counts cannot give. Each is checked to be off.
TYPOS = {
    (6, "comprehensiveness"): "detected 9 + undetected 82 = 91 > the total of 90",
    (6, "TOTAL:1"): "detected 146 + undetected 383 = 529 > the total of 528",
    (9, "calculations"): "49 undetected of 149 is 0.33; 0.53 is printed",
    (9, "TOTAL:4"): "186 undetected of 494 is 0.38; 0.43 is printed",
    (10, "wrong-formula"): "25 undetected of 88 is 0.28; 0.37 is printed",
}


def test_paper_convention_reproduces_the_appendix_tables():
    tables = paper_tables()
    assert sorted(tables) == list(range(6, 17))
    checked, off = 0, []
    for number, rows in tables.items():
        paradigm = PARADIGMS[number]
        by_category = {name: numbers for name, numbers, _ in rows
                       if not name.startswith("TOTAL")}
        assert len(by_category) == 22, (number, sorted(by_category))
        outcomes = [o for category, numbers in by_category.items()
                    for o in outcomes_of(paradigm, category, numbers)]
        rates = {row.group: row for row in aggregate(outcomes)}
        abilities = ["LF", "F", "IF", "R"]
        for name, _numbers, printed in rows:
            group = abilities[int(name.split(":")[1]) - 1] if name.startswith("TOTAL") \
                else name
            ours = rates[group].paper_rate
            checked += 1
            if ours is None or round(ours + 1e-9, 2) != printed:
                off.append(((number, name), printed, None if ours is None else round(ours, 4)))
    assert {cell for cell, _, _ in off} == set(TYPOS), off
    assert checked == 11 * 26  # 22 categories and 4 ability totals in each table
    # and each listed typo is one by the paper's own numbers, worked by hand
    rows = {(number, name): (numbers, printed) for number, table in tables.items()
            for name, numbers, printed in table}
    for (number, name) in TYPOS:
        (total, detected, undetected), printed = rows[(number, name)][0][:3], \
            rows[(number, name)][1]
        assert detected + undetected > total or round(undetected / total, 2) != printed


def test_the_printed_tables_not_the_authors_script_decide_one_sided_failures():
    """Issue 23: the authors' scripts/analyze_results.py counts undetected pairs as
    pairs − failed calls / 2 − detected, so a pair with one failed call is half
    undetected; the printed tables divide the undetected count by every pair. fbi's
    paper convention gives the printed number. Worked from Table 7's Calculations row."""
    (numbers,) = [numbers for name, numbers, _ in paper_tables()[7] if name == "calculations"]
    printed = {name: share for name, _, share in paper_tables()[7]}["calculations"]
    total, detected, undetected = numbers[:3]
    failed_pairs = total - detected - undetected
    assert (total, detected, undetected, failed_pairs, printed) == (149, 112, 34, 3, 0.23)
    (row,) = [r for r in aggregate(outcomes_of("single", "calculations", numbers))
              if r.group == "calculations"]
    assert round(row.paper_rate, 2) == printed == round(undetected / total, 2)
    # the script's arithmetic, each failed pair with one failed call (errors = 3 calls)
    script_undetected = total - 3 / 2 - detected
    assert script_undetected == 35.5 and round(script_undetected / total, 2) == 0.24 != printed
    # issue 38: --convention authors gives the script's number (one unreadable call each)
    one_failed = [dataclasses.replace(o, unreadable_calls=1) if o.outcome == "unparseable"
                  else o for o in outcomes_of("single", "calculations", numbers)]
    (row,) = [r for r in aggregate(one_failed) if r.group == "calculations"]
    assert row.authors_rate == pytest.approx(35.5 / 149)
    # a pair with both calls unreadable is neither detected nor undetected for the script
    both_failed = [dataclasses.replace(o, unreadable_calls=2) if o.outcome == "unparseable"
                   else o for o in outcomes_of("single", "calculations", numbers)]
    (row,) = [r for r in aggregate(both_failed) if r.group == "calculations"]
    assert row.authors_rate == pytest.approx((149 - 3 - 112) / 149)
