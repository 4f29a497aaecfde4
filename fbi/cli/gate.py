"""`fbi gate`: a regression gate for CI (fbi.gate)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._bundles import calls_bundle
from fbi.cli._console import console
from fbi.cli._run import (
    FiniteFloat,
    RichProgress,
    exit_for,
    fitting_tables,
    force_option,
    print_totals,
)


@click.command()
@click.argument("suite")
@click.option("--judge", required=True, help="The judge to gate (a model string).")
@click.option("--baseline", required=True,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The judge run the candidate must not be worse than (a folder `fbi "
                   "evaluate` wrote on SUITE).")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where the candidate's run (OUTPUT/run) and gate.json go; the same "
                   "command resumes it.")
@click.option("--max-regression", type=FiniteFloat(min=0, max=1, max_open=True),
              default=0.05, show_default=True,
              help="A miss rate must rise by more than this to fail the gate (0.05: five "
                   "points).")
@click.option("--alpha", type=FiniteFloat(min=0, max=1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Family-wise error level of the paired tests (Holm over every "
                   "category and strategy).")
@click.option("--max-left-out", type=FiniteFloat(min=0, max=1, max_open=True),
              default=0.10, show_default=True,
              help="The gate fails when the candidate gives no verdict (a failed call, an "
                   "unreadable reply) on more than this share of the suite under a "
                   "strategy: silence is no evidence of no regression.")
@click.option("--human", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Human labels of the suite (as `fbi trust --human`): the gate also "
                   "fails when a strategy whose baseline was certified is not any more.")
@click.option("--api-base", "api_bases", multiple=True,
              help="Base URL of the judge's server (repeat it for a pool).")
@calls_bundle
@force_option
def gate(suite, judge, baseline, output, max_regression, alpha, max_left_out, human,
         api_bases, calls, force) -> None:
    """Judge SUITE with JUDGE as the baseline run was judged (its strategies, selection
    and protocol) and compare: exit 1 when a miss rate rose by more than
    --max-regression with a significant one-sided exact paired test (Holm), 0 when not,
    2 on bad input. Writes OUTPUT/gate.json. Never answered from the response cache: a
    cached reply would hide the very change the gate looks for."""
    from fbi.gate import GateSettings, gate

    checks = GateSettings(max_regression, alpha, max_left_out)
    settings = calls.settings(judge, api_bases)
    totals, result = gate(suite, baseline, output, settings, checks=checks,
                          client=calls.client(settings),
                          progress=RichProgress("judging the suite"), force=force,
                          human=human)
    print_totals(totals)
    exit_for(totals, "run the same gate command again")
    if result is None:  # (exit_for has said why and exited; a guard, never a pass)
        sys.exit(1)
    _print(result)
    console.print(f"wrote {output / 'gate.json'}")
    if not result.passed:
        sys.exit(1)


def _print(result) -> None:
    header = ["strategy", "group", "paired", "before", "now", "b", "c", "Holm p", ""]
    rows = [[escape(row.strategy), escape(row.group), str(row.paired),
             "–" if row.baseline_rate is None else f"{100 * row.baseline_rate:.1f}%",
             "–" if row.candidate_rate is None else f"{100 * row.candidate_rate:.1f}%",
             str(row.newly_missed), str(row.newly_caught), f"{row.p_holm:.3g}",
             "WORSE" if row.regressed else ""] for row in result.rows]
    # (a name is never broken mid-word; columns that do not fit go to a second table)
    for table in fitting_tables("Miss rates before (the baseline) and now (the candidate), "
                                "on the same instances", header, rows, console.width):
        console.print(table)
    console.print("b: missed now, caught before; c: the reverse; WORSE: a significant rise "
                  f"of more than {100 * result.max_regression:g} points")
    for evidence in result.evidence:
        if evidence.candidate_left_out or evidence.baseline_left_out:
            mark = "" if evidence.enough else " [bold red]too little evidence[/]"
            console.print(f"under {escape(evidence.strategy)}: the candidate left out "
                          f"{evidence.candidate_left_out} of {evidence.instances} instances, "
                          f"the baseline {evidence.baseline_left_out}{mark}")
    for held in result.certificates:
        mark = "held" if held.held else "[bold red]lost[/]"
        console.print(f"certificate under {escape(held.strategy)}: {mark} — "
                      f"{escape(held.sentence)}")
    colour = "green" if result.passed else "bold red"
    console.print(f"[{colour}]{escape(result.sentence)}[/]")
