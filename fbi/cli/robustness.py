"""`fbi robustness run|score`: QA robustness of any model, the judge included."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from fbi.cli._bundles import batch_bundle, bundle, cache_bundle, calls_bundle
from fbi.cli._console import console, print_command
from fbi.cli._run import (
    MAX_SAMPLES,
    SEED,
    FiniteFloat,
    api_base_option,
    dry_run_option,
    force_option,
    replace_option,
)
from fbi.providers import LOCAL_JUDGE

if TYPE_CHECKING:
    from fbi.metrics import RobustnessResults


@click.group()
def robustness() -> None:
    """QA robustness suites: rephrasings, natural noise, answer-order shuffles, MAQA."""


@dataclass(frozen=True)
class SuiteOptions:
    """How each suite asks and scores: variants per question, and what counts as right."""

    rephrasings: int = 5
    shuffles: int = 4
    samples: int = 5
    correctness: str = "f1"
    threshold: float | None = None
    possible_answers: int | None = None


suite_bundle = bundle("asking", SuiteOptions, *(
    click.option("--rephrasings", type=click.IntRange(min=1, max=MAX_SAMPLES), default=5,
                 show_default=True),
    click.option("--shuffles", type=click.IntRange(min=1, max=MAX_SAMPLES), default=4,
                 show_default=True),
    click.option("--samples", type=click.IntRange(min=2, max=MAX_SAMPLES), default=5,
                 show_default=True,
                 help="MAQA samples per question."),
    click.option("--correctness", type=click.Choice(["match", "f1", "embedding"]), default="f1",
                 show_default=True, help="How free-text answers are judged right."),
    click.option("--threshold", type=FiniteFloat(min=0, max=1),
                 help="For f1 (default 0.5) or embedding (0.75)."),
    click.option("--possible-answers", type=click.IntRange(min=2, max=10_000),
                 help="K for certainty and M2 (default: the distinct answers observed)."),
))


@robustness.command("run")
@click.option("--model", default=LOCAL_JUDGE, show_default=True)
@click.option("--dataset", "dataset_spec", default="sample", show_default=True,
              help="QA items: sample (built in), a .jsonl/.csv/.parquet file or a folder.")
@click.option("--suite", "suites", multiple=True,
              type=click.Choice(["multiqa", "noise", "shuffle", "maqa", "all"]),
              help="Repeatable; default: all.")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path))
@force_option
@suite_bundle
@click.option("--seed", type=SEED, default=0, show_default=True)
@api_base_option
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N questions.")
@calls_bundle
@dry_run_option
@cache_bundle
@batch_bundle
def run(model, dataset_spec, suites, output, force, asking, seed, api_base, limit, calls,
        dry_run, cache, batch) -> None:
    """Answer every question variant with MODEL and compute the robustness metrics.

    Exit code 1 when calls failed or a suite gave no metric (named in the summary).
    """
    from fbi.cli._run import RichProgress, exit_for, print_dry_run, print_totals
    from fbi.robustness import SUITES, RobustnessConfig, RobustnessRun, load_qa_items

    items, rows = load_qa_items(dataset_spec)
    chosen = SUITES if not suites or "all" in suites else tuple(suites)
    settings = calls.settings(model, api_base)
    config = RobustnessConfig(model=settings, suites=chosen, seed=seed, limit=limit,
                              **dataclasses.asdict(asking))
    robustness_run = RobustnessRun(items, config, output, dataset_spec, force)
    console.print(f"Read {rows} rows from {dataset_spec}: {len(items)} questions"
                  + (f", the first {len(robustness_run.items)} asked" if limit else "")
                  + f"; suites {', '.join(chosen)}")
    client = calls.client(settings, cache)
    if dry_run:
        print_dry_run(robustness_run.dry_run(client), model, str(output))
        return
    if asking.correctness == "embedding":
        from fbi.robustness import load_embedder

        load_embedder()  # fail now, with what to install, rather than mid-run
    totals = robustness_run.run(client, RichProgress("answering"),
                                batch.options(calls.concurrency))
    print_totals(totals, "calls")
    metrics = output / "robustness.json"
    from fbi.report import load_robustness
    from fbi.runs import stopped  # (a finished run's metrics only)

    finished = not stopped(totals)
    summary = load_robustness(output) if metrics.exists() and finished else None
    if summary is not None:
        print_summary(summary)
        print_command(f"Answers in {output / 'answers.jsonl'}; metrics in {metrics}; "
                      "the report renders them:", f"fbi report {output}")
    exit_for(totals)
    if summary is not None and summary.failed_suites:
        sys.exit(1)


@robustness.command("score")
@click.argument("answers", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--correctness", type=click.Choice(["match", "f1", "embedding"]), default="f1",
              show_default=True, help="For rows without a 'correct' value.")
@click.option("--possible-answers", type=click.IntRange(min=2, max=10_000),
              help="K for certainty and M2 (default: the distinct answers observed).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the metrics here as JSON.")
@replace_option
def score(answers, correctness, possible_answers, output, replace) -> None:
    """Compute every metric from an existing answers table; no model is called."""
    from fbi.outputs import claim_file, write_atomically
    from fbi.robustness import score_answers

    if output is not None:
        claim_file(output, replace)

    summary = score_answers(str(answers), correctness, possible_answers=possible_answers)
    print_summary(summary)
    if output:
        write_atomically(output, summary.model_dump_json(indent=2) + "\n")
        console.print(f"wrote {output}")
    if summary.failed_suites:
        sys.exit(1)  # as `robustness run` does on the same answers


def print_summary(summary: RobustnessResults) -> None:
    """The report's robustness tables, for this one run (or answers table)."""
    from fbi.cli._run import print_blocks
    from fbi.report import robustness_blocks

    print_blocks(robustness_blocks(summary), draw=transposed)


def transposed(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """One run's tables within 80 columns: the model and dataset (the same on every row)
    go into the title; a single row is shown as metric | value lines, since thirteen
    metrics side by side would each be cut to '0.…'."""
    from rich import box

    if header[:2] == ["model", "dataset"] and rows and \
            len({(row[0], row[1]) for row in rows}) == 1:
        title = f"{title} — {rows[0][0]} · {rows[0][1]}"
        header, rows = header[2:], [row[2:] for row in rows]
    if len(rows) != 1:
        from fbi.cli._run import rate_table

        return rate_table(title, header, rows)
    table = Table(title=title, box=box.SIMPLE_HEAD, show_header=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("value", overflow="fold")
    for column, value in zip(header, rows[0], strict=True):
        table.add_row(column, value)
    return table
