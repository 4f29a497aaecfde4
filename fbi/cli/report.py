"""`fbi report` and `fbi explain-check`: reading runs back, no judging."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._bundles import batch_bundle, cache_bundle, calls_bundle
from fbi.cli._console import console, err_console, print_command
from fbi.cli._run import (
    api_base_option,
    dry_run_option,
    force_option,
    print_blocks,
)
from fbi.report import FORMATS


@click.command()
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--format", "formats", multiple=True, type=click.Choice(FORMATS),
              help="Repeatable; default: all of md, html, json, csv.")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write (default: the first run folder).")
@force_option
@click.option("--convention", type=click.Choice(["fbi", "paper", "authors"]), default="fbi",
              show_default=True,
              help="Which rate the tables show: fbi's (over readable verdicts, with "
                   "intervals), the paper's printed tables' (single and reference over all "
                   "instances) or the authors' script's (a single-answer pair with one "
                   "unreadable call counts as half undetected).")
@click.option("--strict", is_flag=True,
              help="Exit 1 when an instance lacks a judgment or a log line is unreadable.")
@click.option("--jury", type=click.Choice(["majority", "mean", "any"]),
              help="Add a virtual judge made of the runs given (same instances and "
                   "strategies): majority vote, mean score, or any member detecting.")
@click.option("--compare", "compare", multiple=True, metavar="A,B",
              help="Repeatable. Also test two sides beside every pair of judges, each "
                   "LABEL:STRATEGY (or STRATEGY when the runs have one label), e.g. "
                   "gpt-4o:vanilla,gpt-4o:rules.")
@click.option("--human", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Human labels of the instances (.jsonl, .csv, .tsv, .parquet: "
                   "instance_id, verdict a|b|tie and/or score, annotator): the judges' "
                   "agreement with people, and people's with each other.")
@click.option("--human-authors", is_flag=True,
              help="With MT-Bench's human judgments: count the paper's authors (judge "
                   "author_*) as people too; FastChat's compute_agreement counts only the "
                   "experts.")
@click.option("--target", type=float, default=0.8, show_default=True,
              help="With --human: the agreement with people each judge's certificate "
                   "checks (as `fbi trust --target`).")
@click.option("--delta", type=float, default=0.1, show_default=True,
              help="With --human: the certificate holds with probability ≥ 1 − delta.")
def report(run_dirs, formats, output, force, convention, strict, jury, compare,
           human, human_authors, target, delta) -> None:
    """Render the blind-spot report from stored judgments only (no model call).

    Several run folders (other judges or strategies) become one comparison report.
    """
    from fbi.report import load_hunt, report_warnings, terminal_report
    from fbi.report import report as write_report
    from fbi.trust import HumanSource, TrustSettings

    # checked before anything is read; every labelled instance calibrates (no test split)
    trust = TrustSettings(target=target, delta=delta, test_share=0.0)
    hunts = [d for d in run_dirs if (d / "hunt.json").is_file()]
    for folder in hunts:  # a hunt's findings: shown, and hunt.md written again
        show_hunt(folder)
    run_dirs = [d for d in run_dirs if d not in hunts]
    if not run_dirs:
        return
    summary, written = write_report(list(run_dirs), output, tuple(formats) or FORMATS,
                                    convention, jury, force, compare,
                                    human and HumanSource(human, human_authors), trust,
                                    tuple(load_hunt(folder) for folder in hunts))
    warnings = report_warnings(summary)
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    print_blocks(terminal_report(summary))
    for path in written:
        console.print(f"wrote {path}")
    if strict and warnings:
        err_console.print(f"[red]--strict: {len(warnings)} warnings above[/]")
        sys.exit(1)


def show_hunt(folder: Path, write: bool = True) -> None:
    """A hunt folder's findings on the terminal, and (``write``) its hunt.md rendered
    again."""
    from fbi.outputs import write_atomically
    from fbi.report import hunt_blocks, hunt_markdown, load_hunt

    result = load_hunt(folder)
    print_blocks(hunt_blocks(result))
    if write:
        write_atomically(folder / "hunt.md", hunt_markdown(result))
        console.print(f"wrote {folder / 'hunt.md'}")


@click.command("explain-check")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--checker", required=True, help="The litellm model that reads explanations.")
@api_base_option
@calls_bundle
@click.option("--limit", type=click.IntRange(min=1), help="Check at most N explanations.")
@dry_run_option
@cache_bundle
@batch_bundle
def explain_check(run_dir, checker, api_base, calls, limit, dry_run, cache, batch) -> None:
    """Ask a checker model whether the judge's explanation named an error it did not score.

    For each undetected instance whose judge gave an explanation (paper §5.3); results go
    to RUN_DIR/explanation_checks.jsonl and show in `fbi report`. Resumable and cached.
    """
    from fbi.cli._run import RichProgress, exit_for, print_dry_run, print_totals
    from fbi.judge import ExplanationChecks

    settings = calls.settings(checker, api_base)
    checks = ExplanationChecks(run_dir, settings, limit)
    client = calls.client(settings, cache)
    if dry_run:
        print_dry_run(checks.dry_run(client), checker, str(run_dir))
        return
    totals = checks.run(client, RichProgress("checking explanations"),
                        batch.options(calls.concurrency))
    print_totals(totals, "explanations checked")
    print_command("To see them:", f"fbi report {run_dir}")
    exit_for(totals)
